// SPDX-License-Identifier: MIT OR Apache-2.0
//! Bucket ladders and the seed's `BucketedCompileCache`: a graph executor
//! compiles one plan per bucket, at the bucket's upper extent, and pads every
//! key of the bucket up to it.
//!
//! A bucket is a half-open range of keys `start..end` (a key is the length a
//! graph is run for, >= 1); its extent ("upper") is `end - 1`. Routing is the
//! library's (`rlx_ladder_bucket_for`, O(log n)).

use std::ops::Range;
use std::ptr::NonNull;

use crate::{check, ffi, Device, Error};

/// An immutable, ordered list of non-overlapping buckets (gaps allowed; a
/// key in a gap routes nowhere).
pub struct BucketLadder {
    handle: NonNull<ffi::rlx_ladder>,
    // A copy of the buckets, so iterating them needs no FFI call.
    buckets: Vec<Range<u64>>,
}

// SAFETY: the C ladder is immutable after creation and the C API allows
// concurrent reads from any thread.
unsafe impl Send for BucketLadder {}
unsafe impl Sync for BucketLadder {}

impl Drop for BucketLadder {
    fn drop(&mut self) {
        // SAFETY: the handle came from an rlx_ladder_* constructor and is
        // freed exactly once.
        unsafe { ffi::rlx_ladder_free(self.handle.as_ptr()) }
    }
}

impl std::fmt::Debug for BucketLadder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("BucketLadder").field(&self.buckets).finish()
    }
}

impl BucketLadder {
    /// Extents `next_pow2(min)`, doubling until `>= max`; the first bucket
    /// starts at 1, each next one at the previous extent + 1. `(8, 256)`
    /// gives `1..9, 9..17, 17..33, 33..65, 65..129, 129..257`. Requires
    /// `1 <= min <= max`.
    ///
    /// ```
    /// use rlx_attn_mask::compile_cache::BucketLadder;
    ///
    /// let ladder = BucketLadder::power_of_two(8, 64)?;
    /// assert_eq!(ladder.buckets(), &[1..9, 9..17, 17..33, 33..65]);
    /// // Key 20 runs in the bucket compiled for extent 32.
    /// let index = ladder.bucket_for(20).unwrap();
    /// assert_eq!(ladder.buckets()[index].end - 1, 32);
    /// assert_eq!(ladder.bucket_for(65), None);
    /// assert!(BucketLadder::power_of_two(0, 8).is_err());
    /// # Ok::<(), rlx_attn_mask::Error>(())
    /// ```
    pub fn power_of_two(min: u64, max: u64) -> Result<Self, Error> {
        Self::from_constructor(|out| unsafe { ffi::rlx_ladder_power_of_two(min, max, out) })
    }

    /// `count` geometric steps from 1 to `max`: extent i is the smallest `e`
    /// with `e^count >= max^i` (exact), repeats dropped. `(512, 3)` gives
    /// extents 8, 64, 512. Requires `max >= 1`, `count >= 1`.
    ///
    /// ```
    /// use rlx_attn_mask::compile_cache::BucketLadder;
    ///
    /// let ladder = BucketLadder::geometric(512, 3)?;
    /// assert_eq!(ladder.buckets(), &[1..9, 9..65, 65..513]);
    /// # Ok::<(), rlx_attn_mask::Error>(())
    /// ```
    pub fn geometric(max: u64, count: u64) -> Result<Self, Error> {
        Self::from_constructor(|out| unsafe { ffi::rlx_ladder_geometric(max, count, out) })
    }

    /// A ladder of the given buckets, which must be non-empty, sorted and
    /// non-overlapping. Gaps are allowed: a key in one routes nowhere.
    ///
    /// ```
    /// use rlx_attn_mask::compile_cache::BucketLadder;
    ///
    /// let ladder = BucketLadder::from_buckets(&[1..128, 256..1024])?;
    /// assert_eq!(ladder.bucket_for(200), None);
    /// assert_eq!(ladder.bucket_for(300), Some(1));
    /// let e = BucketLadder::from_buckets(&[1..10, 5..20]).unwrap_err();
    /// println!("{e}"); // names the overlapping buckets
    /// # Ok::<(), rlx_attn_mask::Error>(())
    /// ```
    pub fn from_buckets(buckets: &[Range<u64>]) -> Result<Self, Error> {
        let starts: Vec<u64> = buckets.iter().map(|b| b.start).collect();
        let ends: Vec<u64> = buckets.iter().map(|b| b.end).collect();
        Self::from_constructor(|out| unsafe {
            ffi::rlx_ladder_custom(starts.as_ptr(), ends.as_ptr(), buckets.len(), out)
        })
    }

    fn from_constructor(
        construct: impl FnOnce(*mut *mut ffi::rlx_ladder) -> ffi::rlx_status,
    ) -> Result<Self, Error> {
        let mut raw: *mut ffi::rlx_ladder = std::ptr::null_mut();
        check(construct(&mut raw))?;
        let handle = NonNull::new(raw).expect("rlx_ladder constructor returned RLX_OK and NULL");
        // Owned from here on: an error below frees it when `ladder` drops.
        let mut ladder = BucketLadder {
            handle,
            buckets: Vec::new(),
        };
        let mut n = 0usize;
        // SAFETY: the handle is a live ladder and the out pointers are valid;
        // indices are below its size.
        check(unsafe { ffi::rlx_ladder_size(ladder.handle.as_ptr(), &mut n) })?;
        for i in 0..n {
            let (mut start, mut end) = (0u64, 0u64);
            check(unsafe {
                ffi::rlx_ladder_bucket(ladder.handle.as_ptr(), i, &mut start, &mut end)
            })?;
            ladder.buckets.push(start..end);
        }
        Ok(ladder)
    }

    /// The buckets, in order.
    pub fn buckets(&self) -> &[Range<u64>] {
        &self.buckets
    }

    /// The number of buckets (at least 1).
    pub fn len(&self) -> usize {
        self.buckets.len()
    }

    /// Always false: a ladder has at least one bucket.
    pub fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }

    /// The index of the bucket holding `key`, or `None` when no bucket does.
    pub fn bucket_for(&self, key: u64) -> Option<usize> {
        let mut found = false;
        let mut index = 0usize;
        // SAFETY: a live ladder and valid out pointers, the only ways the
        // call can fail.
        let status = unsafe {
            ffi::rlx_ladder_bucket_for(self.handle.as_ptr(), key, &mut found, &mut index)
        };
        if let Err(e) = check(status) {
            unreachable!("rlx_ladder_bucket_for failed for valid arguments: {e}");
        }
        found.then_some(index)
    }
}

/// One lazily compiled plan of type `T` per bucket of a ladder. The
/// constructors make a cache of `()` plans (routing only, as the seed's tests
/// use it); [`BucketedCompileCache::holding`] switches it to a plan type.
/// Not thread-safe for mutation; share it behind a lock.
///
/// ```
/// use rlx_attn_mask::compile_cache::BucketedCompileCache;
/// use rlx_attn_mask::Device;
///
/// // One "plan" (here a description string) per bucket, compiled on first use.
/// let mut cache = BucketedCompileCache::power_of_two_ladder(Device::Cpu, 8, 256)
///     .holding::<String>();
/// let (upper, plan) = cache
///     .get_or_compile(100, |upper| format!("graph for {upper} keys"))
///     .unwrap();
/// assert_eq!((upper, plan.as_str()), (128, "graph for 128 keys"));
/// // Every key of the bucket 65..129 reuses that plan.
/// cache.get_or_compile(70, |_| unreachable!()).unwrap();
/// assert_eq!(cache.compiled_count(), 1);
/// assert!(cache.get_or_compile(1000, |_| unreachable!()).is_none());
/// ```
#[derive(Debug)]
pub struct BucketedCompileCache<T = ()> {
    device: Device,
    ladder: BucketLadder,
    plans: Vec<Option<T>>,
}

impl BucketedCompileCache {
    /// The seed's power-of-two ladder (see [`BucketLadder::power_of_two`]).
    ///
    /// # Panics
    /// On invalid arguments (`min == 0`, `max < min`, 64-bit overflow); see
    /// [`Self::try_power_of_two_ladder`].
    pub fn power_of_two_ladder(device: Device, min: u64, max: u64) -> Self {
        Self::try_power_of_two_ladder(device, min, max).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The seed's geometric ladder (see [`BucketLadder::geometric`]).
    ///
    /// # Panics
    /// On invalid arguments (`max == 0`, `count == 0`).
    pub fn geometric_ladder(device: Device, max: u64, count: u64) -> Self {
        Self::try_geometric_ladder(device, max, count).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Self::power_of_two_ladder`] returning the library's error instead
    /// of panicking.
    pub fn try_power_of_two_ladder(device: Device, min: u64, max: u64) -> Result<Self, Error> {
        Ok(Self::with_ladder(
            device,
            BucketLadder::power_of_two(min, max)?,
        ))
    }

    /// [`Self::geometric_ladder`] returning the library's error instead of
    /// panicking.
    pub fn try_geometric_ladder(device: Device, max: u64, count: u64) -> Result<Self, Error> {
        Ok(Self::with_ladder(
            device,
            BucketLadder::geometric(max, count)?,
        ))
    }
}

impl<T> BucketedCompileCache<T> {
    /// An empty cache over `ladder`.
    pub fn with_ladder(device: Device, ladder: BucketLadder) -> Self {
        let plans = ladder.buckets().iter().map(|_| None).collect();
        BucketedCompileCache {
            device,
            ladder,
            plans,
        }
    }

    /// The same ladder, holding plans of type `U`; every compiled plan is
    /// dropped.
    pub fn holding<U>(self) -> BucketedCompileCache<U> {
        BucketedCompileCache::with_ladder(self.device, self.ladder)
    }

    /// The device the plans are compiled for.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The ladder that routes keys to buckets.
    pub fn ladder(&self) -> &BucketLadder {
        &self.ladder
    }

    /// The buckets as key ranges, in order; a bucket's extent is `end - 1`.
    pub fn buckets(&self) -> impl ExactSizeIterator<Item = Range<u64>> + '_ {
        self.ladder.buckets().iter().cloned()
    }

    /// The index of the bucket `key` routes to, or `None`.
    pub fn bucket_for(&self, key: u64) -> Option<usize> {
        self.ladder.bucket_for(key)
    }

    /// Routes `key`, compiles its bucket's plan with `compile(upper)` on
    /// first use, and returns `(upper, plan)`; `None` when `key` routes to no
    /// bucket (nothing is compiled then).
    pub fn get_or_compile(
        &mut self,
        key: u64,
        compile: impl FnOnce(u64) -> T,
    ) -> Option<(u64, &mut T)> {
        let index = self.bucket_for(key)?;
        let upper = self.ladder.buckets()[index].end - 1;
        let plan = self.plans[index].get_or_insert_with(|| compile(upper));
        Some((upper, plan))
    }

    /// Whether bucket `index` holds a compiled plan.
    pub fn is_compiled(&self, index: usize) -> bool {
        matches!(self.plans.get(index), Some(Some(_)))
    }

    /// How many buckets hold a compiled plan.
    pub fn compiled_count(&self) -> usize {
        self.plans.iter().filter(|p| p.is_some()).count()
    }

    /// Drops every plan but bucket `index`'s (memory pressure: keep the
    /// bucket in use). An error, dropping nothing, if `index` is not a
    /// bucket of the ladder (as C++ `BucketedCache::retain_only`).
    pub fn retain_only(&mut self, index: usize) -> Result<(), Error> {
        if index >= self.plans.len() {
            return Err(Error::invalid(format!(
                "BucketedCompileCache::retain_only: index {index} is not below the bucket count {}",
                self.plans.len()
            )));
        }
        for (i, plan) in self.plans.iter_mut().enumerate() {
            if i != index {
                *plan = None;
            }
        }
        Ok(())
    }

    /// Drops every plan.
    pub fn clear(&mut self) {
        self.plans.iter_mut().for_each(|p| *p = None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn power_of_two_ladders_match_the_seed() {
        let c = BucketedCompileCache::power_of_two_ladder(Device::Cpu, 8, 256);
        let b: Vec<_> = c.buckets().collect();
        assert_eq!(b, vec![1..9, 9..17, 17..33, 33..65, 65..129, 129..257]);
        let c = BucketedCompileCache::power_of_two_ladder(Device::Cpu, 10, 64);
        let ext: Vec<_> = c.buckets().map(|r| r.end - 1).collect();
        assert_eq!(ext, vec![16, 32, 64]);
    }

    #[test]
    fn geometric_ladders_are_exact() {
        let c = BucketedCompileCache::geometric_ladder(Device::Cpu, 4096, 5);
        let ext: Vec<_> = c.buckets().map(|r| r.end - 1).collect();
        assert_eq!(ext, vec![6, 28, 148, 777, 4096]);
    }

    #[test]
    fn bad_ladders_are_errors_naming_the_values() {
        let e = BucketedCompileCache::try_power_of_two_ladder(Device::Cpu, 0, 8).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().starts_with("rlx_ladder_power_of_two: "), "{e}");
        assert!(e.message().contains("min=0"), "{e}");
        let e = BucketedCompileCache::try_geometric_ladder(Device::Cpu, 512, 0).unwrap_err();
        assert!(e.message().contains("count=0"), "{e}");
        let e = BucketLadder::from_buckets(&[1..5, 4..9]).unwrap_err();
        assert!(e.message().contains("overlaps"), "{e}");
        assert!(BucketLadder::from_buckets(&[]).is_err());
    }

    #[test]
    #[should_panic(expected = "max must be >= min")]
    fn the_seed_signature_panics_on_a_bad_ladder() {
        BucketedCompileCache::power_of_two_ladder(Device::Cpu, 9, 8);
    }

    #[test]
    fn gaps_route_nowhere() {
        let ladder = BucketLadder::from_buckets(&[1..5, 20..30]).unwrap();
        assert_eq!(ladder.bucket_for(4), Some(0));
        assert_eq!(ladder.bucket_for(5), None);
        assert_eq!(ladder.bucket_for(0), None);
        assert_eq!(ladder.bucket_for(29), Some(1));
        assert_eq!(ladder.bucket_for(u64::MAX), None);
    }

    #[test]
    fn plans_are_compiled_once_per_bucket() {
        let mut cache = BucketedCompileCache::power_of_two_ladder(Device::Cpu, 8, 64).holding();
        let mut compiled = Vec::new();
        for key in [1u64, 3, 8, 9, 40, 64, 2] {
            let (upper, plan) = cache
                .get_or_compile(key, |upper| {
                    compiled.push(upper);
                    format!("plan@{upper}")
                })
                .unwrap();
            assert_eq!(*plan, format!("plan@{upper}"));
        }
        assert_eq!(compiled, vec![8, 16, 64]);
        assert_eq!(cache.compiled_count(), 3);
        assert!(cache.get_or_compile(65, |_| unreachable!()).is_none());
        let e = cache.retain_only(4).unwrap_err();
        assert!(e.message().contains("retain_only: index 4"), "{e}");
        assert_eq!(cache.compiled_count(), 3, "nothing dropped");
        cache.retain_only(0).unwrap();
        assert_eq!(cache.compiled_count(), 1);
        assert!(cache.is_compiled(0) && !cache.is_compiled(1));
        cache.clear();
        assert_eq!(cache.compiled_count(), 0);
        assert_eq!(cache.device(), Device::Cpu);
    }
}
