// SPDX-License-Identifier: MIT OR Apache-2.0
//! Strided layouts against the contiguous tensor: the kernels, dense masks
//! at strides of their own, key parts of a padded tensor, and layouts that
//! a slice does not cover or whose rows overlap.

mod scores_common;

use rlx_attn_mask::scores::*;
use scores_common::{split_decode_case, split_mask, split_options};

/// `[batch, heads, q_len, k_len]` scores copied into a `[batch, q_len,
/// heads, k_len]` buffer whose rows are `pad` elements longer (filled
/// with `fill`), and that buffer's layout.
fn permuted<T: Copy>(s: &[T], shape: Shape, pad: usize, fill: T) -> (Vec<T>, Layout) {
    let Shape {
        batch,
        heads,
        q_len,
        k_len,
    } = shape;
    let row = k_len + pad;
    let strides = Strides {
        batch: q_len * heads * row,
        head: row,
        row: heads * row,
    };
    let mut out = vec![fill; batch * q_len * heads * row];
    for (r, chunk) in s.chunks(k_len).enumerate() {
        let (b, h, q) = (r / (heads * q_len), r / q_len % heads, r % q_len);
        let at = b * strides.batch + h * strides.head + q * strides.row;
        out[at..at + k_len].copy_from_slice(chunk);
    }
    (out, Layout::new(shape, strides))
}

/// Equal, or within 4e-6 relative: the bound of these rows' probabilities
/// (docs/KERNELS.md) and a margin.
fn assert_close(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len());
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            g == w || (g - w).abs() <= 4e-6 * w.abs(),
            "element {i}: {g} vs {w}"
        );
    }
}

#[test]
fn strided_layouts_match_the_contiguous_tensor() {
    // 2 batches x 3 heads x 4 queries x 21 keys, causal with ALiBi and
    // a sink, against the same rows in a [b, q, h, k] buffer with 3
    // elements of padding after each row.
    let shape = Shape::new(2, 3, 4, 21);
    let scores: Vec<f32> = (0..shape.rows() * 21)
        .map(|i| ((i * 7919) % 97) as f32 / 13.0 - 3.0)
        .collect();
    let slopes = alibi_slopes(3, 8.0).unwrap();
    let options = SoftmaxOptions::default()
        .with_scale(0.7)
        .with_alibi_slopes(&slopes);
    let mask = Mask::Causal.with_sink_keys(2).with_window_keys(9);
    let mut whole = scores.clone();
    let mut lse = vec![0.0f32; shape.rows()];
    masked_softmax_rows_lse(&mut whole, shape, &mask, options, 0..shape.rows(), &mut lse).unwrap();
    let (mut strided, layout) = permuted(&scores, shape, 3, 42.0f32);
    let mut strided_lse = vec![0.0f32; shape.rows()];
    let rows = 0..shape.rows();
    masked_softmax_rows_lse(&mut strided, layout, &mask, options, rows, &mut strided_lse).unwrap();
    // Within the softmax bound (the vector splits follow each row's
    // alignment); the padding untouched.
    assert_close(&strided, &permuted(&whole, shape, 3, 42.0f32).0);
    assert_close(&strided_lse, &lse);
    // Out of place, and apply_mask, on the same layout.
    let (input, _) = permuted(&scores, shape, 3, 42.0f32);
    let mut out = vec![7.0f32; input.len()];
    masked_softmax_into(&input, &mut out, layout, &mask, options, 0..shape.rows()).unwrap();
    assert_close(&out, &permuted(&whole, shape, 3, 7.0f32).0);
    // The input contiguous, the output padded: layouts of their own.
    let mut out = vec![7.0f32; input.len()];
    let rows = 0..shape.rows();
    let mut lse_into = vec![0.0f32; shape.rows()];
    masked_softmax_into_lse(
        &scores,
        &mut out,
        (Layout::from(shape), layout),
        &mask,
        options,
        rows,
        &mut lse_into,
    )
    .unwrap();
    assert_close(&out, &permuted(&whole, shape, 3, 7.0f32).0);
    assert_close(&lse_into, &lse);
    // Input rows of 20 keys (at a stride of 21): the shapes differ.
    let other = Layout::new(
        Shape::new(2, 3, 4, 20),
        Strides {
            batch: 252,
            head: 84,
            row: 21,
        },
    );
    let e =
        masked_softmax_into(&scores, &mut out, (other, layout), &mask, options, 0..1).unwrap_err();
    assert!(e.message().contains("differs"), "{e}");
    let mut masked = scores.clone();
    apply_mask(&mut masked, shape, &mask, -5.0).unwrap();
    let (mut strided, _) = permuted(&scores, shape, 3, 42.0f32);
    apply_mask(&mut strided, layout, &mask, -5.0).unwrap();
    assert_eq!(strided, permuted(&masked, shape, 3, 42.0f32).0);
    // A slice longer than the layout's span is fine; one short of it,
    // or rows that overlap, are errors that write nothing.
    let (mut longer, _) = permuted(&scores, shape, 3, 42.0f32);
    longer.extend([9.0; 5]);
    masked_softmax(&mut longer, layout, &mask, options).unwrap();
    assert_eq!(longer[longer.len() - 5..], [9.0; 5]);
    let (mut short, _) = permuted(&scores, shape, 3, 42.0f32);
    let n = short.len() - 4; // the last row's padding is not needed
    let e = masked_softmax(&mut short[..n], layout, &mask, options).unwrap_err();
    assert!(e.message().contains(&format!("has {n} elements")), "{e}");
    let unchanged = short.clone();
    let overlapping = Layout::new(
        shape,
        Strides {
            batch: 4 * 24 * 3,
            head: 20, // below k_len 21: each head's rows overlap the next
            row: 3 * 24,
        },
    );
    let e = masked_softmax(&mut short, overlapping, &mask, options).unwrap_err();
    assert!(e.message().contains("overlap"), "{e}");
    let e = key_parts(&mut short, overlapping, &[0..10, 10..21]).unwrap_err();
    assert!(e.message().starts_with("key_parts: "), "{e}");
    assert_eq!(short, unchanged);
}

#[test]
fn strided_dense_masks_and_split_parts() {
    // A keep mask of [1, 1, q_len, k_len] rows padded to 8 elements,
    // broadcast over heads by a head stride of 0, on 2 heads x 2
    // queries x 5 keys.
    let shape = Shape::new(1, 2, 2, 5);
    let keep = [
        1.0f32, 0.0, 1.0, 1.0, 0.0, -1.0, -1.0, -1.0, //
        0.0, 1.0, 1.0, 0.0, 1.0, -1.0, -1.0, -1.0,
    ];
    let dense = [1.0f32, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0];
    let strides = Strides {
        batch: 16,
        head: 0,
        row: 8,
    };
    let mask = Mask::None
        .with_keep(&keep, Shape::new(1, 1, 2, 5))
        .with_strides(strides);
    let want = Mask::None.with_keep(&dense, Shape::new(1, 1, 2, 5));
    let scores: Vec<f32> = (0..20).map(|i| (i % 7) as f32 * 0.5).collect();
    let (mut got, mut expected) = (scores.clone(), scores.clone());
    masked_softmax(&mut got, shape, &mask, SoftmaxOptions::default()).unwrap();
    masked_softmax(&mut expected, shape, &want, SoftmaxOptions::default()).unwrap();
    assert_eq!(got, expected);
    // The mask's span is 13 elements: 12 are too few.
    let e = apply_mask(
        &mut got,
        shape,
        &Mask::None
            .with_keep(&keep[..12], Shape::new(1, 1, 2, 5))
            .with_strides(strides),
        0.0,
    )
    .unwrap_err();
    assert!(e.message().contains("dense mask has 12"), "{e}");

    // A decode row split in two parts in place, on a tensor whose rows
    // are padded: the same as the unsplit rows of the contiguous one.
    let (scores, shape, ranges, whole, _) = split_decode_case();
    let (mask, options) = (split_mask(), split_options());
    let (mut split, layout) = permuted(&scores, shape, 5, -1.0f32);
    let mut stats = vec![vec![SoftmaxPartStats::default(); 2]; 2];
    let mut parts = key_parts(&mut split, layout, &ranges).unwrap();
    for (part, stats) in parts.iter_mut().zip(stats.iter_mut()) {
        part.masked_softmax_part(&mask, stats, options, 0..2)
            .unwrap();
    }
    let all: Vec<&[SoftmaxPartStats]> = stats.iter().map(|s| &s[..]).collect();
    for (p, part) in parts.iter_mut().enumerate() {
        part.finish_softmax_part(&mask, &all, p, options, 0..2, None)
            .unwrap();
    }
    let expected = permuted(&whole, shape, 5, -1.0f32).0;
    for (got, want) in split.iter().zip(&expected) {
        assert!(
            (got - want).abs() <= 2e-6 * want.abs().max(1e-3),
            "{got} vs {want}"
        );
    }
}
