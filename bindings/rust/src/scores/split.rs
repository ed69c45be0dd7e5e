// SPDX-License-Identifier: MIT OR Apache-2.0
//! Split rows finished in place (rlx/softmax_split.h): each part of a
//! row's keys runs [`masked_softmax_part`], then, once every part's stats
//! are in, [`finish_softmax_part`]; [`key_parts`] hands the parts to
//! threads.

use std::ops::Range;

use super::layout::{row_range, view_mut};
use super::mask::extent_of;
use super::{KeptKeys, Layout, MaskLike, ScoreElement, Shape, SoftmaxOptions};
use crate::{check, ffi, Error};

/// One part's statistics for one row of a split row (`rlx_softmax_part_stats`),
/// written by [`masked_softmax_part`]: the part's stored values `v_k` relate
/// to the row's transformed kept scores `z_k` by
/// `exp(z_k) = v_k * exp(log_scale)`, and `sum` is the sum of its `v_k`. A
/// part with no kept key has `log_scale = -inf`, `sum = 0`; a kept NaN or
/// `+inf` score makes both NaN. A stats array holds one entry per row of the
/// tensor (indexed as `row_lse`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SoftmaxPartStats {
    /// `log(exp(z_k) / v_k)`, the same for every key of the part.
    pub log_scale: f64,
    /// The sum of the part's stored values.
    pub sum: f64,
}

/// What the default mode's zero fill of a masked key costs, relative to the
/// softmax of a kept key: [`split_kept_keys`]' `masked_key_cost` for calls
/// with `zero_masked` (0 for kept-only writes).
pub const MASKED_KEY_FILL_COST: f64 = 0.25;

/// Part `part` of a balanced split of a row into `parts` key ranges: the
/// ranges are disjoint, in order, cover `0..k_len`, and each costs about
/// 1 / `parts` of the row, where a key inside the row's `kept` keys (as
/// [`kept_keys`] reports them) costs 1 and a key outside costs
/// `masked_key_cost` (rounded to sixteenths; [`MASKED_KEY_FILL_COST`] in the
/// default mode, 0 for kept-only writes). With a cost of 0, boundaries fall
/// on kept keys. Errors for `parts == 0`, `part >= parts`, a cost outside
/// `[0, 1]`, or intervals beyond `k_len` or out of order.
///
/// [`kept_keys`]: super::kept_keys
pub fn split_kept_keys(
    kept: &KeptKeys,
    k_len: usize,
    part: usize,
    parts: usize,
    masked_key_cost: f64,
) -> Result<Range<usize>, Error> {
    let mut raw = ffi::rlx_kept_intervals {
        count: kept.count,
        ..Default::default()
    };
    for (to, from) in raw.intervals.iter_mut().zip(&kept.intervals) {
        *to = ffi::rlx_key_interval {
            begin: from.start,
            end: from.end,
        };
    }
    let mut out = ffi::rlx_key_range::default();
    // SAFETY: valid pointers for the call's duration.
    check(unsafe {
        ffi::rlx_split_kept_keys(&raw, k_len, part, parts, masked_key_cost, &mut out)
    })?;
    Ok(out.begin..out.end)
}

/// Step 1 of a row split over threads (docs/SEMANTICS.md, "Split rows
/// finished in place"), for the keys `keys` of every row: the keys of the
/// range are written as [`masked_softmax`] writes them (masked ones 0, or
/// left alone outside `kept_keys` without `zero_masked`), except that a
/// kept key holds the exp of its score relative to the part's maximum, not
/// yet a probability; `stats` (one entry per row) receives the part's
/// statistics. The mask and the options are the whole row's (the sink
/// logits are used by step 2 only). Then, once every part's step 1 is done,
/// [`finish_softmax_part`] makes the part's keys probabilities. Takes the
/// whole tensor: to run the parts of one tensor on threads, give each thread
/// a [`KeyPart`] of [`key_parts`].
///
/// Errors (nothing written): what [`masked_softmax`] rejects, a stats slice
/// that is not one entry per row, `keys.start > keys.end` or
/// `keys.end > k_len`.
///
/// [`masked_softmax`]: super::masked_softmax
pub fn masked_softmax_part<T: ScoreElement, M: MaskLike>(
    scores: &mut [T],
    layout: impl Into<Layout>,
    mask: &M,
    keys: Range<usize>,
    stats: &mut [SoftmaxPartStats],
    options: SoftmaxOptions,
) -> Result<(), Error> {
    let layout = layout.into();
    let rows = 0..layout.shape.rows();
    masked_softmax_part_rows(scores, layout, mask, keys, stats, options, rows)
}

/// [`masked_softmax_part`] over the flattened rows `rows` only.
pub fn masked_softmax_part_rows<T: ScoreElement, M: MaskLike>(
    scores: &mut [T],
    layout: impl Into<Layout>,
    mask: &M,
    keys: Range<usize>,
    stats: &mut [SoftmaxPartStats],
    options: SoftmaxOptions,
    rows: Range<usize>,
) -> Result<(), Error> {
    let who = "masked_softmax_part";
    let layout = layout.into();
    let v = view_mut(who, scores, layout)?;
    let shape = layout.shape;
    // SAFETY: v lies within `scores`, borrowed mutably for the call.
    unsafe { softmax_part_raw(who, &v, shape, mask, keys, stats, options, rows) }
}

/// Step 2 of a row split over threads for part `part` of `parts` (every
/// part's stats, in the same order for every part, each one entry per row),
/// once every part's [`masked_softmax_part`] is done: per row, the row's
/// log-sum-exp `lse = log(sum_i parts[i].sum * exp(parts[i].log_scale)
/// [+ exp(sink_h)])` (in f64), and this part's kept values scaled by
/// `exp(log_scale - lse)` in place. Together the parts are then
/// [`masked_softmax`] of the whole rows (f32 rows within its bound; bf16 /
/// f16 rows round once more to their type). A row with no kept key in any
/// part stays zeros. Takes the whole tensor; see [`key_parts`] for threads.
///
/// Errors (nothing written): what [`masked_softmax_part`] rejects, no
/// parts, a stats slice that is not one entry per row, `part >=
/// parts.len()`, a NaN or `+inf` sink logit.
///
/// [`masked_softmax`]: super::masked_softmax
pub fn finish_softmax_part<T: ScoreElement, M: MaskLike>(
    scores: &mut [T],
    layout: impl Into<Layout>,
    mask: &M,
    keys: Range<usize>,
    parts: &[&[SoftmaxPartStats]],
    part: usize,
    options: SoftmaxOptions,
) -> Result<(), Error> {
    let layout = layout.into();
    let rows = 0..layout.shape.rows();
    finish_softmax_part_rows(scores, layout, mask, keys, parts, part, options, rows)
}

/// [`finish_softmax_part`] over the flattened rows `rows` only.
#[allow(clippy::too_many_arguments)]
pub fn finish_softmax_part_rows<T: ScoreElement, M: MaskLike>(
    scores: &mut [T],
    layout: impl Into<Layout>,
    mask: &M,
    keys: Range<usize>,
    parts: &[&[SoftmaxPartStats]],
    part: usize,
    options: SoftmaxOptions,
    rows: Range<usize>,
) -> Result<(), Error> {
    let who = "finish_softmax_part";
    let layout = layout.into();
    let v = view_mut(who, scores, layout)?;
    let shape = layout.shape;
    // SAFETY: v lies within `scores`, borrowed mutably for the call.
    unsafe { finish_part_raw(who, &v, shape, mask, keys, parts, part, options, rows, None) }
}

/// [`finish_softmax_part_rows`] that also writes each row's log-sum-exp
/// into `row_lse[r]` for the call's rows `r` (one entry per row of the
/// tensor; `-inf` for a row with no kept key). Give it to one part only:
/// every part would write the same values.
#[allow(clippy::too_many_arguments)]
pub fn finish_softmax_part_rows_lse<T: ScoreElement, M: MaskLike>(
    scores: &mut [T],
    layout: impl Into<Layout>,
    mask: &M,
    keys: Range<usize>,
    parts: &[&[SoftmaxPartStats]],
    part: usize,
    options: SoftmaxOptions,
    rows: Range<usize>,
    row_lse: &mut [f32],
) -> Result<(), Error> {
    let who = "finish_softmax_part_rows_lse";
    let layout = layout.into();
    let v = view_mut(who, scores, layout)?;
    let shape = layout.shape;
    let lse = Some(row_lse);
    // SAFETY: v lies within `scores`, borrowed mutably for the call.
    unsafe { finish_part_raw(who, &v, shape, mask, keys, parts, part, options, rows, lse) }
}

/// Checks that a stats slice holds one entry per row of `shape`.
fn stats_cover(who: &str, what: &str, len: usize, shape: Shape) -> Result<(), Error> {
    if len != shape.rows() {
        return Err(Error::invalid(format!(
            "{who}: {what} has {len} elements, shape {shape:?} has {} rows",
            shape.rows()
        )));
    }
    Ok(())
}

fn key_range(keys: Range<usize>) -> ffi::rlx_key_range {
    ffi::rlx_key_range {
        begin: keys.start,
        end: keys.end,
    }
}

/// Step 1 on the tensor `v` (of `shape`); `who` names the caller in errors.
///
/// # Safety
/// `v` must describe memory that the caller may write within `keys` of the
/// call's rows, and that no one else reads or writes there during the call.
#[allow(clippy::too_many_arguments)]
unsafe fn softmax_part_raw<M: MaskLike>(
    who: &str,
    v: &ffi::rlx_score_view,
    shape: Shape,
    mask: &M,
    keys: Range<usize>,
    stats: &mut [SoftmaxPartStats],
    options: SoftmaxOptions,
    rows: Range<usize>,
) -> Result<(), Error> {
    let m = mask.spec().to_ffi(who, extent_of(shape))?;
    let o = options.to_ffi(who, shape, None)?;
    stats_cover(who, "stats", stats.len(), shape)?;
    let r = row_range(rows);
    check(ffi::rlx_masked_softmax_part(
        v,
        &m,
        key_range(keys),
        stats.as_mut_ptr(),
        &o,
        &r,
    ))
}

/// Step 2 on the tensor `v` (of `shape`).
///
/// # Safety
/// As [`softmax_part_raw`].
#[allow(clippy::too_many_arguments)]
unsafe fn finish_part_raw<M: MaskLike>(
    who: &str,
    v: &ffi::rlx_score_view,
    shape: Shape,
    mask: &M,
    keys: Range<usize>,
    parts: &[&[SoftmaxPartStats]],
    part: usize,
    options: SoftmaxOptions,
    rows: Range<usize>,
    row_lse: Option<&mut [f32]>,
) -> Result<(), Error> {
    let m = mask.spec().to_ffi(who, extent_of(shape))?;
    let o = options.to_ffi(who, shape, row_lse)?;
    for (i, stats) in parts.iter().enumerate() {
        stats_cover(who, &format!("parts[{i}]"), stats.len(), shape)?;
    }
    // The stats pointers: on the stack for the usual few parts, so that a
    // split decode step does not allocate.
    const LOCAL: usize = 16;
    let mut local = [std::ptr::null::<SoftmaxPartStats>(); LOCAL];
    let heap: Vec<*const SoftmaxPartStats>;
    let pointers: &[*const SoftmaxPartStats] = if parts.len() <= LOCAL {
        for (to, from) in local.iter_mut().zip(parts) {
            *to = from.as_ptr();
        }
        &local[..parts.len()]
    } else {
        heap = parts.iter().map(|s| s.as_ptr()).collect();
        &heap
    };
    let r = row_range(rows);
    check(ffi::rlx_finish_softmax_part(
        v,
        &m,
        key_range(keys),
        pointers.as_ptr(),
        pointers.len(),
        part,
        &o,
        &r,
    ))
}

/// One part of a tensor whose rows are split over threads by key ranges: it
/// may write only the keys `keys()` of every row, so the parts of one
/// [`key_parts`] call can be moved to threads and run their two steps
/// concurrently on the same tensor (each part's stats written by its step 1,
/// then, after every part's step 1, read by every part's step 2: e.g. two
/// `std::thread::scope`s, or a barrier and a lock).
#[derive(Debug)]
pub struct KeyPart<'a, T: ScoreElement> {
    view: ffi::rlx_score_view,
    shape: Shape,
    keys: Range<usize>,
    _scores: std::marker::PhantomData<&'a mut [T]>,
}

// SAFETY: a KeyPart is the exclusive right to the keys `keys` of every row
// of a tensor borrowed mutably for 'a, whose rows do not overlap (view
// checks it); the parts of one key_parts call have disjoint key ranges, and
// the library reads and writes only the range it is given, so parts on
// different threads touch disjoint memory.
unsafe impl<T: ScoreElement + Send> Send for KeyPart<'_, T> {}

/// Splits the tensor `scores` (laid out as `layout`) into parts by the key
/// ranges `ranges` (e.g. [`split_kept_keys`] for part 0, 1, ...), which
/// must be in order, disjoint and within `k_len`. Errors for a slice that
/// does not cover the layout, rows that overlap, or ranges that are
/// reversed, overlap or reach past `k_len`.
pub fn key_parts<'a, T: ScoreElement>(
    scores: &'a mut [T],
    layout: impl Into<Layout>,
    ranges: &[Range<usize>],
) -> Result<Vec<KeyPart<'a, T>>, Error> {
    let who = "key_parts";
    let layout = layout.into();
    let shape = layout.shape;
    let v = view_mut(who, scores, layout)?;
    let mut previous_end = 0;
    for (i, r) in ranges.iter().enumerate() {
        if r.start > r.end || r.start < previous_end || r.end > shape.k_len {
            return Err(Error::invalid(format!(
                "{who}: range {i} {r:?} is reversed, overlaps the one before or \
                 reaches past k_len {}",
                shape.k_len
            )));
        }
        previous_end = r.end;
    }
    Ok(ranges
        .iter()
        .map(|r| KeyPart {
            view: v,
            shape,
            keys: r.clone(),
            _scores: std::marker::PhantomData,
        })
        .collect())
}

impl<T: ScoreElement> KeyPart<'_, T> {
    /// The keys of every row this part covers.
    pub fn keys(&self) -> Range<usize> {
        self.keys.clone()
    }
    /// The whole tensor's shape.
    pub fn shape(&self) -> Shape {
        self.shape
    }
    /// [`masked_softmax_part_rows`] on this part's keys.
    pub fn masked_softmax_part<M: MaskLike>(
        &mut self,
        mask: &M,
        stats: &mut [SoftmaxPartStats],
        options: SoftmaxOptions,
        rows: Range<usize>,
    ) -> Result<(), Error> {
        // SAFETY: the keys are this part's alone (see the Send impl), and
        // &mut self keeps its own calls apart.
        unsafe {
            softmax_part_raw(
                "masked_softmax_part",
                &self.view,
                self.shape,
                mask,
                self.keys.clone(),
                stats,
                options,
                rows,
            )
        }
    }
    /// [`finish_softmax_part_rows`] on this part's keys, and the rows'
    /// log-sum-exp into `row_lse` when given (to one part only).
    pub fn finish_softmax_part<M: MaskLike>(
        &mut self,
        mask: &M,
        parts: &[&[SoftmaxPartStats]],
        part: usize,
        options: SoftmaxOptions,
        rows: Range<usize>,
        row_lse: Option<&mut [f32]>,
    ) -> Result<(), Error> {
        // SAFETY: as in masked_softmax_part.
        unsafe {
            finish_part_raw(
                "finish_softmax_part",
                &self.view,
                self.shape,
                mask,
                self.keys.clone(),
                parts,
                part,
                options,
                rows,
                row_lse,
            )
        }
    }
}
