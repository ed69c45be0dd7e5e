/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* Sizes and field offsets of the C API's structs and enums, as this C
 * compiler lays them out, for the Rust crate's layout test to compare with
 * its #[repr(C)] declarations (src/ffi.rs). Names are "sizeof T" and
 * "T.field". */
#include <stddef.h>

#include "rlx/rlx_attn_mask.h"
#include "src/mask/mask_field_list.h"

typedef struct {
  const char* name;
  size_t value;
} rlx_layout_entry;

#define RLX_SIZE(T) \
  { "sizeof " #T, sizeof(T) }
#define RLX_OFFSET(T, field) \
  { #T "." #field, offsetof(T, field) }

static const rlx_layout_entry kLayout[] = {
    RLX_SIZE(rlx_status),
    RLX_SIZE(rlx_score_type),
    RLX_SIZE(rlx_mask_kind),
    RLX_SIZE(rlx_dense_kind),
    RLX_SIZE(bool),
    RLX_SIZE(rlx_shape4),
    RLX_SIZE(rlx_strides3),
    RLX_SIZE(rlx_score_view),
    RLX_OFFSET(rlx_score_view, data),
    RLX_OFFSET(rlx_score_view, type),
    RLX_OFFSET(rlx_score_view, shape),
    RLX_OFFSET(rlx_score_view, strides),
    RLX_SIZE(rlx_mask_spec),
    RLX_OFFSET(rlx_mask_spec, struct_size),
/* Every field of the list that rlx::MaskSpec is (src/mask/mask_field_list.h):
 * a field added there must reach the Rust declarations too. */
#define RLX_MASK_FIELD_OFFSET(field, role, extent) \
  RLX_OFFSET(rlx_mask_spec, field),
    RLX_MASK_FIELD_LIST(RLX_MASK_FIELD_OFFSET, RLX_MASK_FIELD_NOTHING)
#undef RLX_MASK_FIELD_OFFSET
        RLX_SIZE(rlx_softmax_options),
    RLX_OFFSET(rlx_softmax_options, struct_size),
    RLX_OFFSET(rlx_softmax_options, scale),
    RLX_OFFSET(rlx_softmax_options, softcap),
    RLX_OFFSET(rlx_softmax_options, sink_logits),
    RLX_OFFSET(rlx_softmax_options, alibi_slopes),
    RLX_OFFSET(rlx_softmax_options, row_lse),
    RLX_OFFSET(rlx_softmax_options, zero_masked),
    RLX_SIZE(rlx_row_range),
    RLX_SIZE(rlx_key_interval),
    RLX_SIZE(rlx_kept_intervals),
    RLX_OFFSET(rlx_kept_intervals, intervals),
    RLX_OFFSET(rlx_kept_intervals, count),
    RLX_SIZE(rlx_block_mask_view),
    RLX_OFFSET(rlx_block_mask_view, q_blocks),
    RLX_OFFSET(rlx_block_mask_view, k_blocks),
    RLX_OFFSET(rlx_block_mask_view, kv_num_blocks),
    RLX_OFFSET(rlx_block_mask_view, kv_indices),
    RLX_OFFSET(rlx_block_mask_view, full_kv_num_blocks),
    RLX_OFFSET(rlx_block_mask_view, full_kv_indices),
    RLX_SIZE(rlx_block_list),
    RLX_OFFSET(rlx_block_list, num_blocks),
    RLX_OFFSET(rlx_block_list, indices),
    RLX_OFFSET(rlx_block_list, full_num_blocks),
    RLX_OFFSET(rlx_block_list, full_indices),
    RLX_OFFSET(rlx_block_list, batch),
    RLX_OFFSET(rlx_block_list, heads),
    RLX_OFFSET(rlx_block_list, q_blocks),
    RLX_OFFSET(rlx_block_list, max_blocks),
    RLX_OFFSET(rlx_block_list, q_block),
    RLX_OFFSET(rlx_block_list, k_block),
    RLX_SIZE(rlx_softmax_part),
    RLX_OFFSET(rlx_softmax_part, probs),
    RLX_OFFSET(rlx_softmax_part, row_lse),
    RLX_SIZE(rlx_key_range),
    RLX_OFFSET(rlx_key_range, begin),
    RLX_OFFSET(rlx_key_range, end),
    RLX_SIZE(rlx_softmax_part_stats),
    RLX_OFFSET(rlx_softmax_part_stats, log_scale),
    RLX_OFFSET(rlx_softmax_part_stats, sum),
    RLX_SIZE(rlx_ladder_cost),
    RLX_OFFSET(rlx_ladder_cost, model),
    RLX_OFFSET(rlx_ladder_cost, fn),
    RLX_OFFSET(rlx_ladder_cost, user_data),
    {"RLX_MAX_KEPT_INTERVALS", RLX_MAX_KEPT_INTERVALS},
    {"RLX_MASK_KEEP_BITS", RLX_MASK_KEEP_BITS},
    {"RLX_DENSE_BIAS", RLX_DENSE_BIAS},
};

/* Each field of the list with its extent (RLX_MASK_EXTENT_*) and, for a
 * per-batch array, the size of its element: the Rust crate's length checks
 * are tested against them (src/layout_tests.rs). */
typedef struct {
  const char* name;
  size_t extent;
  size_t element_size;
} rlx_field_extent_entry;

#define RLX_ELEMENT_SIZE_kScalar(field) 0
#define RLX_ELEMENT_SIZE_kDenseShape(field) 0
#define RLX_ELEMENT_SIZE_kOwnShape(field) 0
#define RLX_ELEMENT_SIZE_ARRAY(field) sizeof(*((rlx_mask_spec*)0)->field)
#define RLX_ELEMENT_SIZE_kBatch(field) RLX_ELEMENT_SIZE_ARRAY(field)
#define RLX_ELEMENT_SIZE_kBatchQuery(field) RLX_ELEMENT_SIZE_ARRAY(field)
#define RLX_ELEMENT_SIZE_kBatchKey(field) RLX_ELEMENT_SIZE_ARRAY(field)
#define RLX_FIELD_EXTENT_ENTRY(field, role, extent) \
  {#field, RLX_MASK_EXTENT_##extent, RLX_ELEMENT_SIZE_##extent(field)},

static const rlx_field_extent_entry kFieldExtents[] = {
    RLX_MASK_FIELD_LIST(RLX_FIELD_EXTENT_ENTRY, RLX_MASK_FIELD_NOTHING)};

const rlx_field_extent_entry* rlx_rust_mask_field_extents(size_t* n);

const rlx_field_extent_entry* rlx_rust_mask_field_extents(size_t* n) {
  *n = sizeof(kFieldExtents) / sizeof(kFieldExtents[0]);
  return kFieldExtents;
}

const rlx_layout_entry* rlx_rust_layout(size_t* n);

const rlx_layout_entry* rlx_rust_layout(size_t* n) {
  *n = sizeof(kLayout) / sizeof(kLayout[0]);
  return kLayout;
}
