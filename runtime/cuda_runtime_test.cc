// GPU tests of the runtime's CUDA backend (tag gpu; main() from
// //kernels:gpu_test_main prints SKIPPED and exits 77 without a device):
//  - every kernel path of CudaCompressor (top-k, fused EF top-k, random-k,
//    ADTopk, DGC, Gaussiank, RedSync, SIDCo; with and without error feedback
//    and fixed-k alignment) against the CPU Compressor over three iterations
//    with carried residuals: exact methods select the same indices and values
//    and leave the same residual bit for bit; threshold methods' selections are
//    threshold sets of the same accumulated values (their thresholds may
//    differ from the CPU's in the last bits) and conserve the gradient;
//  - whole runs over NcclCommunicator on one rank (NCCL works on one GPU)
//    with CudaCompressor and --check's oracle, for every preset the runtime
//    replays (dense, fused, scheduled, top-k, threshold, sparse allreduces).
#include <gtest/gtest.h>

#include "common/input_error.h"
#include "kernels/synthetic.h"
#include "model/plan.h"
#include "policy/presets.h"
#include "runtime/cuda_compressor.h"
#include "runtime/cuda_run.h"
#include "runtime/driver.h"
#include "runtime/nccl_communicator.h"
#include "runtime/oracle_select.h"
#include "runtime/request_cost.h"

namespace sparsefuse::runtime {
namespace {

using policy::Sparsifier;

policy::CompressionRequest request(Sparsifier s, bool ef, bool align) {
  policy::CompressionRequest r;
  r.first_tensor = 0, r.end_tensor = 2, r.elements = 6000 + 4000;
  r.sparsifier = s, r.density = 0.01, r.expected_count = 100;
  r.error_feedback = ef, r.align_to_expected = align;
  return r;
}

// compress_resident on device copies of GRAD and RESIDUAL against the host
// path's result (HOST_GOT, HOST_RESIDUAL after): the same selection, the same
// residual, and the sent values written over the gradient at the selected
// positions (elsewhere the gradient unchanged).
void expect_resident_matches(const ModelLayout& layout, const policy::CompressionRequest& r,
                             const std::vector<float>& grad, const std::vector<float>& residual,
                             const kernels::Selection& host_got, const std::vector<float>& host_residual, int it) {
  CudaCompressor gpu(layout, 0);
  kernels::cuda::DeviceBuffer<float> d_grad, d_residual;
  d_grad.upload(grad);
  d_residual.upload(residual);
  kernels::cuda::DeviceBuffer<int32_t> sent(r.elements);
  const int64_t count = gpu.compress_resident(r, d_grad.data(), d_residual.data(), {1, 0, it}, sent.data());
  const std::vector<int32_t> indices = sent.download(count);
  const std::vector<float> sent_over = d_grad.download();
  EXPECT_EQ(indices, host_got.indices);
  EXPECT_EQ(d_residual.download(), host_residual);
  std::vector<float> expected = grad;
  for (size_t j = 0; j < host_got.indices.size(); ++j) expected[size_t(host_got.indices[j])] = host_got.values[j];
  EXPECT_EQ(sent_over, expected);
}

TEST(CudaCompressor, EveryKernelPathAgainstTheCpu) {
  const ModelLayout layout{{0, 6000, 10000}, {{60, 100}, {4000}}};
  for (Sparsifier s : {Sparsifier::kTopk, Sparsifier::kRandomk, Sparsifier::kAdtopk, Sparsifier::kDgc,
                       Sparsifier::kGaussiank, Sparsifier::kRedsync, Sparsifier::kSidco}) {
    const bool exact = s == Sparsifier::kTopk || s == Sparsifier::kRandomk || s == Sparsifier::kAdtopk;
    for (bool ef : {false, true}) {
      for (bool align : exact ? std::vector<bool>{false} : std::vector<bool>{false, true}) {
        SCOPED_TRACE(policy::sparsifier_name(s) + (ef ? " ef" : "") + (align ? " aligned" : ""));
        const policy::CompressionRequest r = request(s, ef, align);
        Compressor cpu(layout);
        CudaCompressor gpu(layout, 0);
        std::vector<float> cpu_residual(10000, 0.0f), gpu_residual(10000, 0.0f);
        for (int it = 0; it < 3; ++it) {
          const std::vector<float> grad = kernels::gaussian_gradient(10000, 11 + uint64_t(it), 1e-3);
          std::vector<float> acc(10000);
          for (size_t i = 0; i < acc.size(); ++i) acc[i] = ef ? gpu_residual[i] + grad[i] : grad[i];
          const std::vector<float> old = gpu_residual;
          const kernels::Selection want = cpu.compress(r, grad.data(), cpu_residual.data(), {1, 0, it});
          const std::vector<float> before = gpu_residual;
          const kernels::Selection got = gpu.compress(r, grad.data(), gpu_residual.data(), {1, 0, it});
          // Exact methods: the same selection bit for bit (a threshold may move in its last bits between runs).
          if (exact) expect_resident_matches(layout, r, grad, before, got, gpu_residual, it);
          EXPECT_GE(gpu.last_compression_ms(), 0.0f);
          for (size_t j = 0; j < got.indices.size(); ++j) EXPECT_EQ(got.values[j], acc[size_t(got.indices[j])]);
          if (exact) {
            EXPECT_EQ(got.indices, want.indices);
            EXPECT_EQ(got.values, want.values);
            EXPECT_EQ(gpu_residual, cpu_residual);
            continue;
          }
          using oracle::ThresholdRule;
          const ThresholdRule rule = align ? (s == Sparsifier::kDgc ? ThresholdRule::kCountOnly : ThresholdRule::kTopSet)
                                           : (s == Sparsifier::kDgc ? ThresholdRule::kPrefix : ThresholdRule::kExactSet);
          EXPECT_EQ(oracle::check_threshold_selection(rule, acc.data(), 10000, 100, got.indices), "");
          if (!ef) continue;
          std::vector<float> sent(10000, 0.0f);
          for (size_t j = 0; j < got.indices.size(); ++j) sent[size_t(got.indices[j])] = got.values[j];
          for (size_t i = 0; i < sent.size(); ++i) ASSERT_EQ(sent[i] + gpu_residual[i], grad[i] + old[i]) << i;
          cpu_residual = gpu_residual;  // the threshold may differ in its last bits: go on from the GPU's state
        }
      }
    }
  }
}

// One rank, NCCL on device 0, CUDA compression, the device-resident plane
// (used where resident_refusal accepts the scheme), --check on.
RunOutcome run_on_device(const model::Scenario& s, model::ScenarioPlan& plan) {
  CommThread comm([] { return std::make_unique<NcclCommunicator>(std::make_unique<LoopbackCommunicator>()); });
  RunOptions options;
  options.check = true;
  use_cuda(options, 0, /*device_payloads=*/true);
  return run_scenario(s, plan, comm, options);
}

// Every preset in the catalog, so a preset added to the catalog is covered
// here without editing this list. The runtime replays them all: a refusal
// fails. The schemes resident_refusal accepts run with their payloads on the
// device (ResidentPayloads), the others staged through host memory.
TEST(NcclRuntime, EveryPresetOnOneRankPassesTheOracle) {
  int ran = 0, resident = 0;
  for (const std::string& preset : policy::preset_names()) {
    SCOPED_TRACE(preset);
    Json doc = {{"model", {{"trace", "tests/data/tiny3.json"}}},
                {"workers", 1},
                {"warmup_iterations", 1},
                {"iterations", 2},
                {"scheme", preset},
                {"compression", {{"density", 0.1}}}};
    const model::Scenario s = model::parse_scenario(doc, "tiny.json");
    std::unique_ptr<model::ScenarioPlan> plan;
    try {
      plan = plan_for_runtime(s, 1);
    } catch (const InputError& refused) {
      ADD_FAILURE() << refused.what();
      continue;
    }
    const RunOutcome outcome = run_on_device(s, *plan);
    EXPECT_EQ(outcome.check_failure, "");
    if (!outcome.check_failure.empty()) continue;  // no executor description then
    EXPECT_EQ(outcome.executor["device"], "cuda");
    ran += 1;
    resident += outcome.executor.value("payloads", "") == "device";
  }
  EXPECT_EQ(ran, int(policy::preset_names().size()));
  EXPECT_EQ(resident, 23) << "the presets //runtime:runtime_test's PayloadPlane test lists as resident";
}

// On buffers of a bias and a weight (the tiny3 scenario above has neither):
// SSFusion-I's hybrid buckets, whose allreduce and allgather each carry part
// of the range, gathered into and scattered out of the device payload; and
// CPU selections handed to the device (SSFusion-O sparsifying ahead, top-k so
// that the oracle recomputes them).
TEST(NcclRuntime, HybridAndOffloadedBucketsOnTheDevicePassTheOracle) {
  for (const Json& scheme : {Json("ssfusion-i"), Json{{"preset", "ssfusion-o"}, {"placement", "ahead"},
                                                      {"sparsifier", "topk"}}}) {
    SCOPED_TRACE(scheme.dump());
    Json doc = {{"model", {{"trace", "tests/data/mixed40.json"}}}, {"workers", 1}, {"warmup_iterations", 1},
                {"iterations", 2}, {"scheme", scheme}, {"compression", {{"density", 0.1}}}};
    const model::Scenario s = model::parse_scenario(doc, "mixed40.json");
    auto plan = plan_for_runtime(s, 1);
    const RunOutcome outcome = run_on_device(s, *plan);
    EXPECT_EQ(outcome.check_failure, "");
    if (outcome.check_failure.empty()) {
      EXPECT_EQ(outcome.executor["payloads"], "device");
    }
  }
}

// The engine's recorded compression of a one-tensor bucket (what
// profile-kernels records request_bookkeeping from) holds the fused EF top-k
// kernel it runs: at least that kernel's own event time at the same size,
// and far under a millisecond for 1e4 elements. Bad options are refused.
TEST(NcclRuntime, ResidentCompressionCostHoldsItsKernel) {
  RequestCostOptions o;
  o.elements = 10000;
  const double engine_us = measure_resident_compression_us(o);
  kernels::cuda::Workspace ws;
  kernels::cuda::DeviceBuffer<float> g(o.elements), r(o.elements), v(o.elements);
  kernels::cuda::DeviceBuffer<int32_t> ix(o.elements);
  kernels::cuda::fill_normal(g.data(), o.elements, 1, 1e-3f);
  kernels::cuda::fill_normal(r.data(), o.elements, 2, 1e-4f);
  const double kernel_us = kernels::cuda::median_event_time_us(
      [&] { kernels::cuda::ef_topk(r.data(), g.data(), o.elements, 100, v.data(), ix.data(), ws); }, 20);
  EXPECT_GE(engine_us, 0.9 * kernel_us) << engine_us << " us engine, " << kernel_us << " us kernel";
  EXPECT_LT(engine_us, 1000.0);
  RequestCostOptions no_elements, no_modules, too_dense;
  no_elements.elements = 0;
  no_modules.modules = 0;
  too_dense.density = 1.5;
  for (const RequestCostOptions& bad : {no_elements, no_modules, too_dense}) {
    EXPECT_THROW(measure_resident_compression_us(bad), std::invalid_argument);
  }
}

}  // namespace
}  // namespace sparsefuse::runtime
