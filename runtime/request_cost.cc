#include "runtime/request_cost.h"

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/json_reader.h"
#include "common/median.h"
#include "model/scenario.h"
#include "runtime/comm_thread.h"
#include "runtime/communicator.h"
#include "runtime/cuda_run.h"
#include "runtime/driver.h"
#include "runtime/flush_cost.h"
#include "runtime/nccl_communicator.h"

namespace sparsefuse::runtime {

double measure_resident_compression_us(const RequestCostOptions& o) {
  if (o.elements < 1 || o.modules < 1 || o.iterations < 1 || !(o.density > 0 && o.density <= 1)) {
    throw std::invalid_argument("request cost: expected elements, modules, iterations >= 1 and density in (0, 1]");
  }
  const std::string trace = write_module_pairs_trace(std::vector<int64_t>(size_t(2 * o.modules), o.elements));
  const Json doc = {{"model", {{"trace", trace}}},
                    {"workers", 1},
                    {"warmup_iterations", 1},
                    {"iterations", o.iterations},
                    {"scheme", o.scheme},
                    {"compression", {{"density", o.density}}}};
  const model::Scenario scenario = model::parse_scenario(doc, "request_cost");
  std::remove(trace.c_str());
  const std::unique_ptr<model::ScenarioPlan> planned = plan_for_runtime(scenario, 1);
  const int device = NcclCommunicator::device_for(0);
  CommThread comm([] { return std::make_unique<NcclCommunicator>(std::make_unique<LoopbackCommunicator>()); });
  RunOptions options;
  use_cuda(options, device, /*device_payloads=*/true);
  const RunOutcome outcome = run_scenario(scenario, *planned, comm, options);
  std::vector<double> us;
  for (const model::BucketRecord& b : outcome.result.buckets) us.push_back(b.compression_s * 1e6);
  if (us.empty()) throw std::logic_error("request cost: the run recorded no bucket");
  return median(us);
}

}  // namespace sparsefuse::runtime
