// SPDX-License-Identifier: MIT OR Apache-2.0
//! Block lists (`MaskSpec::with_block_list`): the keys a causal mask keeps
//! within listed blocks, full blocks kept whatever the rule says, the
//! length checks of `BlockList::new`, and the library's checks of the
//! values (nothing written).

use rlx_attn_mask::scores::*;

/// q_len 4, k_len 10, q_block 2, k_block 4: query block 0 lists block 0
/// full and block 1 partial, query block 1 block 2 full and block 0
/// partial.
const NUM: [i32; 2] = [1, 1];
const IDX: [i32; 4] = [1, -1, 0, -1];
const FULL_NUM: [i32; 2] = [1, 1];
const FULL_IDX: [i32; 4] = [0, -1, 2, -1];

fn blocks() -> BlockList<'static> {
    BlockList::new(&NUM, &IDX, Some((&FULL_NUM, &FULL_IDX)), 1, 1, 2, 2, 2, 4).unwrap()
}

#[test]
fn listed_blocks_are_kept_and_full_ones_skip_the_rules() {
    let shape = Shape::new(1, 1, 4, 10);
    let mask = Mask::Causal.with_window_keys(3).with_block_list(blocks());
    let mut s = vec![1.0f32; 40];
    apply_mask(&mut s, shape, &mask, -7.0).unwrap();
    for q in 0..4usize {
        let p_q = q + 6;
        for k in 0..10usize {
            let full = if q < 2 { k < 4 } else { k >= 8 };
            let partial = if q < 2 { (4..8).contains(&k) } else { k < 4 };
            let rule = k <= p_q && p_q - k < 3;
            let want = full || (partial && rule);
            assert_eq!(s[q * 10 + k] == 1.0, want, "row {q} key {k}");
        }
        let kept = kept_keys(&mask, 0, q, 4, 10).unwrap();
        for k in 0..10 {
            if s[q * 10 + k] == 1.0 {
                assert!(kept.as_slice().iter().any(|r| r.contains(&k)), "{kept:?}");
            }
        }
    }
    // The softmax spreads evenly over the same keys, every row type.
    let mut p = vec![0.0f32; 40];
    masked_softmax(&mut p, shape, &mask, SoftmaxOptions::default()).unwrap();
    for q in 0..4 {
        let count = (0..10).filter(|&k| s[q * 10 + k] == 1.0).count() as f32;
        for k in 0..10 {
            let want = if s[q * 10 + k] == 1.0 { 1.0 / count } else { 0.0 };
            assert!((p[q * 10 + k] - want).abs() < 1e-6, "row {q} key {k}");
        }
    }
    let mut h = vec![Bf16::from_f32(0.0); 40];
    masked_softmax(&mut h, shape, &mask, SoftmaxOptions::default()).unwrap();
    assert_eq!(h[3 * 10 + 5].to_f32(), 0.0); // key 5: in no listed block of row 3
}

#[test]
fn the_full_pair_may_be_absent() {
    let list = BlockList::new(&NUM, &IDX, None, 1, 1, 2, 2, 2, 4).unwrap();
    let mut s = vec![1.0f32; 40];
    apply_mask(&mut s, Shape::new(1, 1, 4, 10), &Mask::None.with_block_list(list), -7.0)
        .unwrap();
    // Row 0 lists only block 1 (keys 4..8).
    let kept: Vec<usize> = (0..10).filter(|&k| s[k] == 1.0).collect();
    assert_eq!(kept, vec![4, 5, 6, 7]);
}

#[test]
fn short_slices_are_errors() {
    let e = BlockList::new(&NUM[..1], &IDX, None, 1, 1, 2, 2, 2, 4).unwrap_err();
    assert!(e.to_string().contains("num_blocks has 1 elements"), "{e}");
    let e = BlockList::new(&NUM, &IDX[..3], None, 1, 1, 2, 2, 2, 4).unwrap_err();
    assert!(e.to_string().contains("indices has 3 elements"), "{e}");
    let e = BlockList::new(&NUM, &IDX, Some((&FULL_NUM, &FULL_IDX[..1])), 1, 1, 2, 2, 2, 4)
        .unwrap_err();
    assert!(e.to_string().contains("full_indices has 1 elements"), "{e}");
    let e = BlockList::new(&NUM, &IDX, None, usize::MAX, 2, 2, 2, 2, 4).unwrap_err();
    assert!(e.to_string().contains("overflows"), "{e}");
}

#[test]
fn bad_values_are_errors_that_write_nothing() {
    let shape = Shape::new(1, 1, 4, 10);
    let bad_idx = [3, -1, 0, -1]; // key block 3 of 3
    let list = BlockList::new(&NUM, &bad_idx, None, 1, 1, 2, 2, 2, 4).unwrap();
    let mut s: Vec<f32> = (0..40).map(|i| i as f32).collect();
    let before = s.clone();
    let e = masked_softmax(&mut s, shape, &Mask::Causal.with_block_list(list),
                           SoftmaxOptions::default())
        .unwrap_err();
    assert!(e.to_string().contains("indices[0] = 3"), "{e}");
    assert_eq!(s, before);
    // A key block both full and partial.
    let dup = BlockList::new(&NUM, &IDX, Some((&FULL_NUM, &[1, -1, 2, -1])), 1, 1, 2, 2, 2, 4)
        .unwrap();
    let e = apply_mask(&mut s, shape, &Mask::Causal.with_block_list(dup), -1.0).unwrap_err();
    assert!(e.to_string().contains("twice"), "{e}");
    assert_eq!(s, before);
}
