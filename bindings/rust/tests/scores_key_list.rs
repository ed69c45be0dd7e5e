// SPDX-License-Identifier: MIT OR Apache-2.0
//! Key lists (`with_key_indices`): the keys apply_mask keeps and kept_keys
//! covers, kept-only softmax writes, and the slices and slots rejected.

use rlx_attn_mask::scores::*;

/// 3 queries over 8 keys (causal: query q at position 5 + q), 4 slots per
/// query with repeats and unused (-1) slots.
const SLOTS: [i32; 12] = [0, 6, 6, -1, 7, 2, -1, 2, -1, -1, 7, 3];

fn listed() -> MaskSpec<'static> {
    Mask::Causal.with_key_indices(&SLOTS, Shape::new(1, 1, 3, 4))
}

#[test]
fn apply_mask_keeps_the_listed_keys_the_rules_keep() {
    let shape = Shape::new(1, 1, 3, 8);
    let mut s = vec![1.0f32; 24];
    apply_mask(&mut s, shape, &listed(), -7.0).unwrap();
    let kept: Vec<Vec<usize>> = (0..3)
        .map(|q| (0..8).filter(|&k| s[q * 8 + k] == 1.0).collect())
        .collect();
    // Key 6 is beyond query 0, key 7 beyond query 1.
    assert_eq!(kept, vec![vec![0], vec![2], vec![3, 7]]);
    for (q, row) in kept.iter().enumerate() {
        let cover = kept_keys(&listed(), 0, q, 3, 8).unwrap();
        for k in row {
            assert!(cover.as_slice().iter().any(|r| r.contains(k)), "{cover:?}");
        }
    }
    assert_eq!(kept_keys(&listed(), 0, 2, 3, 8).unwrap().as_slice(), &[3..8]);
}

#[test]
fn kept_only_softmax_writes_the_listed_keys_alone() {
    let shape = Shape::new(1, 1, 3, 8);
    let mut s = vec![5.0f32; 24];
    let options = SoftmaxOptions::default().with_zero_masked(false);
    masked_softmax(&mut s, shape, &listed(), options).unwrap();
    assert_eq!(s[0], 1.0);
    assert_eq!(s[8 + 2], 1.0);
    assert!((s[16 + 3] - 0.5).abs() < 1e-6 && (s[16 + 7] - 0.5).abs() < 1e-6);
    // Unlisted keys, and key 6 of query 0 (listed, beyond the query): left.
    assert_eq!((s[1], s[6], s[8 + 7], s[16 + 4]), (5.0, 5.0, 5.0, 5.0));
    // The default mode zeroes them.
    let mut d = vec![5.0f32; 24];
    masked_softmax(&mut d, shape, &listed(), SoftmaxOptions::default()).unwrap();
    assert_eq!((d[0], d[1], d[6], d[16 + 4]), (1.0, 0.0, 0.0, 0.0));
}

#[test]
fn short_slices_and_bad_slots_are_errors_that_write_nothing() {
    let shape = Shape::new(1, 1, 3, 8);
    let mut s: Vec<f32> = (0..24).map(|i| i as f32).collect();
    let before = s.clone();
    // 11 slots where the shape describes 12.
    let short = Mask::Causal.with_key_indices(&SLOTS[..11], Shape::new(1, 1, 3, 4));
    let e = masked_softmax(&mut s, shape, &short, SoftmaxOptions::default()).unwrap_err();
    assert!(e.message().contains("key_indices has 11 elements"), "{e}");
    let mut bad = SLOTS;
    bad[9] = 8;
    let mask = Mask::Causal.with_key_indices(&bad, Shape::new(1, 1, 3, 4));
    let e = masked_softmax(&mut s, shape, &mask, SoftmaxOptions::default()).unwrap_err();
    assert!(e.message().contains("query 2), slot 1, is 8"), "{e}");
    let e = apply_mask(&mut s, shape, &mask, -1.0).unwrap_err();
    assert!(e.message().contains("slot 1, is 8"), "{e}");
    assert_eq!(s, before);
}
