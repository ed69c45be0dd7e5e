// SPDX-License-Identifier: MIT OR Apache-2.0
//! Rows split by key ranges and finished in place (masked_softmax_part,
//! finish_softmax_part), on one thread and on threads through key_parts,
//! and the arguments they reject without writing anything.

mod scores_common;

use std::ops::Range;

use rlx_attn_mask::scores::*;
// The assertions name the kind as `crate::ErrorKind`.
use rlx_attn_mask::ErrorKind;
use scores_common::{split_decode_case, split_mask, split_options};

fn assert_split_matches(split: &[f32], whole: &[f32], split_lse: &[f32], lse: &[f32]) {
    for (i, (got, want)) in split.iter().zip(whole).enumerate() {
        let k = i % 600;
        if (400..599).contains(&k) {
            assert_eq!(*got, 0.0, "masked key {i}");
        } else {
            assert!((got - want).abs() <= 1e-6, "key {i}: {got} vs {want}");
        }
    }
    for (got, want) in split_lse.iter().zip(lse) {
        assert!((got - want).abs() <= 1e-5, "{split_lse:?} vs {lse:?}");
    }
}

#[test]
fn split_parts_finished_in_place_equal_the_unsplit_row() {
    let (scores, shape, ranges, whole, lse) = split_decode_case();
    let (mask, options) = (split_mask(), split_options());
    let mut split = scores.clone();
    let mut stats = vec![vec![SoftmaxPartStats::default(); 2]; 2];
    for (range, stats) in ranges.iter().zip(stats.iter_mut()) {
        masked_softmax_part(&mut split, shape, &mask, range.clone(), stats, options).unwrap();
    }
    for part in &stats {
        for row in part {
            assert!(row.log_scale.is_finite() && row.sum >= 0.999, "{row:?}");
        }
    }
    let parts: Vec<&[SoftmaxPartStats]> = stats.iter().map(|s| &s[..]).collect();
    let mut split_lse = vec![0.0f32; 2];
    finish_softmax_part_rows_lse(
        &mut split,
        shape,
        &mask,
        ranges[0].clone(),
        &parts,
        0,
        options,
        0..2,
        &mut split_lse,
    )
    .unwrap();
    finish_softmax_part(
        &mut split,
        shape,
        &mask,
        ranges[1].clone(),
        &parts,
        1,
        options,
    )
    .unwrap();
    assert_split_matches(&split, &whole, &split_lse, &lse);

    // One row per call, in bf16: within bf16 rounding of the f32 row.
    let mut split16: Vec<Bf16> = scores.iter().map(|&v| Bf16::from_f32(v)).collect();
    let mut whole16 = split16.clone();
    masked_softmax(&mut whole16, shape, &mask, options).unwrap();
    for row in 0..2 {
        for (range, stats) in ranges.iter().zip(stats.iter_mut()) {
            masked_softmax_part_rows(
                &mut split16,
                shape,
                &mask,
                range.clone(),
                stats,
                options,
                row..row + 1,
            )
            .unwrap();
        }
        let parts: Vec<&[SoftmaxPartStats]> = stats.iter().map(|s| &s[..]).collect();
        for (p, range) in ranges.iter().enumerate() {
            finish_softmax_part_rows(
                &mut split16,
                shape,
                &mask,
                range.clone(),
                &parts,
                p,
                options,
                row..row + 1,
            )
            .unwrap();
        }
    }
    for (got, want) in split16.iter().zip(&whole16) {
        let (got, want) = (got.to_f32(), want.to_f32());
        assert!(
            (got - want).abs() <= 1e-2 * want.max(1e-4),
            "{got} vs {want}"
        );
    }
}

#[test]
fn split_parts_run_on_threads() {
    let (scores, shape, ranges, whole, lse) = split_decode_case();
    let (mask, options) = (split_mask(), split_options());
    let mut split = scores.clone();
    let mut stats = vec![vec![SoftmaxPartStats::default(); 2]; 2];
    let mut split_lse = vec![0.0f32; 2];
    {
        let mut parts = key_parts(&mut split, shape, &ranges).unwrap();
        assert_eq!(parts[1].keys(), ranges[1]);
        // Step 1 on every part, then (the scope's join is the barrier)
        // step 2 on every part.
        std::thread::scope(|s| {
            for (part, stats) in parts.iter_mut().zip(stats.iter_mut()) {
                s.spawn(move || {
                    part.masked_softmax_part(&mask, stats, options, 0..2)
                        .unwrap()
                });
            }
        });
        let all: Vec<&[SoftmaxPartStats]> = stats.iter().map(|s| &s[..]).collect();
        let all = &all;
        let mut lse_slot = Some(&mut split_lse[..]);
        std::thread::scope(|s| {
            for (p, part) in parts.iter_mut().enumerate() {
                let row_lse = if p == 0 { lse_slot.take() } else { None };
                s.spawn(move || {
                    part.finish_softmax_part(&mask, all, p, options, 0..2, row_lse)
                        .unwrap()
                });
            }
        });
    }
    assert_split_matches(&split, &whole, &split_lse, &lse);
}

/// Keys 301..300: begin after end.
fn reversed() -> Range<usize> {
    Range {
        start: 301,
        end: 300,
    }
}

#[test]
fn bad_split_parts_are_errors_and_write_nothing() {
    let (scores, shape, ranges, _, _) = split_decode_case();
    let mask = split_mask();
    let options = SoftmaxOptions::default();
    let mut s = scores.clone();
    let sentinel = SoftmaxPartStats {
        log_scale: 42.0,
        sum: 42.0,
    };
    let mut stats = vec![sentinel; 2];
    // keys.end beyond k_len.
    let e = masked_softmax_part(&mut s, shape, &mask, 300..601, &mut stats, options).unwrap_err();
    assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument);
    assert!(e.message().starts_with("rlx_masked_softmax_part: "), "{e}");
    assert!(e.message()[25..].contains("masked_softmax_part"), "{e}");
    let e = masked_softmax_part(&mut s, shape, &mask, reversed(), &mut stats, options).unwrap_err();
    assert!(e.message().starts_with("rlx_masked_softmax_part: "), "{e}");
    // Stats that do not hold one entry per row.
    let e =
        masked_softmax_part(&mut s, shape, &mask, 0..200, &mut stats[..1], options).unwrap_err();
    assert!(e.message().contains("stats has 1"), "{e}");
    let good = vec![SoftmaxPartStats::default(); 2];
    let parts: [&[SoftmaxPartStats]; 2] = [&good, &good[..1]];
    let e = finish_softmax_part(&mut s, shape, &mask, 0..200, &parts, 0, options).unwrap_err();
    assert!(e.message().contains("parts[1] has 1"), "{e}");
    let parts: [&[SoftmaxPartStats]; 2] = [&good, &good];
    let e = finish_softmax_part(&mut s, shape, &mask, 0..200, &parts, 2, options).unwrap_err();
    assert!(e.message().starts_with("rlx_finish_softmax_part: "), "{e}");
    let e = finish_softmax_part(&mut s, shape, &mask, 0..200, &[], 0, options).unwrap_err();
    assert!(e.message().starts_with("rlx_finish_softmax_part: "), "{e}");
    let e = finish_softmax_part(&mut s, shape, &mask, 0..601, &parts, 0, options).unwrap_err();
    assert!(e.message().starts_with("rlx_finish_softmax_part: "), "{e}");
    let nan = [f32::NAN, 0.0];
    let mut lse = [7.0f32; 2];
    let e = finish_softmax_part_rows_lse(
        &mut s,
        shape,
        &mask,
        0..200,
        &parts,
        0,
        options.with_sink_logits(&nan),
        0..2,
        &mut lse,
    )
    .unwrap_err();
    assert!(e.message().starts_with("rlx_finish_softmax_part: "), "{e}");
    assert_eq!(lse, [7.0; 2]);
    assert_eq!(stats, vec![sentinel; 2]);
    assert_eq!(s, scores);
    // split_kept_keys: no parts, a part beyond them, a kept interval
    // beyond k_len.
    let kept = kept_keys(&mask, 0, 0, 1, 600).unwrap();
    let e = split_kept_keys(&kept, 600, 0, 0, 0.0).unwrap_err();
    assert!(e.message().starts_with("rlx_split_kept_keys: "), "{e}");
    assert!(split_kept_keys(&kept, 600, 2, 2, 0.0).is_err());
    assert!(split_kept_keys(&kept, 599, 0, 2, 0.0).is_err());
    assert!(split_kept_keys(&kept, 600, 0, 2, 1.5).is_err());
    // key_parts: overlapping or reversed ranges, beyond k_len.
    let e = key_parts(&mut s, shape, &[0..300, 200..600]).unwrap_err();
    assert!(e.message().starts_with("key_parts: range 1"), "{e}");
    assert!(key_parts(&mut s, shape, std::slice::from_ref(&(0..601))).is_err());
    assert!(key_parts(&mut s, shape, std::slice::from_ref(&reversed())).is_err());
    assert!(key_parts(&mut s, shape, &ranges).is_ok());
}
