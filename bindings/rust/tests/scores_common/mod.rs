// SPDX-License-Identifier: MIT OR Apache-2.0
//! The split decode case that scores_split.rs and scores_layout.rs share:
//! a decode row set, its split into two key ranges, and the unsplit softmax.

use std::ops::Range;

use rlx_attn_mask::scores::*;

/// The scores, their shape, the two parts' key ranges, and the unsplit
/// softmax with its row lse.
pub type SplitCase = (Vec<f32>, Shape, Vec<Range<usize>>, Vec<f32>, Vec<f32>);

/// A 1 x 2 x 1 x 600 decode row set (past 400, the token at slot 599)
/// with scale and sinks, and its split into two parts by
/// split_kept_keys.
pub fn split_decode_case() -> SplitCase {
    let shape = Shape::new(1, 2, 1, 600);
    let mask = split_mask();
    let scores: Vec<f32> = (0..1200)
        .map(|i| ((i * 37) % 101) as f32 / 10.0 - 5.0)
        .collect();
    let kept = kept_keys(&mask, 0, 0, 1, 600).unwrap();
    assert_eq!(kept.as_slice(), &[0..400, 599..600]);
    let ranges: Vec<Range<usize>> = (0..2)
        .map(|p| split_kept_keys(&kept, 600, p, 2, 0.0).unwrap())
        .collect();
    assert_eq!(ranges[0].start, 0);
    assert_eq!(ranges[0].end, ranges[1].start);
    assert_eq!(ranges[1].end, 600);
    assert!(ranges[0].end == 200 || ranges[0].end == 201, "{ranges:?}");
    // With the zero fill's cost, part 1's masked keys 400..599 weigh:
    // the boundary moves right.
    let filled = split_kept_keys(&kept, 600, 0, 2, MASKED_KEY_FILL_COST).unwrap();
    assert!(filled.end > ranges[0].end, "{filled:?}");
    let (mut whole, mut lse) = (scores.clone(), vec![0.0f32; 2]);
    masked_softmax_rows_lse(&mut whole, shape, &mask, split_options(), 0..2, &mut lse).unwrap();
    (scores, shape, ranges, whole, lse)
}

pub fn split_mask() -> Mask<'static> {
    Mask::Decode {
        past: 400,
        upper: 599,
        window: 0,
    }
}

pub fn split_options() -> SoftmaxOptions<'static> {
    const SINKS: [f32; 2] = [0.5, -1.0];
    SoftmaxOptions::default()
        .with_scale(0.75)
        .with_sink_logits(&SINKS)
}
