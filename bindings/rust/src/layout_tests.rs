// SPDX-License-Identifier: MIT OR Apache-2.0
//! The #[repr(C)] declarations of src/ffi.rs against the C compiler's
//! layout of include/rlx/rlx_attn_mask.h: every size and field offset the C
//! side lists (layout/layout.c, built by build.rs) must equal Rust's, and
//! every Rust entry must be listed there, so that a field added, moved or
//! retyped on one side only fails here instead of corrupting calls.

use std::collections::BTreeMap;
use std::ffi::CStr;
use std::mem::{size_of, MaybeUninit};
use std::os::raw::c_char;
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

/// The entries of a static C table of layout.c, each with its name.
fn c_table<E>(
    get: unsafe extern "C" fn(*mut usize) -> *const E,
    name: fn(&E) -> *const c_char,
) -> Vec<(String, &'static E)> {
    let mut n = 0usize;
    // SAFETY: layout.c's tables are static arrays of n entries, each named
    // by a NUL-terminated static string.
    let entries = unsafe { std::slice::from_raw_parts(get(&mut n), n) };
    entries
        .iter()
        .map(|e| {
            (
                unsafe { CStr::from_ptr(name(e)) }
                    .to_string_lossy()
                    .into_owned(),
                e,
            )
        })
        .collect()
}

fn c_layout() -> BTreeMap<String, usize> {
    c_table(rlx_rust_layout, |e| e.name)
        .into_iter()
        .map(|(name, e)| (name, e.value))
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

/// The C field list's extents (src/mask/mask_field_list.h): name, extent
/// code, element size.
fn c_field_extents() -> Vec<(String, usize, usize)> {
    c_table(rlx_rust_mask_field_extents, |e| e.name)
        .into_iter()
        .map(|(name, e)| (name, e.extent, e.element_size))
        .collect()
}

/// A mask with `field` set to `a32` or `a64` (whichever is its type) and any
/// other side of a pair to `other32`, and the size of the Rust element; None
/// for a field this crate has no builder for.
fn with_field<'a>(
    field: &str,
    a32: &'a [i32],
    a64: &'a [i64],
    other32: &'a [i32],
) -> Option<(crate::scores::MaskSpec<'a>, usize)> {
    use crate::scores::Mask;
    let m = Mask::Causal;
    let (i32s, i64s) = (size_of::<i32>(), size_of::<i64>());
    Some(match field {
        "query_offsets" => (m.with_query_offsets(a64), i64s),
        "prefix_end" => (m.with_prefix(a64), i64s),
        "q_segment" => (m.with_segments(a32, other32), i32s),
        "k_segment" => (m.with_segments(other32, a32), i32s),
        "q_position" => (m.with_positions(Some(a64), None), i64s),
        "k_position" => (m.with_positions(None, Some(a64)), i64s),
        "q_group" => (m.with_groups(a32, other32), i32s),
        "k_group" => (m.with_groups(other32, a32), i32s),
        _ => return None,
    })
}

/// Every per-batch array of the C field list has a Rust builder whose
/// element has the C element's size, and the crate's length check accepts
/// exactly the list's extent ([batch], [batch, q_len] or [batch, k_len])
/// and rejects one element less, naming the field.
#[test]
fn rust_length_checks_follow_the_field_list() {
    use crate::scores::{extent_of, Shape};
    const BATCH: usize = 1;
    const BATCH_QUERY: usize = 2;
    const BATCH_KEY: usize = 3;
    let shape = Shape::new(2, 3, 5, 7);
    let long = vec![0i32; 64];
    let mut probed = 0;
    for (field, extent, element_size) in c_field_extents() {
        let per_batch = match extent {
            BATCH => 1,
            BATCH_QUERY => shape.q_len,
            BATCH_KEY => shape.k_len,
            _ => continue,
        };
        let need = shape.batch * per_batch;
        for len in [need, need - 1] {
            let (a32, a64) = (vec![0i32; len], vec![0i64; len]);
            let (spec, rust_size) = with_field(&field, &a32, &a64, &long).unwrap_or_else(|| {
                panic!("{field}: a per-batch array of the C field list with no Rust builder here")
            });
            assert_eq!(rust_size, element_size, "{field}: element size, Rust vs C");
            let got = spec.to_ffi("probe", extent_of(shape));
            if len == need {
                assert!(
                    got.is_ok(),
                    "{field}: {len} elements rejected: {:?}",
                    got.err()
                );
            } else {
                let e = got.expect_err(&format!("{field}: {len} elements accepted, {need} needed"));
                assert!(e.to_string().contains(&field), "{field}: message {e}");
            }
        }
        probed += 1;
    }
    assert_eq!(probed, 8, "per-batch arrays in the C field list");
}
