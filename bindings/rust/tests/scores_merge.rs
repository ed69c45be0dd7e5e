// SPDX-License-Identifier: MIT OR Apache-2.0
//! Rows split over several masked_softmax_*_lse calls and merged with
//! merge_softmax_parts, and the merges it rejects without writing anything.

use rlx_attn_mask::scores::*;
// The assertions name the kind as `crate::ErrorKind`.
use rlx_attn_mask::ErrorKind;

/// A 12-key decode row (past 8, the token at slot 11) with a sink,
/// split at key 5: part A is 5 real past keys, part B the rest of the
/// decode layout, which carries the sink.
#[test]
fn merged_parts_equal_the_unsplit_row() {
    let scores: Vec<f32> = (0..12).map(|k| ((k * 5) % 7) as f32 - 3.0).collect();
    let sink = [0.5f32];
    let options = SoftmaxOptions::default().with_sink_logits(&sink);
    let (mut whole, mut lse) = (scores.clone(), [0.0f32]);
    let decode = Mask::Decode {
        past: 8,
        upper: 11,
        window: 0,
    };
    let one = |k| Shape::new(1, 1, 1, k);
    masked_softmax_rows_lse(&mut whole, one(12), &decode, options, 0..1, &mut lse).unwrap();
    let (mut a, mut b) = (scores[..5].to_vec(), scores[5..].to_vec());
    let (mut lse_a, mut lse_b) = ([0.0f32], [0.0f32]);
    let past = [8i64];
    let rest = Mask::Decode {
        past: 3,
        upper: 6,
        window: 0,
    };
    let plain = SoftmaxOptions::default();
    let none = Mask::None.with_query_offsets(&past);
    masked_softmax_rows_lse(&mut a, one(5), &none, plain, 0..1, &mut lse_a).unwrap();
    masked_softmax_rows_lse(&mut b, one(7), &rest, options, 0..1, &mut lse_b).unwrap();
    let mut merged = [0.0f32];
    {
        let mut parts = [
            SoftmaxPart::new(&mut a, one(5), &lse_a),
            SoftmaxPart::new(&mut b, one(7), &lse_b),
        ];
        merge_softmax_parts(&mut parts, Some(&mut merged), None).unwrap();
    }
    let split: Vec<f32> = a.iter().chain(b.iter()).copied().collect();
    for (got, want) in split.iter().zip(&whole) {
        assert!((got - want).abs() <= 1e-6, "{split:?} vs {whole:?}");
    }
    assert!((merged[0] - lse[0]).abs() <= 1e-5, "{merged:?} vs {lse:?}");

    // The same with the sink added by the merge, in bf16.
    let to_bf16 = |x: &[f32]| x.iter().map(|&v| Bf16::from_f32(v)).collect::<Vec<_>>();
    let (mut a16, mut b16) = (to_bf16(&scores[..5]), to_bf16(&scores[5..]));
    masked_softmax_rows_lse(&mut a16, one(5), &none, plain, 0..1, &mut lse_a).unwrap();
    masked_softmax_rows_lse(&mut b16, one(7), &rest, plain, 0..1, &mut lse_b).unwrap();
    let mut parts = [
        SoftmaxPart::new(&mut a16, one(5), &lse_a),
        SoftmaxPart::new(&mut b16, one(7), &lse_b),
    ];
    merge_softmax_parts(&mut parts, None, Some(&sink)).unwrap();
    let split: Vec<f32> = a16.iter().chain(b16.iter()).map(|v| v.to_f32()).collect();
    for (got, want) in split.iter().zip(&whole) {
        assert!(
            (got - want).abs() <= 1e-2 * want.max(1e-3),
            "{split:?} vs {whole:?}"
        );
    }
}

#[test]
fn bad_merges_are_errors_and_write_nothing() {
    let mut a = vec![0.25f32; 4];
    let mut b = vec![0.5f32; 4];
    let (lse_a, lse_b) = ([1.0f32, 2.0], [1.0f32]);
    let mut merged = [7.0f32; 2];
    // Parts of different q_len: 2 rows of 2 keys, 1 row of 4.
    let e = merge_softmax_parts(
        &mut [
            SoftmaxPart::new(&mut a, Shape::new(1, 1, 2, 2), &lse_a),
            SoftmaxPart::new(&mut b, Shape::new(1, 1, 1, 4), &lse_b),
        ],
        Some(&mut merged),
        None,
    )
    .unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument);
    assert!(e.message().starts_with("rlx_merge_softmax_parts: "), "{e}");
    assert!(
        e.message().contains("part 1 shape [1, 1, 1, 4] differs"),
        "{e}"
    );
    let e = merge_softmax_parts::<f32>(&mut [], None, None).unwrap_err();
    assert!(e.message().contains("no parts"), "{e}");
    // Slices that do not cover their shapes, a NaN sink.
    let e = merge_softmax_parts(
        &mut [SoftmaxPart::new(&mut a, Shape::new(1, 1, 2, 2), &lse_b)],
        None,
        None,
    )
    .unwrap_err();
    assert!(e.message().contains("row_lse has 1"), "{e}");
    let e = merge_softmax_parts(
        &mut [SoftmaxPart::new(&mut a, Shape::new(1, 1, 2, 2), &lse_a)],
        Some(&mut merged[..1]),
        None,
    )
    .unwrap_err();
    assert!(e.message().contains("merged_lse has 1"), "{e}");
    let e = merge_softmax_parts(
        &mut [SoftmaxPart::new(&mut a, Shape::new(1, 1, 2, 2), &lse_a)],
        None,
        Some(&[f32::NAN][..]),
    )
    .unwrap_err();
    assert!(e.message().contains("sink_logits[0]"), "{e}");
    assert_eq!((a, b, merged), (vec![0.25; 4], vec![0.5; 4], [7.0; 2]));
}
