// SPDX-License-Identifier: MIT OR Apache-2.0
//! Rows whose keys were split over several `masked_softmax_*_lse` calls,
//! merged afterwards ([`merge_softmax_parts`]).

use super::layout::view_mut;
use super::mask::covers;
use super::{ScoreElement, Shape};
use crate::{check, ffi, Error};

/// One part of a row set split over its keys, for [`merge_softmax_parts`]:
/// the probabilities a `masked_softmax_*_lse` call left (rescaled in
/// place), the part's shape, and the `row_lse` that call wrote (one entry
/// per row).
#[derive(Debug)]
pub struct SoftmaxPart<'a, T: ScoreElement> {
    /// The part's probabilities, contiguous, rescaled in place.
    pub probs: &'a mut [T],
    /// The part's shape (its k_len is the part's keys).
    pub shape: Shape,
    /// The part's log-sum-exp per row.
    pub row_lse: &'a [f32],
}

impl<'a, T: ScoreElement> SoftmaxPart<'a, T> {
    /// A part from its fields.
    pub fn new(probs: &'a mut [T], shape: Shape, row_lse: &'a [f32]) -> Self {
        SoftmaxPart {
            probs,
            shape,
            row_lse,
        }
    }
}

/// Rescales the parts of rows whose keys were split over several
/// `masked_softmax_*_lse` calls (each part a key sub-range with a mask whose
/// logical positions match the whole row's, e.g. `with_query_offsets`) so
/// that together they are the softmax of the whole rows:
/// `lse_total = log(sum_parts exp(lse_part) [+ exp(sink_h)])`,
/// `p = p_part * exp(lse_part - lse_total)`, within the softmax bound (one
/// more rounding per probability). Every part has the same batch, heads and
/// q_len; k_len may differ. `merged_lse` (one entry per row) receives
/// `lse_total`; `sink_logits` (per head) are sinks that no part carried
/// (with sinks, either exactly one part carries them or the merge adds
/// them). A part with `lse = -inf` (no kept key) stays as it is; a row where
/// every part's is stays as it is with merged lse `-inf`. Errors (nothing
/// written): no parts, slices that do not cover their shapes, parts of
/// different batch, heads or q_len, a NaN or `+inf` sink logit.
pub fn merge_softmax_parts<T: ScoreElement>(
    parts: &mut [SoftmaxPart<'_, T>],
    merged_lse: Option<&mut [f32]>,
    sink_logits: Option<&[f32]>,
) -> Result<(), Error> {
    let who = "merge_softmax_parts";
    let mut raw = Vec::with_capacity(parts.len());
    for (i, part) in parts.iter_mut().enumerate() {
        let rows = part.shape.rows();
        if part.row_lse.len() != rows {
            return Err(Error::invalid(format!(
                "{who}: part {i} row_lse has {} elements, its shape {:?} has {rows} rows",
                part.row_lse.len(),
                part.shape
            )));
        }
        raw.push(ffi::rlx_softmax_part {
            probs: view_mut(who, part.probs, part.shape.into())?,
            row_lse: part.row_lse.as_ptr(),
        });
    }
    // The library checks that every part has part 0's rows and heads before
    // it reads a row_lse, writes merged_lse or reads a sink logit.
    let first = parts.first().map(|p| p.shape);
    let merged_ptr = match merged_lse {
        Some(m) => {
            if let Some(shape) = first {
                if m.len() != shape.rows() {
                    return Err(Error::invalid(format!(
                        "{who}: merged_lse has {} elements, the parts have {} rows",
                        m.len(),
                        shape.rows()
                    )));
                }
            }
            m.as_mut_ptr()
        }
        None => std::ptr::null_mut(),
    };
    if let Some(shape) = first {
        covers(who, "sink_logits", sink_logits, Some(shape.heads))?;
    }
    let sinks = sink_logits.map_or(std::ptr::null(), |s| s.as_ptr());
    // SAFETY: each view covers exactly its part's slice (distinct mutable
    // borrows, so no two overlap), each row_lse its rows, merged_lse and
    // sink_logits part 0's rows and heads; all outlive the call.
    check(unsafe { ffi::rlx_merge_softmax_parts(raw.as_ptr(), raw.len(), merged_ptr, sinks) })
}
