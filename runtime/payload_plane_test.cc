// The engine's payload-plane seam without a GPU: a test plane that keeps its
// own copies of the gradient, residual and average in host memory and runs
// the host kernels on them, so that whatever the engine still reads from its
// own buffers (instead of the plane's) shows up as a --check failure. The CUDA
// plane (ResidentPayloads) runs the same presets in //runtime:cuda_runtime_test.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "model/plan.h"
#include "policy/planned_scheme.h"
#include "policy/presets.h"
#include "runtime/driver.h"
#include "runtime/payload_plane.h"

namespace sparsefuse::runtime {
namespace {

class HostPlane : public PayloadPlane {
 public:
  struct Calls {
    int all = 0, adopted = 0;  // every plane call; adopt_selection's
  };
  explicit HostPlane(const ModelLayout& layout, Calls* calls)
      : layout_(layout), compressor_(layout), gradient_(size_t(layout.total())), residual_(gradient_.size(), 0.0f),
        aggregate_(gradient_.size(), 0.0f), selections_(size_t(layout.tensors())), calls_(calls) {}
  void load_gradient(const float* gradient) override { gradient_.assign(gradient, gradient + gradient_.size()); }
  int64_t compress(const policy::CompressionRequest& r, int slot, const SelectionKey& key) override {
    ++calls_->all;
    RangeSelection& s = selections_.at(size_t(slot));
    s = {r.first_tensor, r.end_tensor, compressor_.compress(r, gradient_.data(), residual_.data(), key)};
    float* send = gradient_.data() + layout_.offset[r.first_tensor];  // the gradient is the send buffer
    for (size_t j = 0; j < s.selection.indices.size(); ++j) send[s.selection.indices[j]] = s.selection.values[j];
    return int64_t(s.selection.size());
  }
  void adopt_selection(int slot, const RangeSelection& selection) override {
    ++calls_->all, ++calls_->adopted;
    selections_.at(size_t(slot)) = selection;
  }
  void fill(BucketExchange& x) override {
    ++calls_->all;
    fill_payload(x, layout_, gradient_.data(), selections_);
  }
  void run_collective(BucketExchange& x, Communicator& comm) override { runtime::run_collective(x, comm); }
  void apply_result(BucketExchange& x, Communicator& comm) override {
    if (x.bucket.collective == Collective::kReduceScatter) {  // the plane keeps the shard, not the engine
      std::vector<float>& shard = shards_[x.stage];
      shard.resize(size_t(x.shard));
      x.shard_out = shard.data();
    }
    runtime::apply_result(x, layout_, comm.size(), aggregate_.data(), scratch_);
  }
  void all_gather_stage(int stage, const policy::Bucket& group, Communicator& comm) override {
    ++calls_->all;
    const std::vector<float>& shard = shards_.at(stage);
    std::vector<float> gathered(shard.size() * size_t(comm.size()));
    comm.allgather_values(shard.data(), gathered.data(), int64_t(shard.size()));
    std::copy(gathered.begin(), gathered.begin() + group.elements, aggregate_.begin() + layout_.offset[group.first_tensor]);
  }
  void copy_to_host(std::vector<float>& aggregate, std::vector<float>& residual,
                    const std::vector<std::unique_ptr<BucketExchange>>&) override {
    aggregate = aggregate_;
    residual = residual_;
  }

 private:
  const ModelLayout& layout_;
  Compressor compressor_;
  std::vector<float> gradient_, residual_, aggregate_, scratch_;
  std::vector<RangeSelection> selections_;
  std::map<int, std::vector<float>> shards_;  // DeAR: by forward stage
  Calls* calls_;
};

// One rank over the loopback communicator, --check on, payloads in a HostPlane
// that counts its calls in CALLS.
RunOutcome run_through_host_plane(const model::Scenario& s, model::ScenarioPlan& plan, HostPlane::Calls* calls) {
  CommThread comm([] { return std::make_unique<LoopbackCommunicator>(); });
  RunOptions options;
  options.check = true;
  options.transport = "loopback";
  options.make_plane = [calls](const ModelLayout& layout) { return std::make_unique<HostPlane>(layout, calls); };
  return run_scenario(s, plan, comm, options);
}

// Hand-listed: the presets whose payloads may stay on the device, for this
// scenario (a plan's acceptance depends on its buffers: HiPress here sends no
// tensor through its CaSync ring, Espresso compresses none on the CPU).
const std::set<std::string> kResident = {
    "adtopk",  "adtopk-h", "adtopk-i", "adtopk-p", "cupcake",  "ddp",    "dear",           "espresso",
    "fgbuff",  "hipress",  "horovod",  "mgwfbp",   "omgs",     "rgmerge", "rgmerge-dynamic", "saf",
    "ssfusion", "ssfusion-i", "ssfusion-o", "syncea", "syncea-topk", "topk-layerwise", "wfbp"};

TEST(PayloadPlane, EveryAcceptedPresetPassesTheOracleThroughThePlane) {
  std::set<std::string> accepted;
  for (const std::string& preset : policy::preset_names()) {
    SCOPED_TRACE(preset);
    Json doc = {{"model", {{"trace", "tests/data/tiny3.json"}}}, {"workers", 1},     {"warmup_iterations", 1},
                {"iterations", 2},   {"scheme", preset}, {"compression", {{"density", 0.1}}}};
    const model::Scenario s = model::parse_scenario(doc, "tiny.json");
    auto plan = plan_for_runtime(s, 1);
    const std::string refusal = resident_refusal(plan->scheme());
    if (refusal.empty()) accepted.insert(preset);
    HostPlane::Calls calls;
    const RunOutcome outcome = run_through_host_plane(s, *plan, &calls);
    EXPECT_EQ(outcome.check_failure, "");
    if (!outcome.check_failure.empty()) continue;
    EXPECT_EQ(outcome.executor["payloads"], refusal.empty() ? "device" : "host-staged (" + refusal + ")");
    EXPECT_EQ(calls.all > 0, refusal.empty()) << "the plane packs every flush of an accepted scheme";
  }
  EXPECT_EQ(accepted, kResident);
}

// SCHEME on tests/data/mixed40.json (a bias and a 200 x 500 weight per
// buffer of two), one rank, through a HostPlane counting into CALLS; the
// scheme must be accepted and pass --check.
RunOutcome mixed40_through_host_plane(const Json& scheme, HostPlane::Calls* calls) {
  Json doc = {{"model", {{"trace", "tests/data/mixed40.json"}}}, {"workers", 1}, {"warmup_iterations", 1},
              {"iterations", 2}, {"scheme", scheme}, {"compression", {{"density", 0.1}}}};
  const model::Scenario s = model::parse_scenario(doc, "mixed40.json");
  auto plan = plan_for_runtime(s, 1);
  EXPECT_EQ(resident_refusal(plan->scheme()), "");
  RunOutcome outcome = run_through_host_plane(s, *plan, calls);
  EXPECT_EQ(outcome.check_failure, "");
  if (outcome.check_failure.empty()) {
    EXPECT_EQ(outcome.executor["payloads"], "device");
  }
  return outcome;
}

// SSFusion-I's buffers of a bias and a weight are hybrid: the bias's
// allreduce and the weight's allgather each carry part of the range (the
// plane gathers, and scatters back, only the carried tensors).
TEST(PayloadPlane, HybridBucketsCarryPartOfTheirRangeThroughThePlane) {
  HostPlane::Calls calls;
  const RunOutcome outcome = mixed40_through_host_plane("ssfusion-i", &calls);
  int partial_allreduces = 0, partial_allgathers = 0;
  for (const auto& b : outcome.result.buckets) {
    if (b.bucket.tensors() != 2 || b.bucket.elements >= 100'100) continue;
    partial_allreduces += b.bucket.collective == Collective::kAllreduce;
    partial_allgathers += b.bucket.collective == Collective::kAllgather;
  }
  EXPECT_GT(partial_allreduces, 0);
  EXPECT_GT(partial_allgathers, 0);
}

// CPU selections (SSFusion-O's, no error feedback) are made from the host
// copy of the gradient and handed to the plane, which packs them with the
// GPU's; with error feedback an offloaded selection stays on the host path.
// The preset's greedy walk offloads nothing on this small trace; sparsifying
// ahead of fusion offloads the 20 biases. Top-k, so that the oracle, which
// recomputes exact selections, would miss a selection the plane never got.
TEST(PayloadPlane, CpuSelectionsAreHandedToThePlane) {
  Json scheme = {{"preset", "ssfusion-o"}, {"placement", "ahead"}, {"sparsifier", "topk"}};
  HostPlane::Calls calls;
  mixed40_through_host_plane(scheme, &calls);
  EXPECT_GT(calls.adopted, 0) << "the plan offloads no selection on this trace: the test tests nothing";
  scheme["error_feedback"] = "tensor";
  Json doc = {{"model", {{"trace", "tests/data/mixed40.json"}}}, {"workers", 1}, {"scheme", scheme}};
  EXPECT_EQ(resident_refusal(plan_for_runtime(model::parse_scenario(doc, "mixed40.json"), 1)->scheme()),
            "error feedback of a CPU-offloaded selection lives on the host");
}

// A plan is resident when every buffer is a dense allreduce or an allgather
// of an inline selection.
TEST(PayloadPlane, APlanIsResidentWhenEveryBufferIs) {
  Trace trace;
  trace.model = "hand";
  trace.batch_size = 1;
  trace.backward_ns = 20;
  trace.tensors.push_back({"a", {100}, 100, 10, 0, true, 0});
  trace.tensors.push_back({"b", {100}, 100, 20, 0, true, 0});
  const policy::GradientModel m = policy::GradientModel::from_trace(trace, 1.0);
  auto refusal = [&](policy::PlannedBuffer second) {
    second.first = 1, second.end = 2;
    return resident_refusal(policy::PlannedScheme(m, {}, {{0, 1, policy::Route::kDense}, second}));
  };
  EXPECT_EQ(refusal({0, 0, policy::Route::kAllgather}), "");
  EXPECT_EQ(refusal({0, 0, policy::Route::kAllgather, policy::Placement::kCpuOffload}),
            "it compresses off the compute stream");
  EXPECT_EQ(refusal({0, 0, policy::Route::kSparseAllreduce, policy::Placement::kGpuInline,
                     policy::SparseAllreduce::kOkTopk}),
            "its buckets are sparse allreduces");
}

// A negotiated merge aligns its selection to k on every worker: a threshold
// sparsifier there is refused as a worker policy's would be.
TEST(PayloadPlane, NegotiatedThresholdMergesStayOnTheHost) {
  auto refusal = [](Json scheme) {
    Json doc = {{"model", {{"trace", "tests/data/tiny3.json"}}}, {"workers", 1}, {"scheme", std::move(scheme)}};
    return resident_refusal(plan_for_runtime(model::parse_scenario(doc, "tiny.json"), 1)->scheme());
  };
  EXPECT_EQ(refusal("horovod"), "");
  EXPECT_EQ(refusal({{"preset", "rgmerge-dynamic"}, {"sparsifier", "topk"}}), "");
  EXPECT_EQ(refusal({{"preset", "rgmerge-dynamic"}, {"sparsifier", "dgc"}}), "fixed-k alignment of a threshold sparsifier");
  EXPECT_EQ(refusal({{"preset", "saf"}, {"alignment", "fixed-k"}}), "fixed-k alignment of a threshold sparsifier");
}

}  // namespace
}  // namespace sparsefuse::runtime
