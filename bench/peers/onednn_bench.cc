// SPDX-License-Identifier: MIT OR Apache-2.0
// The peer most CPU backends already link: oneDNN's softmax primitive (JIT,
// its own best ISA for this CPU), on the same rows as the library's kernels.
//   onednn_softmax/<workload>         plain softmax over every row, in place
//   onednn_masked_softmax/<workload>  rlx::apply_mask (best target, fill
//                                     -inf) then the same softmax: what an
//                                     executor using oneDNN would run
// One OpenMP thread, as the library's single-thread figures (set once, when
// the suite is added: libgomp on a 2-core machine shared with other work
// turned two threads into 100x slower decode calls). Rows of a type the
// installed oneDNN cannot softmax on this CPU (f16 on oneDNN 2.6) are not
// registered. Compiled only when oneDNN was found at configure time.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <dnnl.hpp>
#include <string>

#include "bench/harness/bench_util.h"
#include "bench/harness/suites.h"
#include "bench/harness/workloads.h"
#include "rlx/score_kernels.h"

namespace rlx::bench {
namespace {

dnnl::memory::data_type DataType(ScoreType type) {
  switch (type) {
    case ScoreType::kBF16:
      return dnnl::memory::data_type::bf16;
    case ScoreType::kF16:
      return dnnl::memory::data_type::f16;
    case ScoreType::kF32:
      break;
  }
  return dnnl::memory::data_type::f32;
}

dnnl::engine& Engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// The rows of `w` as a [rows, k_len] tensor, softmax over keys (axis 1).
dnnl::softmax_forward::primitive_desc SoftmaxDesc(const Workload& w) {
  const dnnl::memory::desc md({static_cast<dnnl::memory::dim>(w.shape.rows()),
                               static_cast<dnnl::memory::dim>(w.shape.k_len)},
                              DataType(w.type), dnnl::memory::format_tag::ab);
  const dnnl::softmax_forward::desc desc(dnnl::prop_kind::forward_inference, md,
                                         1);
  return dnnl::softmax_forward::primitive_desc(desc, Engine());
}

bool Supported(const Workload& w) {
  try {
    SoftmaxDesc(w);
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

void BM_OneDnn(benchmark::State& state, const Workload* w, bool masked) {
  const WorkloadData& data = Data(*w);
  const ScoreView view = FreshScores(*w);
  const auto pd = SoftmaxDesc(*w);
  const dnnl::softmax_forward softmax(pd);
  dnnl::memory memory(pd.src_desc(), Engine(), view.data);
  dnnl::stream stream(Engine());
  for (auto _ : state) {
    if (masked) apply_mask(view, data.mask);
    softmax.execute(stream, {{DNNL_ARG_SRC, memory}, {DNNL_ARG_DST, memory}});
    stream.wait();
    benchmark::ClobberMemory();
  }
  SetScoreCounters(state, *w);
}

void Register(const Workload& w) {
  if (!Supported(w)) return;
  for (bool masked : {false, true}) {
    Configure(RegisterTracked(
        BenchName({masked ? "onednn_masked_softmax" : "onednn_softmax", w.name})
            .c_str(),
        BM_OneDnn, &w, masked));
  }
}

std::string IsaName(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "other";
  }
}

bool AddOneDnn() {
  omp_set_num_threads(1);
  const dnnl_version_t* v = dnnl_version();
  benchmark::AddCustomContext(
      "onednn", std::to_string(v->major) + "." + std::to_string(v->minor) +
                    "." + std::to_string(v->patch) + " (" +
                    IsaName(dnnl::get_effective_cpu_isa()) + ", " +
                    std::to_string(1) + " OpenMP thread)");
  return AddSuite({.rank = 20, .per_workload = &Register});
}

const bool kAdded = AddOneDnn();

}  // namespace
}  // namespace rlx::bench
