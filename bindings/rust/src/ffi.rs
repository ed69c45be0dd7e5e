// SPDX-License-Identifier: MIT OR Apache-2.0
//! The C API of include/rlx/rlx_attn_mask.h, declared by hand (no bindgen:
//! the crate has no dependencies). Layouts mirror the C structs field for
//! field; C enums are `int`-sized and are passed as `c_uint`/`u32`.
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_uint, c_void};

pub type rlx_status = c_uint;
pub const RLX_OK: rlx_status = 0;
pub const RLX_INVALID_ARGUMENT: rlx_status = 1;
pub const RLX_OUT_OF_MEMORY: rlx_status = 2;
pub const RLX_INTERNAL_ERROR: rlx_status = 3;

#[repr(C)]
pub struct rlx_ladder {
    _opaque: [u8; 0],
}

pub type rlx_score_type = c_uint;
pub const RLX_SCORE_F32: rlx_score_type = 0;
pub const RLX_SCORE_BF16: rlx_score_type = 1;
pub const RLX_SCORE_F16: rlx_score_type = 2;

pub type rlx_mask_kind = c_uint;
pub const RLX_MASK_NONE: rlx_mask_kind = 0;
pub const RLX_MASK_CAUSAL: rlx_mask_kind = 1;
pub const RLX_MASK_SLIDING_WINDOW: rlx_mask_kind = 2;
pub const RLX_MASK_DECODE: rlx_mask_kind = 3;
pub const RLX_MASK_KEEP_F32: rlx_mask_kind = 4;
pub const RLX_MASK_KEEP_U8: rlx_mask_kind = 5;
pub const RLX_MASK_BIAS: rlx_mask_kind = 6;
pub const RLX_MASK_KEEP_BITS: rlx_mask_kind = 7;

pub type rlx_dense_kind = c_uint;
pub const RLX_DENSE_NONE: rlx_dense_kind = 0;
pub const RLX_DENSE_KEEP_F32: rlx_dense_kind = 1;
pub const RLX_DENSE_KEEP_U8: rlx_dense_kind = 2;
pub const RLX_DENSE_KEEP_BITS: rlx_dense_kind = 3;
pub const RLX_DENSE_BIAS: rlx_dense_kind = 4;

/// `RLX_MAX_KEPT_INTERVALS`.
pub const RLX_MAX_KEPT_INTERVALS: usize = 3;

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct rlx_shape4 {
    pub batch: usize,
    pub heads: usize,
    pub q_len: usize,
    pub k_len: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct rlx_strides3 {
    pub batch: usize,
    pub head: usize,
    pub row: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rlx_score_view {
    pub data: *mut c_void,
    pub type_: rlx_score_type,
    pub shape: rlx_shape4,
    pub strides: rlx_strides3,
}

/// Starts with `struct_size`, which must be `size_of::<rlx_mask_spec>()`
/// (what the C header's `rlx_mask_spec_init` sets): [`rlx_mask_spec::new`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rlx_mask_spec {
    pub struct_size: usize,
    pub kind: rlx_mask_kind,
    pub window: usize,
    pub past: usize,
    pub upper: usize,
    pub data: *const c_void,
    pub shape: rlx_shape4,
    pub strides: rlx_strides3,
    pub query_offsets: *const i64,
    pub window_keys: usize,
    pub chunk: usize,
    pub sink_keys: usize,
    pub prefix_end: *const i64,
    pub q_segment: *const i32,
    pub k_segment: *const i32,
    pub q_position: *const i64,
    pub k_position: *const i64,
    pub dense: rlx_dense_kind,
    pub window_keys_after: usize,
    pub q_group: *const i32,
    pub k_group: *const i32,
    pub key_indices: *const i32,
    pub key_indices_shape: rlx_shape4,
    pub block_list: rlx_block_list,
}

/// `rlx_block_list`: FlexAttention's BlockMask fields (all null / 0: absent).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rlx_block_list {
    pub num_blocks: *const i32,
    pub indices: *const i32,
    pub full_num_blocks: *const i32,
    pub full_indices: *const i32,
    pub batch: usize,
    pub heads: usize,
    pub q_blocks: usize,
    pub max_blocks: usize,
    pub q_block: usize,
    pub k_block: usize,
}

impl Default for rlx_block_list {
    fn default() -> Self {
        rlx_block_list {
            num_blocks: std::ptr::null(),
            indices: std::ptr::null(),
            full_num_blocks: std::ptr::null(),
            full_indices: std::ptr::null(),
            batch: 0,
            heads: 0,
            q_blocks: 0,
            max_blocks: 0,
            q_block: 0,
            k_block: 0,
        }
    }
}

impl rlx_mask_spec {
    /// `rlx_mask_spec_init`: kind NONE, every rule absent.
    pub fn new() -> Self {
        rlx_mask_spec {
            struct_size: std::mem::size_of::<rlx_mask_spec>(),
            kind: RLX_MASK_NONE,
            window: 0,
            past: 0,
            upper: 0,
            data: std::ptr::null(),
            shape: rlx_shape4::default(),
            strides: rlx_strides3::default(),
            query_offsets: std::ptr::null(),
            window_keys: 0,
            chunk: 0,
            sink_keys: 0,
            prefix_end: std::ptr::null(),
            q_segment: std::ptr::null(),
            k_segment: std::ptr::null(),
            q_position: std::ptr::null(),
            k_position: std::ptr::null(),
            dense: RLX_DENSE_NONE,
            window_keys_after: 0,
            q_group: std::ptr::null(),
            k_group: std::ptr::null(),
            key_indices: std::ptr::null(),
            key_indices_shape: rlx_shape4::default(),
            block_list: rlx_block_list::default(),
        }
    }
}

/// Starts with `struct_size` as [`rlx_mask_spec`] does:
/// [`rlx_softmax_options::new`] is `rlx_softmax_options_init`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rlx_softmax_options {
    pub struct_size: usize,
    pub scale: f32,
    pub softcap: f32,
    pub sink_logits: *const f32,
    pub alibi_slopes: *const f32,
    pub row_lse: *mut f32,
    // C's bool (_Bool) has Rust bool's size and values.
    pub zero_masked: bool,
}

impl rlx_softmax_options {
    pub fn new() -> Self {
        rlx_softmax_options {
            struct_size: std::mem::size_of::<rlx_softmax_options>(),
            scale: 1.0,
            softcap: 0.0,
            sink_logits: std::ptr::null(),
            alibi_slopes: std::ptr::null(),
            row_lse: std::ptr::null_mut(),
            zero_masked: true,
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rlx_row_range {
    pub begin: usize,
    pub end: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct rlx_key_interval {
    pub begin: usize,
    pub end: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct rlx_kept_intervals {
    pub intervals: [rlx_key_interval; RLX_MAX_KEPT_INTERVALS],
    pub count: usize,
}

/// `rlx_block_mask_view`: caller-provided arrays of a block mask.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rlx_block_mask_view {
    pub q_blocks: usize,
    pub k_blocks: usize,
    pub kv_num_blocks: *mut u32,
    pub kv_indices: *mut u32,
    pub full_kv_num_blocks: *mut u32,
    pub full_kv_indices: *mut u32,
}

/// `rlx_softmax_part`: one part of a split softmax row set.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rlx_softmax_part {
    pub probs: rlx_score_view,
    pub row_lse: *const f32,
}

/// `rlx_key_range`: the keys `[begin, end)` of every row that one part of a
/// split row covers.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct rlx_key_range {
    pub begin: usize,
    pub end: usize,
}

/// `rlx_softmax_part_stats` is the public [`crate::scores::SoftmaxPartStats`]
/// (#[repr(C)], checked by the layout test), so that a caller's stats arrays
/// pass to the library as they are.
pub use crate::scores::SoftmaxPartStats as rlx_softmax_part_stats;

extern "C" {
    pub fn rlx_version() -> *const c_char;
    pub fn rlx_last_error() -> *const c_char;

    pub fn rlx_ladder_power_of_two(min: u64, max: u64, out: *mut *mut rlx_ladder) -> rlx_status;
    pub fn rlx_ladder_geometric(max: u64, count: u64, out: *mut *mut rlx_ladder) -> rlx_status;
    pub fn rlx_ladder_custom(
        starts: *const u64,
        ends: *const u64,
        n: usize,
        out: *mut *mut rlx_ladder,
    ) -> rlx_status;
    pub fn rlx_ladder_free(ladder: *mut rlx_ladder);
    pub fn rlx_ladder_size(ladder: *const rlx_ladder, size: *mut usize) -> rlx_status;
    pub fn rlx_ladder_bucket(
        ladder: *const rlx_ladder,
        i: usize,
        start: *mut u64,
        end: *mut u64,
    ) -> rlx_status;
    // C's bool (_Bool) has Rust bool's size and values.
    pub fn rlx_ladder_bucket_for(
        ladder: *const rlx_ladder,
        key: u64,
        found: *mut bool,
        index: *mut usize,
    ) -> rlx_status;

    pub fn rlx_fill_bucket_decode_mask(
        out: *mut f32,
        out_len: usize,
        past_seq: usize,
        upper: usize,
        window: usize,
    ) -> rlx_status;

    pub fn rlx_compiled_targets(names: *mut *const c_char) -> rlx_status;
    pub fn rlx_supported_targets(names: *mut *const c_char) -> rlx_status;
    pub fn rlx_active_target(name: *mut *const c_char) -> rlx_status;
    pub fn rlx_dispatched_target(name: *mut *const c_char) -> rlx_status;
    pub fn rlx_force_target(name: *const c_char) -> rlx_status;

    pub fn rlx_kept_keys(
        mask: *const rlx_mask_spec,
        batch_index: usize,
        q: usize,
        q_len: usize,
        k_len: usize,
        out: *mut rlx_kept_intervals,
    ) -> rlx_status;
    pub fn rlx_apply_mask(
        scores: *const rlx_score_view,
        mask: *const rlx_mask_spec,
        rows: *const rlx_row_range,
        fill: f32,
    ) -> rlx_status;
    pub fn rlx_masked_softmax(
        scores: *const rlx_score_view,
        mask: *const rlx_mask_spec,
        options: *const rlx_softmax_options,
        rows: *const rlx_row_range,
    ) -> rlx_status;
    pub fn rlx_masked_softmax_into(
        input: *const rlx_score_view,
        output: *const rlx_score_view,
        mask: *const rlx_mask_spec,
        options: *const rlx_softmax_options,
        rows: *const rlx_row_range,
    ) -> rlx_status;
    pub fn rlx_alibi_slopes(
        heads: usize,
        max_bias: f32,
        out: *mut f32,
        out_len: usize,
    ) -> rlx_status;

    pub fn rlx_classify_blocks(
        mask: *const rlx_mask_spec,
        shape: *const rlx_shape4,
        batch_index: usize,
        head: usize,
        tq: usize,
        tk: usize,
        out: *const rlx_block_mask_view,
    ) -> rlx_status;
    pub fn rlx_merge_softmax_parts(
        parts: *const rlx_softmax_part,
        n_parts: usize,
        merged_lse: *mut f32,
        sink_logits: *const f32,
    ) -> rlx_status;

    pub fn rlx_split_kept_keys(
        kept: *const rlx_kept_intervals,
        k_len: usize,
        part: usize,
        parts: usize,
        masked_key_cost: f64,
        out: *mut rlx_key_range,
    ) -> rlx_status;
    pub fn rlx_masked_softmax_part(
        scores: *const rlx_score_view,
        mask: *const rlx_mask_spec,
        keys: rlx_key_range,
        stats: *mut rlx_softmax_part_stats,
        options: *const rlx_softmax_options,
        rows: *const rlx_row_range,
    ) -> rlx_status;
    #[allow(clippy::too_many_arguments)]
    pub fn rlx_finish_softmax_part(
        scores: *const rlx_score_view,
        mask: *const rlx_mask_spec,
        keys: rlx_key_range,
        parts: *const *const rlx_softmax_part_stats,
        n_parts: usize,
        part: usize,
        options: *const rlx_softmax_options,
        rows: *const rlx_row_range,
    ) -> rlx_status;
}

/// One row of the C side's layout table (layout/layout.c, built by
/// build.rs): "sizeof T" or "T.field" and its value in bytes.
#[cfg(test)]
#[repr(C)]
pub struct rlx_layout_entry {
    pub name: *const std::os::raw::c_char,
    pub value: usize,
}

/// One field of the C side's mask field list (layout/layout.c): its name,
/// its extent (RLX_MASK_EXTENT_* of src/mask/mask_field_list.h) and, for a
/// per-batch array, the size of its element.
#[cfg(test)]
#[repr(C)]
pub struct rlx_field_extent_entry {
    pub name: *const std::os::raw::c_char,
    pub extent: usize,
    pub element_size: usize,
}

#[cfg(test)]
extern "C" {
    pub fn rlx_rust_layout(n: *mut usize) -> *const rlx_layout_entry;
    pub fn rlx_rust_mask_field_extents(n: *mut usize) -> *const rlx_field_extent_entry;
}
