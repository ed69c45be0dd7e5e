// SPDX-License-Identifier: MIT OR Apache-2.0
//! Ladders chosen from traffic: [`fit`] and [`fit_counts`] (the ladder of
//! at most `max_buckets` buckets with the least padded cost of the observed
//! lengths), [`capped`] (the fewest buckets under a padding ratio) and
//! [`least_max_padding`], over the C API's `rlx_ladder_fit`,
//! `rlx_ladder_fit_counts`, `rlx_ladder_capped` and
//! `rlx_ladder_least_max_padding` (C++: `BucketLadder::fit`, `capped`,
//! `least_max_padding` in `rlx/bucket_ladder.h`, which state the
//! guarantees). Each returns a [`BucketLadder`] ready for
//! [`BucketedCompileCache::with_ladder`](crate::compile_cache::BucketedCompileCache::with_ladder).

use std::any::Any;
use std::ops::Range;
use std::os::raw::{c_uint, c_void};
use std::panic::{self, AssertUnwindSafe};
use std::ptr;

use crate::compile_cache::BucketLadder;
use crate::ffi::{self, rlx_ladder, rlx_status};
use crate::{check, Error};

/// What running one key on the graph compiled at extent `upper` costs; the
/// fitted ladder minimises its sum over the observed lengths.
pub enum Cost<'a> {
    /// One decode step: `cost(upper) = upper`.
    Decode,
    /// A prefill: `cost(upper) = upper^2`.
    Prefill,
    /// A caller's cost: finite, `>= 0` and non-decreasing in `upper`
    /// (checked at every distinct observed length, an error otherwise).
    /// Called once per distinct length, on the calling thread. A panic in it
    /// is caught at the C boundary and resumed once the call has returned.
    Custom(&'a mut dyn FnMut(u64) -> f64),
}

// ---------------------------------------------------------------------------
// The C declarations of this module's part of the C API,
// include/rlx/rlx_attn_mask_ladder_fit.h.

type RawCostFn = unsafe extern "C" fn(upper: u64, user_data: *mut c_void) -> f64;

const RLX_LADDER_COST_DECODE: c_uint = 0;
const RLX_LADDER_COST_PREFILL: c_uint = 1;
const RLX_LADDER_COST_CUSTOM: c_uint = 2;

/// `rlx_ladder_cost`.
#[repr(C)]
pub(crate) struct RawCost {
    pub(crate) model: c_uint,
    pub(crate) cost_fn: Option<RawCostFn>,
    pub(crate) user_data: *mut c_void,
}

extern "C" {
    fn rlx_ladder_fit(
        lengths: *const u64,
        n: usize,
        max_buckets: usize,
        cost: *const RawCost,
        out: *mut *mut rlx_ladder,
    ) -> rlx_status;
    fn rlx_ladder_fit_counts(
        lengths: *const u64,
        counts: *const u64,
        n: usize,
        max_buckets: usize,
        cost: *const RawCost,
        out: *mut *mut rlx_ladder,
    ) -> rlx_status;
    fn rlx_ladder_capped(max_key: u64, max_padding: f64, out: *mut *mut rlx_ladder) -> rlx_status;
    fn rlx_ladder_least_max_padding(
        max_key: u64,
        max_buckets: usize,
        max_padding: *mut f64,
    ) -> rlx_status;
}

// ---------------------------------------------------------------------------
// Custom costs through the C function pointer.

/// The closure and, once it has panicked, the panic to resume.
struct Callback<'a> {
    cost: &'a mut (dyn FnMut(u64) -> f64 + 'a),
    panic: Option<Box<dyn Any + Send>>,
}

// The inner unsafe block is what edition 2024 asks for; Rust 1.63 calls it
// unnecessary inside an unsafe fn.
#[allow(unused_unsafe)]
unsafe extern "C" fn call_custom(upper: u64, user_data: *mut c_void) -> f64 {
    // SAFETY: user_data is the &mut Callback that `with_raw_cost` passed,
    // alive and not otherwise borrowed for the whole C call.
    let callback = unsafe { &mut *(user_data as *mut Callback) };
    if callback.panic.is_some() {
        return f64::NAN;
    }
    match panic::catch_unwind(AssertUnwindSafe(|| (callback.cost)(upper))) {
        Ok(value) => value,
        Err(payload) => {
            // NaN makes the library reject the cost and return at once.
            callback.panic = Some(payload);
            f64::NAN
        }
    }
}

/// Runs `call` with the C form of `cost`; resumes a panic of a custom cost.
fn with_raw_cost<T>(cost: Cost<'_>, call: impl FnOnce(&RawCost) -> T) -> T {
    match cost {
        Cost::Decode | Cost::Prefill => {
            let raw = RawCost {
                model: if matches!(cost, Cost::Decode) {
                    RLX_LADDER_COST_DECODE
                } else {
                    RLX_LADDER_COST_PREFILL
                },
                cost_fn: None,
                user_data: ptr::null_mut(),
            };
            call(&raw)
        }
        Cost::Custom(f) => {
            let mut callback = Callback {
                cost: f,
                panic: None,
            };
            let raw = RawCost {
                model: RLX_LADDER_COST_CUSTOM,
                cost_fn: Some(call_custom),
                user_data: &mut callback as *mut Callback as *mut c_void,
            };
            let result = call(&raw);
            if let Some(payload) = callback.panic {
                panic::resume_unwind(payload);
            }
            result
        }
    }
}

/// Takes ownership of a ladder handle from a successful constructor and
/// turns it into a [`BucketLadder`].
fn into_ladder(status: rlx_status, raw: *mut rlx_ladder) -> Result<BucketLadder, Error> {
    check(status)?;
    assert!(
        !raw.is_null(),
        "rlx_ladder constructor returned RLX_OK and NULL"
    );
    let mut buckets: Vec<Range<u64>> = Vec::new();
    let mut n = 0usize;
    // SAFETY: raw is a live ladder until freed below; out pointers are
    // valid and indices below its size.
    let read = (|| {
        check(unsafe { ffi::rlx_ladder_size(raw, &mut n) })?;
        for i in 0..n {
            let (mut start, mut end) = (0u64, 0u64);
            check(unsafe { ffi::rlx_ladder_bucket(raw, i, &mut start, &mut end) })?;
            buckets.push(start..end);
        }
        Ok::<(), Error>(())
    })();
    // SAFETY: raw came from the constructor and is freed exactly once.
    unsafe { ffi::rlx_ladder_free(raw) };
    read?;
    BucketLadder::from_buckets(&buckets)
}

// ---------------------------------------------------------------------------
// The safe API.

/// The ladder of at most `max_buckets` buckets covering `1..=max(lengths)`
/// without gaps that minimises the sum over `lengths` of `cost(upper of the
/// bucket holding the length)`. Every extent is an observed length; among
/// the least-cost ladders it is one with the fewest buckets. Errors (the
/// message names the function and values): `max_buckets == 0`, no lengths,
/// a length of 0 or `u64::MAX`, a cost that is negative, not finite or
/// decreasing.
pub fn fit(lengths: &[u64], max_buckets: usize, cost: Cost<'_>) -> Result<BucketLadder, Error> {
    let mut raw: *mut rlx_ladder = ptr::null_mut();
    let status = with_raw_cost(cost, |c| {
        // SAFETY: lengths is valid for lengths.len() reads, c and &mut raw
        // are valid pointers for the call.
        unsafe { rlx_ladder_fit(lengths.as_ptr(), lengths.len(), max_buckets, c, &mut raw) }
    });
    into_ladder(status, raw)
}

/// The same from `(length, count)` pairs in any order (a length may repeat:
/// its counts add up). Also an error: a count of 0, counts summing past
/// `u64::MAX`.
pub fn fit_counts(
    counts: &[(u64, u64)],
    max_buckets: usize,
    cost: Cost<'_>,
) -> Result<BucketLadder, Error> {
    let lengths: Vec<u64> = counts.iter().map(|&(length, _)| length).collect();
    let times: Vec<u64> = counts.iter().map(|&(_, count)| count).collect();
    let mut raw: *mut rlx_ladder = ptr::null_mut();
    let status = with_raw_cost(cost, |c| {
        // SAFETY: both arrays hold counts.len() values; c and &mut raw are
        // valid pointers for the call.
        unsafe {
            rlx_ladder_fit_counts(
                lengths.as_ptr(),
                times.as_ptr(),
                counts.len(),
                max_buckets,
                c,
                &mut raw,
            )
        }
    });
    into_ladder(status, raw)
}

/// The most buckets [`capped`] builds (C `RLX_MAX_CAPPED_BUCKETS`, C++
/// `BucketLadder::kMaxCappedBuckets`).
pub const MAX_CAPPED_BUCKETS: usize = 1 << 20;

/// The ladder with the fewest buckets covering `1..=max_key` without gaps
/// in which every key `k` of a bucket with extent `u` has
/// `(u - k) / k <= max_padding`, `max_padding` read as the decimal it
/// prints as (`0.3` is exactly 3/10); exact integer extents. Errors:
/// `max_key` 0 or `u64::MAX`, a NaN or negative `max_padding`, more than
/// [`MAX_CAPPED_BUCKETS`] buckets.
pub fn capped(max_key: u64, max_padding: f64) -> Result<BucketLadder, Error> {
    let mut raw: *mut rlx_ladder = ptr::null_mut();
    // SAFETY: &mut raw is a valid out pointer.
    let status = unsafe { rlx_ladder_capped(max_key, max_padding, &mut raw) };
    into_ladder(status, raw)
}

/// The least `max_padding` for which [`capped`]`(max_key, max_padding)` has
/// at most `max_buckets` buckets. Errors: `max_key` 0 or `u64::MAX`,
/// `max_buckets == 0`.
pub fn least_max_padding(max_key: u64, max_buckets: usize) -> Result<f64, Error> {
    let mut padding = 0.0f64;
    // SAFETY: &mut padding is a valid out pointer.
    check(unsafe { rlx_ladder_least_max_padding(max_key, max_buckets, &mut padding) })?;
    Ok(padding)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    fn extents(ladder: &BucketLadder) -> Vec<u64> {
        ladder.buckets().iter().map(|b| b.end - 1).collect()
    }

    /// sum over lengths of cost(extent of the bucket holding the length).
    fn padded_cost(ladder: &BucketLadder, lengths: &[u64], cost: impl Fn(u64) -> f64) -> f64 {
        lengths
            .iter()
            .map(|&k| {
                let i = ladder.bucket_for(k).expect("every length has a bucket");
                cost(ladder.buckets()[i].end - 1)
            })
            .sum()
    }

    /// Every ladder of at most `k` buckets over 1..=max: the least cost.
    fn brute_force(lengths: &[u64], k: usize, cost: impl Fn(u64) -> f64 + Copy) -> f64 {
        let max = *lengths.iter().max().unwrap();
        let mut best = f64::INFINITY;
        for mask in 0u64..(1 << (max - 1)) {
            if mask.count_ones() as usize + 1 > k {
                continue;
            }
            let mut buckets = Vec::new();
            let mut start = 1;
            for e in 1..=max {
                if e == max || mask >> (e - 1) & 1 == 1 {
                    buckets.push(start..e + 1);
                    start = e + 1;
                }
            }
            let ladder = BucketLadder::from_buckets(&buckets).unwrap();
            best = best.min(padded_cost(&ladder, lengths, cost));
        }
        best
    }

    #[test]
    fn fit_equals_brute_force() {
        // A small deterministic generator (no registry crates).
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..40 {
            let max = 1 + next() % 12;
            let lengths: Vec<u64> = (0..1 + next() % 8).map(|_| 1 + next() % max).collect();
            for k in 1..=4 {
                let decode = fit(&lengths, k, Cost::Decode).unwrap();
                assert!(decode.len() <= k);
                assert_eq!(
                    padded_cost(&decode, &lengths, |u| u as f64),
                    brute_force(&lengths, k, |u| u as f64),
                    "decode {lengths:?} k={k}"
                );
                let prefill = fit(&lengths, k, Cost::Prefill).unwrap();
                let square = |u: u64| (u * u) as f64;
                assert_eq!(
                    padded_cost(&prefill, &lengths, square),
                    brute_force(&lengths, k, square),
                    "prefill {lengths:?} k={k}"
                );
                let tiles = |u: u64| ((u + 3) / 4 * 4) as f64;
                let mut calls = 0;
                let mut tiled = |u: u64| {
                    calls += 1;
                    tiles(u)
                };
                let custom = fit(&lengths, k, Cost::Custom(&mut tiled)).unwrap();
                assert!(calls >= 1);
                assert_eq!(
                    padded_cost(&custom, &lengths, tiles),
                    brute_force(&lengths, k, tiles),
                    "tiles {lengths:?} k={k}"
                );
            }
        }
    }

    #[test]
    fn counts_and_lengths_agree() {
        let pairs = [(100, 1), (3, 50), (40, 2), (3, 25), (100, 4), (12, 9)];
        let mut lengths = Vec::new();
        for &(length, count) in &pairs {
            lengths.extend(std::iter::repeat(length).take(count as usize));
        }
        for k in 1..=5 {
            assert_eq!(
                extents(&fit_counts(&pairs, k, Cost::Prefill).unwrap()),
                extents(&fit(&lengths, k, Cost::Prefill).unwrap())
            );
        }
        // 3 and 12 at 12, 40 and 100 at 100: 84 * 12 + 7 * 100 = 1708.
        assert_eq!(
            extents(&fit_counts(&pairs, 2, Cost::Decode).unwrap()),
            [12, 100]
        );
    }

    #[test]
    fn fit_errors_name_the_function_and_values() {
        let e = fit(&[4, 8], 0, Cost::Decode).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().starts_with("rlx_ladder_fit: "), "{e}");
        assert!(e.message().contains("max_buckets=0"), "{e}");
        let e = fit(&[], 3, Cost::Decode).unwrap_err();
        assert!(e.message().contains("no lengths"), "{e}");
        let e = fit(&[4, 0], 3, Cost::Decode).unwrap_err();
        assert!(e.message().contains("lengths[1] is 0"), "{e}");
        let e = fit_counts(&[(4, 1), (9, 0)], 3, Cost::Decode).unwrap_err();
        assert!(e.message().starts_with("rlx_ladder_fit_counts: "), "{e}");
        assert!(
            e.message().contains("counts[1] (length 9) has count 0"),
            "{e}"
        );
        let mut decreasing = |u: u64| 100.0 - u as f64;
        let e = fit(&[4, 8], 2, Cost::Custom(&mut decreasing)).unwrap_err();
        assert!(e.message().contains("cost(8) = 92 < cost(4) = 96"), "{e}");
    }

    #[test]
    fn a_panicking_cost_resumes_after_the_call() {
        let result = panic::catch_unwind(|| {
            let mut boom = |_: u64| -> f64 { panic!("cost exploded") };
            let _ = fit(&[4, 8], 2, Cost::Custom(&mut boom));
        });
        let payload = result.unwrap_err();
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"cost exploded"));
    }

    #[test]
    fn capped_is_exact_and_least_max_padding_fits() {
        // 0.3 is 3/10: the bucket starting at 20 reaches 20 + 6 = 26.
        assert_eq!(
            extents(&capped(26, 0.3).unwrap()),
            [1, 2, 3, 5, 7, 10, 14, 19, 26]
        );
        for max_key in 1..40u64 {
            for n in 1..6usize {
                let p = least_max_padding(max_key, n).unwrap();
                assert!(capped(max_key, p).unwrap().len() <= n);
                if p > 0.0 {
                    // The next smaller double needs more buckets.
                    let below = f64::from_bits(p.to_bits() - 1);
                    assert!(capped(max_key, below).unwrap().len() > n);
                }
                // No key is padded by more than p.
                for b in capped(max_key, p).unwrap().buckets() {
                    assert!(((b.end - 1 - b.start) as f64) <= b.start as f64 * p + 1e-9);
                }
            }
        }
        // With no padding every key is a bucket: the limit holds exactly.
        let most = MAX_CAPPED_BUCKETS as u64;
        assert_eq!(capped(most, 0.0).unwrap().len(), MAX_CAPPED_BUCKETS);
        let e = capped(most + 1, 0.0).unwrap_err();
        assert!(e.message().contains(&MAX_CAPPED_BUCKETS.to_string()), "{e}");
        let e = capped(0, 0.5).unwrap_err();
        assert!(e.message().starts_with("rlx_ladder_capped: "), "{e}");
        assert!(e.message().contains("max_key=0"), "{e}");
        let e = capped(10, f64::NAN).unwrap_err();
        assert!(e.message().contains("max_padding=nan"), "{e}");
        let e = least_max_padding(10, 0).unwrap_err();
        assert!(
            e.message().starts_with("rlx_ladder_least_max_padding: "),
            "{e}"
        );
    }
}
