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

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rlx_mask_spec {
    pub kind: rlx_mask_kind,
    pub window: usize,
    pub past: usize,
    pub upper: usize,
    pub data: *const c_void,
    pub shape: rlx_shape4,
    pub strides: rlx_strides3,
    pub query_offsets: *const i64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rlx_softmax_options {
    pub scale: f32,
    pub softcap: f32,
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
    pub intervals: [rlx_key_interval; 2],
    pub count: usize,
}

extern "C" {
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
}
