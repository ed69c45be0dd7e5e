// SPDX-License-Identifier: MIT OR Apache-2.0
//! The #[repr(C)] declarations of src/ffi.rs against the C compiler's
//! layout of include/rlx/rlx_attn_mask.h: every size and field offset the C
//! side lists (layout/layout.c, built by build.rs) must equal Rust's, and
//! every Rust entry must be listed there, so that a field added, moved or
//! retyped on one side only fails here instead of corrupting calls.

use std::collections::BTreeMap;
use std::ffi::CStr;
use std::mem::{size_of, MaybeUninit};
use std::ptr::addr_of;

use crate::ffi::*;
use crate::ladder_fit::RawCost;

/// The byte offset of `$field` in `$t`, without creating a reference to
/// uninitialised memory (offset_of! needs a newer Rust than the crate's
/// minimum).
macro_rules! offset {
    ($t:ty, $field:ident) => {{
        let value = MaybeUninit::<$t>::uninit();
        let base = value.as_ptr();
        // SAFETY: addr_of! computes the field's address without reading it.
        let field = unsafe { addr_of!((*base).$field) };
        field as usize - base as usize
    }};
}

fn rust_layout() -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    let mut size = |name: &str, value: usize| {
        m.insert(format!("sizeof {name}"), value);
    };
    size("rlx_status", size_of::<rlx_status>());
    size("rlx_score_type", size_of::<rlx_score_type>());
    size("rlx_mask_kind", size_of::<rlx_mask_kind>());
    size("rlx_dense_kind", size_of::<rlx_dense_kind>());
    size("bool", size_of::<bool>());
    size("rlx_shape4", size_of::<rlx_shape4>());
    size("rlx_strides3", size_of::<rlx_strides3>());
    size("rlx_score_view", size_of::<rlx_score_view>());
    size("rlx_mask_spec", size_of::<rlx_mask_spec>());
    size("rlx_softmax_options", size_of::<rlx_softmax_options>());
    size("rlx_row_range", size_of::<rlx_row_range>());
    size("rlx_key_interval", size_of::<rlx_key_interval>());
    size("rlx_kept_intervals", size_of::<rlx_kept_intervals>());
    size("rlx_block_mask_view", size_of::<rlx_block_mask_view>());
    size("rlx_block_list", size_of::<rlx_block_list>());
    size("rlx_softmax_part", size_of::<rlx_softmax_part>());
    size("rlx_key_range", size_of::<rlx_key_range>());
    size(
        "rlx_softmax_part_stats",
        size_of::<rlx_softmax_part_stats>(),
    );
    size("rlx_ladder_cost", size_of::<RawCost>());
    macro_rules! fields {
        ($c:literal, $t:ty: $($f:ident $(= $cf:literal)?),* $(,)?) => {
            $(
                #[allow(unused_mut, unused_assignments)]
                let mut c_field = stringify!($f);
                $(c_field = $cf;)?
                m.insert(format!("{}.{}", $c, c_field), offset!($t, $f));
            )*
        };
    }
    fields!("rlx_score_view", rlx_score_view: data, type_ = "type", shape, strides);
    fields!("rlx_mask_spec", rlx_mask_spec: struct_size, kind, window, past, upper, data,
            shape, strides, query_offsets, window_keys, chunk, sink_keys, prefix_end,
            q_segment, k_segment, q_position, k_position, dense, window_keys_after, q_group,
            k_group, key_indices, key_indices_shape, block_list);
    fields!("rlx_block_list", rlx_block_list: num_blocks, indices, full_num_blocks,
            full_indices, batch, heads, q_blocks, max_blocks, q_block, k_block);
    fields!("rlx_softmax_options", rlx_softmax_options: struct_size, scale, softcap,
            sink_logits, alibi_slopes, row_lse, zero_masked);
    fields!("rlx_kept_intervals", rlx_kept_intervals: intervals, count);
    fields!("rlx_block_mask_view", rlx_block_mask_view: q_blocks, k_blocks, kv_num_blocks,
            kv_indices, full_kv_num_blocks, full_kv_indices);
    fields!("rlx_softmax_part", rlx_softmax_part: probs, row_lse);
    fields!("rlx_key_range", rlx_key_range: begin, end);
    fields!("rlx_softmax_part_stats", rlx_softmax_part_stats: log_scale, sum);
    fields!("rlx_ladder_cost", RawCost: model, cost_fn = "fn", user_data);
    m.insert("RLX_MAX_KEPT_INTERVALS".into(), RLX_MAX_KEPT_INTERVALS);
    m.insert("RLX_MASK_KEEP_BITS".into(), RLX_MASK_KEEP_BITS as usize);
    m.insert("RLX_DENSE_BIAS".into(), RLX_DENSE_BIAS as usize);
    m
}

fn c_layout() -> BTreeMap<String, usize> {
    let mut n = 0usize;
    // SAFETY: returns a static table of n entries with static C strings.
    let table = unsafe { rlx_rust_layout(&mut n) };
    let entries = unsafe { std::slice::from_raw_parts(table, n) };
    entries
        .iter()
        .map(|e| {
            // SAFETY: each name is a NUL-terminated static string.
            let name = unsafe { CStr::from_ptr(e.name) };
            (name.to_string_lossy().into_owned(), e.value)
        })
        .collect()
}

#[test]
fn rust_structs_have_the_c_layout() {
    let c = c_layout();
    let rust = rust_layout();
    assert!(c.len() >= 40, "the C table is short: {c:?}");
    let mut mismatches = Vec::new();
    for (name, value) in &c {
        match rust.get(name) {
            Some(r) if r == value => {}
            Some(r) => mismatches.push(format!("{name}: C {value}, Rust {r}")),
            None => mismatches.push(format!("{name}: C {value}, not checked in Rust")),
        }
    }
    for name in rust.keys().filter(|n| !c.contains_key(*n)) {
        mismatches.push(format!("{name}: not in the C table (layout/layout.c)"));
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn init_values_match_the_c_header() {
    let m = rlx_mask_spec::new();
    assert_eq!(m.struct_size, size_of::<rlx_mask_spec>());
    assert_eq!((m.kind, m.dense), (RLX_MASK_NONE, RLX_DENSE_NONE));
    let o = rlx_softmax_options::new();
    assert_eq!(o.struct_size, size_of::<rlx_softmax_options>());
    assert_eq!((o.scale, o.softcap, o.zero_masked), (1.0, 0.0, true));
}
