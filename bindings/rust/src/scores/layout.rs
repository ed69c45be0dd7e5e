// SPDX-License-Identifier: MIT OR Apache-2.0
//! Where a score tensor's rows are: [`Shape`], [`Strides`], [`Layout`],
//! [`InOutLayouts`], and the checked C view of a slice laid out so.

use std::ops::Range;

use super::ScoreElement;
use crate::{ffi, Error};

/// The extents of a score tensor, or of a dense mask (1 = broadcast).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    /// Sequences in the batch.
    pub batch: usize,
    /// Attention heads.
    pub heads: usize,
    /// Query rows per head (1 when decoding).
    pub q_len: usize,
    /// Keys per row.
    pub k_len: usize,
}

impl Shape {
    /// `[batch, heads, q_len, k_len]`.
    pub fn new(batch: usize, heads: usize, q_len: usize, k_len: usize) -> Self {
        Shape {
            batch,
            heads,
            q_len,
            k_len,
        }
    }
    /// batch * heads * q_len rows, saturating at `usize::MAX` for a shape
    /// no slice can hold (the kernels reject such a shape).
    pub fn rows(&self) -> usize {
        self.batch
            .checked_mul(self.heads)
            .and_then(|n| n.checked_mul(self.q_len))
            .unwrap_or(usize::MAX)
    }
    /// The element count of the contiguous layout, None on overflow.
    fn elements(&self) -> Option<usize> {
        self.batch
            .checked_mul(self.heads)?
            .checked_mul(self.q_len)?
            .checked_mul(self.k_len)
    }
    pub(crate) fn to_ffi(self) -> ffi::rlx_shape4 {
        ffi::rlx_shape4 {
            batch: self.batch,
            heads: self.heads,
            q_len: self.q_len,
            k_len: self.k_len,
        }
    }
    pub(super) fn rows_checked(&self) -> Option<usize> {
        self.batch.checked_mul(self.heads)?.checked_mul(self.q_len)
    }
}

/// Element strides of a tensor whose keys are contiguous within a row
/// (C++ `Strides3`): row `(b, h, q)` starts at element
/// `b * batch + h * head + q * row` of its slice. A dense mask's strides
/// may be 0 on a broadcast extent; a bit-packed mask's count words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Strides {
    /// Elements from one batch's first row to the next batch's.
    pub batch: usize,
    /// Elements from one head's first row to the next head's.
    pub head: usize,
    /// Elements from one query row to the next (at least `k_len` for a
    /// tensor that is written).
    pub row: usize,
}

impl Strides {
    /// The contiguous layout of rows of `row` elements each.
    pub(super) fn packed(shape: Shape, row: usize) -> Self {
        Strides {
            batch: shape.heads.saturating_mul(shape.q_len).saturating_mul(row),
            head: shape.q_len.saturating_mul(row),
            row,
        }
    }
    /// The contiguous layout of `shape`.
    pub fn contiguous(shape: Shape) -> Self {
        Strides::packed(shape, shape.k_len)
    }
    pub(super) fn to_ffi(self) -> ffi::rlx_strides3 {
        ffi::rlx_strides3 {
            batch: self.batch,
            head: self.head,
            row: self.row,
        }
    }
}

/// Where a score tensor's rows are in its slice: its shape and its rows'
/// strides. Every kernel takes a `Layout` or a [`Shape`], which is the
/// contiguous layout. The slice must reach the last row's last key; rows
/// that would overlap are an error (each row is written).
///
/// ```
/// use rlx_attn_mask::scores::{apply_mask, Layout, Mask, Shape, Strides};
///
/// // 2 heads of 1 query over 3 keys, each row padded to 4 elements.
/// let shape = Shape::new(1, 2, 1, 3);
/// let layout = Layout::new(shape, Strides { batch: 8, head: 4, row: 4 });
/// let mut scores = [1.0f32, 2.0, 3.0, 99.0, 4.0, 5.0, 6.0, 99.0];
/// let decode = Mask::Decode { past: 1, upper: 2, window: 0 };
/// apply_mask(&mut scores, layout, &decode, -1e9)?;
/// assert_eq!(scores, [1.0, -1e9, 3.0, 99.0, 4.0, -1e9, 6.0, 99.0]);
/// # Ok::<(), rlx_attn_mask::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    /// The tensor's extents.
    pub shape: Shape,
    /// Where its rows start.
    pub strides: Strides,
}

impl Layout {
    /// A tensor of `shape` whose rows are at `strides`.
    pub fn new(shape: Shape, strides: Strides) -> Self {
        Layout { shape, strides }
    }
}

impl From<Shape> for Layout {
    fn from(shape: Shape) -> Self {
        Layout::new(shape, Strides::contiguous(shape))
    }
}

/// Where [`masked_softmax_into`]'s input and output rows are: one layout for
/// both (from a [`Shape`] or a [`Layout`]), or `(input, output)`, layouts of
/// the same shape with strides of their own.
///
/// [`masked_softmax_into`]: super::masked_softmax_into
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct InOutLayouts {
    /// Where the scores are read.
    pub input: Layout,
    /// Where the probabilities are written.
    pub output: Layout,
}

impl From<Layout> for InOutLayouts {
    fn from(layout: Layout) -> Self {
        InOutLayouts {
            input: layout,
            output: layout,
        }
    }
}

impl From<Shape> for InOutLayouts {
    fn from(shape: Shape) -> Self {
        Layout::from(shape).into()
    }
}

impl From<(Layout, Layout)> for InOutLayouts {
    fn from((input, output): (Layout, Layout)) -> Self {
        InOutLayouts { input, output }
    }
}

/// The elements a slice needs for rows of `row_len` elements at `strides`:
/// one past the last row's last element (0 for an empty extent, which the
/// library rejects); None on overflow.
pub(super) fn span(shape: Shape, strides: Strides, row_len: usize) -> Option<usize> {
    if shape.batch == 0 || shape.heads == 0 || shape.q_len == 0 || row_len == 0 {
        return Some(0);
    }
    ((shape.batch - 1).checked_mul(strides.batch)?)
        .checked_add((shape.heads - 1).checked_mul(strides.head)?)?
        .checked_add((shape.q_len - 1).checked_mul(strides.row)?)?
        .checked_add(row_len)
}

/// Whether no two rows of `layout` share an element. Sufficient, not
/// necessary: the extents nest, each stride (smallest first) at least the
/// span of the extents below it. Every permutation of a contiguous tensor's
/// axes, and every row stride from k_len up, pass.
fn rows_disjoint(layout: Layout) -> bool {
    let Layout { shape, strides } = layout;
    let mut axes = [
        (shape.batch, strides.batch),
        (shape.heads, strides.head),
        (shape.q_len, strides.row),
    ];
    axes.sort_by_key(|&(_, stride)| stride);
    let mut reach = Some(shape.k_len);
    for (extent, stride) in axes {
        if extent <= 1 {
            continue;
        }
        match reach {
            Some(r) if stride >= r => {
                reach = (extent - 1)
                    .checked_mul(stride)
                    .and_then(|x| x.checked_add(r));
            }
            _ => return false,
        }
    }
    true
}

/// Whether a view's rows are written (they must not overlap) or only read.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Access {
    Read,
    Write,
}

/// The C view of a slice of `len` elements at `data` laid out as `layout`:
/// the slice must reach its last element (a contiguous layout: hold exactly
/// its elements), and rows that are written must not overlap.
pub(super) fn view<T: ScoreElement>(
    who: &str,
    data: *mut T,
    len: usize,
    layout: Layout,
    access: Access,
) -> Result<ffi::rlx_score_view, Error> {
    let Layout { shape, strides } = layout;
    let contiguous = strides == Strides::contiguous(shape);
    let need = if contiguous {
        shape.elements()
    } else {
        span(shape, strides, shape.k_len)
    };
    let fits = match need {
        Some(n) if contiguous => len == n,
        Some(n) => len >= n,
        None => false,
    };
    if !fits {
        return Err(Error::invalid(format!(
            "{who}: the scores slice has {len} elements, shape {shape:?} at {strides:?} \
             needs {need:?}"
        )));
    }
    if access == Access::Write && !rows_disjoint(layout) {
        return Err(Error::invalid(format!(
            "{who}: the rows of shape {shape:?} at {strides:?} overlap (each row is written)"
        )));
    }
    Ok(ffi::rlx_score_view {
        data: data.cast(),
        type_: T::TYPE,
        shape: shape.to_ffi(),
        strides: strides.to_ffi(),
    })
}

/// [`view`] of a score tensor the call writes.
pub(super) fn view_mut<T: ScoreElement>(
    who: &str,
    scores: &mut [T],
    layout: Layout,
) -> Result<ffi::rlx_score_view, Error> {
    view(
        who,
        scores.as_mut_ptr(),
        scores.len(),
        layout,
        Access::Write,
    )
}

pub(super) fn row_range(rows: Range<usize>) -> ffi::rlx_row_range {
    ffi::rlx_row_range {
        begin: rows.start,
        end: rows.end,
    }
}
