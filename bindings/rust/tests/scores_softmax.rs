// SPDX-License-Identifier: MIT OR Apache-2.0
//! The masked softmax and apply_mask through the public API: decode and
//! dense masks, row ranges, bf16 and f16 rows, the options and ALiBi
//! slopes, and the arguments they reject without writing anything.

use rlx_attn_mask::scores::*;

#[test]
fn decode_softmax_attends_to_the_past_and_the_new_token_only() {
    let shape = Shape::new(1, 2, 1, 8);
    let mut s: Vec<f32> = (0..16)
        .map(|i| if i % 8 >= 3 && i % 8 < 7 { 1e30 } else { 0.0 })
        .collect();
    let mask = Mask::Decode {
        past: 3,
        upper: 7,
        window: 0,
    };
    masked_softmax(&mut s, shape, &mask, SoftmaxOptions::default()).unwrap();
    for row in s.chunks(8) {
        assert_eq!(row[3..7], [0.0; 4]);
        for k in [0, 1, 2, 7] {
            assert!((row[k] - 0.25).abs() < 1e-6, "{row:?}");
        }
    }
    let kept = kept_keys(&mask, 0, 0, 1, 8).unwrap();
    assert_eq!(kept.as_slice(), &[0..3, 7..8]);
    assert_eq!(kept.len(), 4);
}

#[test]
fn dense_masks_and_row_ranges() {
    let shape = Shape::new(1, 1, 2, 4);
    let keep = [1.0f32, 0.0, 1.0, 0.0];
    let mut s = vec![5.0f32; 8];
    // Row 1 only; the keep mask broadcasts over the two query rows.
    let mask = Mask::Keep(&keep, Shape::new(1, 1, 1, 4));
    apply_mask_rows(&mut s, shape, &mask, 1..2, -1e9).unwrap();
    assert_eq!(s, vec![5.0, 5.0, 5.0, 5.0, 5.0, -1e9, 5.0, -1e9]);
    let bias = [0.0f32, f32::NEG_INFINITY, 0.0, 0.0];
    let mut p = vec![0.0f32; 8];
    masked_softmax_into(
        &[1.0; 8],
        &mut p,
        shape,
        &Mask::Bias(&bias, Shape::new(1, 1, 1, 4)),
        SoftmaxOptions::default(),
        0..2,
    )
    .unwrap();
    for row in p.chunks(4) {
        assert_eq!(row[1], 0.0);
        assert!((row[0] - 1.0 / 3.0).abs() < 1e-6);
    }
}

#[test]
fn causal_prefill_in_bf16_and_f16() {
    let shape = Shape::new(1, 1, 3, 3);
    let mut s = vec![Bf16::from_f32(1.0); 9];
    masked_softmax(&mut s, shape, &Mask::Causal, SoftmaxOptions::default()).unwrap();
    let p: Vec<f32> = s.iter().map(|b| b.to_f32()).collect();
    assert_eq!(p[0..3], [1.0, 0.0, 0.0]);
    assert_eq!(p[3..6], [0.5, 0.5, 0.0]);
    let mut h = vec![F16(0x3c00); 9]; // 1.0
    masked_softmax(
        &mut h,
        shape,
        &Mask::SlidingWindow(1),
        SoftmaxOptions::default(),
    )
    .unwrap();
    let p: Vec<f32> = h.iter().map(|x| x.to_f32()).collect();
    assert_eq!(p[6..9], [0.0, 0.5, 0.5]);
}

#[test]
fn softmax_options_and_alibi_slopes() {
    let slopes = alibi_slopes(8, 8.0).unwrap();
    assert_eq!(slopes, (1..=8).map(|h| 0.5f32.powi(h)).collect::<Vec<_>>());
    assert!(alibi_slopes(0, 8.0)
        .unwrap_err()
        .message()
        .starts_with("rlx_alibi_slopes: "));
    assert!(alibi_slopes(4, f32::NAN).is_err());
    // Per-head arrays must cover the heads; row_lse every row.
    let shape = Shape::new(1, 2, 1, 4);
    let mut s = vec![0.0f32; 8];
    let one = [0.0f32];
    let e = masked_softmax(
        &mut s,
        shape,
        &Mask::None,
        SoftmaxOptions::default().with_sink_logits(&one),
    )
    .unwrap_err();
    assert!(e.message().contains("sink_logits has 1"), "{e}");
    let e = masked_softmax_rows_lse(
        &mut s,
        shape,
        &Mask::None,
        SoftmaxOptions::default(),
        0..2,
        &mut [0.0; 1],
    )
    .unwrap_err();
    assert!(e.message().contains("row_lse has 1"), "{e}");
    assert_eq!(s, vec![0.0; 8]);
    let o = SoftmaxOptions::default()
        .with_scale(0.5)
        .with_softcap(30.0)
        .with_zero_masked(false);
    assert_eq!((o.scale, o.softcap, o.zero_masked), (0.5, 30.0, false));
    // Kept-only writes: masked keys keep their bits, kept keys equal the
    // default mode's bit for bit.
    let shape = Shape::new(1, 1, 2, 4);
    let scores = [0.5f32, -1.0, 2.0, 3.0, 1.0, 0.25, -2.0, 4.0];
    let mut zeroed = scores.to_vec();
    masked_softmax(&mut zeroed, shape, &Mask::Causal, SoftmaxOptions::default()).unwrap();
    let mut kept_only = scores.to_vec();
    let o = SoftmaxOptions::default().with_zero_masked(false);
    masked_softmax(&mut kept_only, shape, &Mask::Causal, o).unwrap();
    // Causal: rows 0 and 1 sit at positions 2 and 3 (the default query
    // offset k_len - q_len), so row 0 masks key 3 only.
    for (i, (&z, &k)) in zeroed.iter().zip(&kept_only).enumerate() {
        let (q, key) = (i / 4, i % 4);
        if key <= q + 2 {
            assert_eq!(z.to_bits(), k.to_bits(), "kept key {i}");
        } else {
            assert_eq!(z, 0.0, "masked key {i}");
            assert_eq!(k.to_bits(), scores[i].to_bits(), "masked key {i}");
        }
    }
}

#[test]
fn bad_arguments_are_errors_and_write_nothing() {
    let shape = Shape::new(1, 1, 1, 8);
    let mut s = vec![f32::NAN; 8];
    let e = masked_softmax(
        &mut s,
        shape,
        &Mask::Decode {
            past: 3,
            upper: 8,
            window: 0,
        },
        SoftmaxOptions::default(),
    )
    .unwrap_err();
    assert!(e.message().starts_with("rlx_masked_softmax: "), "{e}");
    let e = apply_mask(&mut s[..7], shape, &Mask::Causal, 0.0).unwrap_err();
    assert!(e.message().contains("7 elements"), "{e}");
    let short = [1.0f32; 3];
    let e = apply_mask(
        &mut s,
        shape,
        &Mask::Keep(&short, Shape::new(1, 1, 1, 8)),
        0.0,
    )
    .unwrap_err();
    assert!(e.message().contains("dense mask has 3"), "{e}");
    let e = masked_softmax_rows(&mut s, shape, &Mask::None, SoftmaxOptions::default(), 0..2)
        .unwrap_err();
    assert!(e.message().contains("row range"), "{e}");
    // Extents whose product wraps: [2^62, 8, 1, 8] holds 2^68 elements,
    // not the 0 a wrapping product would match with an empty slice.
    let huge = Shape::new(1 << 62, 8, 1, 8);
    assert_eq!(huge.rows(), usize::MAX);
    let e = apply_mask(&mut s[..0], huge, &Mask::None, 0.0).unwrap_err();
    assert!(e.message().contains("needs None"), "{e}");
    let e = kept_keys(&Mask::Causal, 0, 0, 1, 1 << 63).unwrap_err();
    assert!(e.message().contains("PTRDIFF_MAX"), "{e}");
    assert!(s.iter().all(|v| v.is_nan()));
    assert!(kept_keys(&Mask::Causal, 0, 1, 1, 8).is_err());
}
