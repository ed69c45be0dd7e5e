// SPDX-License-Identifier: MIT OR Apache-2.0
//! The mask rules (windows, two-sided windows, chunks, segments, groups,
//! sinks, prefixes, explicit positions, dense parts): the keys apply_mask
//! keeps and kept_keys reports, and the arrays that do not cover a tensor.

use rlx_attn_mask::scores::*;

/// The kept keys of every row of a `[1, 1, q_len, k_len]` tensor under
/// `mask`, as apply_mask leaves them; kept_keys must cover each row.
fn kept_sets<M: MaskLike>(mask: &M, q_len: usize, k_len: usize) -> Vec<Vec<usize>> {
    let shape = Shape::new(1, 1, q_len, k_len);
    let mut s = vec![1.0f32; q_len * k_len];
    apply_mask(&mut s, shape, mask, -7.0).unwrap();
    (0..q_len)
        .map(|q| {
            let row: Vec<usize> = (0..k_len).filter(|&k| s[q * k_len + k] == 1.0).collect();
            let kept = kept_keys(mask, 0, q, q_len, k_len).unwrap();
            for k in &row {
                assert!(kept.as_slice().iter().any(|r| r.contains(k)), "{kept:?}");
            }
            row
        })
        .collect()
}

#[test]
fn causal_with_window_keys_counts_the_query() {
    // 4 queries at positions 2..5 over 6 keys, W = 3.
    let sets = kept_sets(&Mask::Causal.with_window_keys(3), 4, 6);
    assert_eq!(
        sets,
        vec![vec![0, 1, 2], vec![1, 2, 3], vec![2, 3, 4], vec![3, 4, 5]]
    );
    // RLX's SlidingWindow(w) is W = w + 1.
    assert_eq!(kept_sets(&Mask::SlidingWindow(2), 4, 6), sets);
    let kept = kept_keys(&Mask::Causal.with_window_keys(3), 0, 1, 4, 6).unwrap();
    assert_eq!(kept.as_slice(), &[1..4]);
}

#[test]
fn chunks_split_at_multiples_of_c() {
    let sets = kept_sets(&Mask::Causal.with_chunk(3), 7, 7);
    assert_eq!(sets[2], vec![0, 1, 2]);
    assert_eq!(sets[3], vec![3]);
    assert_eq!(sets[5], vec![3, 4, 5]);
    assert_eq!(sets[6], vec![6]);
}

#[test]
fn segments_keep_each_document_to_itself() {
    let seg = [0, 0, 0, 1, 1];
    let sets = kept_sets(&Mask::Causal.with_segments(&seg, &seg), 5, 5);
    assert_eq!(
        sets,
        vec![vec![0], vec![0, 1], vec![0, 1, 2], vec![3], vec![3, 4]]
    );
}

#[test]
fn sinks_window_and_the_decode_token_are_three_intervals() {
    // Decode past 6 in bucket 9 (the token at position 6), 1 sink,
    // W = 2: the sink, key 5 and the token.
    let mask = Mask::Decode {
        past: 6,
        upper: 9,
        window: 0,
    }
    .with_sink_keys(1)
    .with_window_keys(2);
    assert_eq!(kept_sets(&mask, 1, 10), vec![vec![0, 5, 9]]);
    let kept = kept_keys(&mask, 0, 0, 1, 10).unwrap();
    assert_eq!(kept.as_slice(), &[0..1, 5..6, 9..10]);
    assert_eq!(kept.len(), 3);
}

#[test]
fn prefix_positions_and_dense_parts() {
    // Gemma 3: bidirectional over the first 2 positions.
    let prefix = [2i64];
    let sets = kept_sets(&Mask::Causal.with_prefix(&prefix), 3, 3);
    assert_eq!(sets, vec![vec![0, 1], vec![0, 1], vec![0, 1, 2]]);
    // A paged cache: slot 2 empty, the query at position 2.
    let k_pos = [3i64, 0, -1, 1, 2];
    let q_pos = [2i64];
    let mask = Mask::Causal.with_positions(Some(&q_pos), Some(&k_pos));
    assert_eq!(kept_sets(&mask, 1, 5), vec![vec![1, 3, 4]]);
    // Bits on causal, and the bit kind alone: a 70-key row.
    let words = [0b100001u64, 0b10100001];
    let bits_shape = Shape::new(1, 1, 1, 70);
    let on_causal = Mask::Causal.with_keep_bits(&words, bits_shape);
    assert_eq!(kept_sets(&on_causal, 1, 70), vec![vec![0, 5, 64, 69]]);
    let alone = Mask::KeepBits(&words, bits_shape);
    assert_eq!(kept_sets(&alone, 1, 70), vec![vec![0, 5, 64, 69]]);
    // Too few words for the shape; a second dense part.
    let e = apply_mask(
        &mut [0.0f32; 70],
        bits_shape,
        &Mask::KeepBits(&words[..1], bits_shape),
        0.0,
    )
    .unwrap_err();
    assert!(e.message().contains("dense mask has 1"), "{e}");
    let e = kept_keys(
        &Mask::KeepBits(&words, bits_shape).with_keep_bits(&words, bits_shape),
        0,
        0,
        1,
        70,
    )
    .unwrap_err();
    assert!(e.message().contains("second dense part"), "{e}");
    // Arrays shorter than the tensor needs are errors before any call.
    let e = kept_keys(&Mask::Causal.with_segments(&[0, 0], &[0; 3]), 0, 0, 2, 4).unwrap_err();
    assert!(e.message().contains("k_segment has 3"), "{e}");
    let e = kept_keys(&Mask::Causal.with_prefix(&prefix), 1, 0, 1, 4).unwrap_err();
    assert!(e.message().contains("prefix_end has 1"), "{e}");
    // Positions missing for the batch: batch 1 of [2, q_len 1, k_len 4]
    // needs 2 query positions and 8 key positions.
    let q_pos = [3i64];
    let k_pos = [0i64, 1, 2, 3];
    let e = kept_keys(&Mask::Causal.with_positions(Some(&q_pos), None), 1, 0, 1, 4).unwrap_err();
    assert!(e.message().contains("q_position has 1"), "{e}");
    let e = kept_keys(&Mask::Causal.with_positions(None, Some(&k_pos)), 1, 0, 1, 4).unwrap_err();
    assert!(e.message().contains("k_position has 4"), "{e}");
    let mut s = vec![7.0f32; 8];
    let e = masked_softmax(
        &mut s,
        Shape::new(2, 1, 1, 4),
        &Mask::Causal.with_positions(None, Some(&k_pos)),
        SoftmaxOptions::default(),
    )
    .unwrap_err();
    assert!(e.message().contains("k_position has 4"), "{e}");
    assert_eq!(s, vec![7.0; 8]);
    // Batch 0 alone is covered.
    assert_eq!(
        kept_sets(
            &Mask::Causal.with_positions(Some(&q_pos), Some(&k_pos)),
            1,
            4
        ),
        vec![vec![0, 1, 2, 3]]
    );
}

// ---- Groups and two-sided windows.

#[test]
fn gemma3_images_are_groups_on_a_sliding_layer() {
    // Hugging Face's or_masks(sliding causal, same image): W = 3 keys
    // counting the query, an image of 5 tokens (1..6) longer than the window.
    let image = [0, 1, 1, 1, 1, 1, 0, 0];
    let mask = Mask::Causal.with_window_keys(3).with_groups(&image, &image);
    let want: Vec<Vec<usize>> = (0..8)
        .map(|q: usize| {
            (0..8)
                .filter(|&k| (k <= q && q - k < 3) || (image[q] != 0 && image[q] == image[k]))
                .collect()
        })
        .collect();
    assert_eq!(kept_sets(&mask, 8, 8), want);
    assert_eq!(want[1], vec![0, 1, 2, 3, 4, 5]);
    // The image's first token sees its last: kept_keys covers them.
    assert_eq!(kept_keys(&mask, 0, 1, 8, 8).unwrap().as_slice(), &[0..6]);
    // A text row keeps its exact window.
    assert_eq!(kept_keys(&mask, 0, 7, 8, 8).unwrap().as_slice(), &[5..8]);
    // masked_softmax over zeros spreads row 1 over its six keys.
    let mut s = vec![0.0f32; 64];
    masked_softmax(
        &mut s,
        Shape::new(1, 1, 8, 8),
        &mask,
        SoftmaxOptions::default(),
    )
    .unwrap();
    for k in 0..8 {
        let p = if k < 6 { 1.0 / 6.0 } else { 0.0 };
        assert!((s[8 + k] - p).abs() < 1e-6, "key {k}: {}", s[8 + k]);
    }
}

#[test]
fn two_sided_window_is_embedding_gemma_and_modernbert() {
    // |i - j| <= 2: none + window_keys(3) + window_keys_after(3).
    let mask = Mask::None.with_window_keys(3).with_window_keys_after(3);
    let want: Vec<Vec<usize>> = (0..7usize)
        .map(|i| (0..7usize).filter(|&j| i.abs_diff(j) <= 2).collect())
        .collect();
    assert_eq!(kept_sets(&mask, 7, 7), want);
    assert_eq!(kept_keys(&mask, 0, 3, 7, 7).unwrap().as_slice(), &[1..6]);
}

#[test]
fn groups_must_cover_the_tensor() {
    let e = kept_keys(&Mask::Causal.with_groups(&[1, 1], &[1; 3]), 0, 0, 2, 4).unwrap_err();
    assert!(e.message().contains("k_group has 3"), "{e}");
    let e = kept_keys(&Mask::Causal.with_groups(&[1], &[1; 4]), 0, 0, 2, 4).unwrap_err();
    assert!(e.message().contains("q_group has 1"), "{e}");
    let e = kept_keys(&Mask::None.with_window_keys_after(1 << 63), 0, 0, 1, 4).unwrap_err();
    assert!(
        e.message()
            .contains("window_keys_after 9223372036854775808"),
        "{e}"
    );
}
