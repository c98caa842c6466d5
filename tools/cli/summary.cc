#include "tools/cli/summary.h"

#include <fmt/format.h>

namespace sparsefuse::cli {

static std::string ms(double seconds) { return fmt::format("{:.3f} ms", seconds * 1e3); }

static std::string describe_network(const model::Scenario& s) {
  const auto& n = s.network;
  std::string out;
  if (n.model == "flat") {
    out = fmt::format("flat network {} us, {} Gb/s, {} allreduce", n.latency_us, n.bandwidth_gbps, n.allreduce);
  } else if (n.model == "nccl") {
    out = "NCCL's algorithm x protocol model";
  } else if (n.model == "seed-table") {
    out = "the seed code's 8-node collective time table";
  } else {
    out = "measured collective times from " + n.profile;
  }
  if (s.topology) {
    const auto& t = *s.topology;
    out += fmt::format(" on {}{} x {} GPUs, {} x {} Gb/s NICs per node, link contention",
                       t.preset.empty() ? "" : t.preset + ": ", t.nodes, t.gpus_per_node, t.nics_per_node, t.nic_gbps);
  }
  return out;
}

std::string format_summary(const model::Scenario& s, const model::RunResult& r) {
  int with_grad = 0;
  for (const auto& t : s.trace.tensors) with_grad += t.has_grad;
  const auto& b = r.breakdown;
  std::string knobs;
  for (auto it = s.scheme.resolved.begin(); it != s.scheme.resolved.end(); ++it) {
    if (it.key() != "preset") knobs += fmt::format("{}{}={}", knobs.empty() ? "" : ", ", it.key(), it.value().dump());
  }
  Json result = r.to_json();
  const Json& t = result["iteration_time_s"];
  std::string out;
  out += fmt::format("scenario    {}\n", s.file);
  out += fmt::format("model       {} ({} trace): {} tensors ({} with gradients), {:.1f} M parameters, batch {}/worker\n",
                     s.trace.model, r.provenance, s.trace.tensors.size(), with_grad, double(s.trace.parameters()) / 1e6,
                     s.batch_per_worker);
  out += fmt::format("cluster     {} workers; {}\n", s.workers, describe_network(s));
  out += fmt::format("scheme      {}{}\n", s.scheme.preset, knobs.empty() ? "" : " (" + knobs + ")");
  out += fmt::format("iterations  {} measured after {} warm-up, seed {}\n\n", s.iterations, s.warmup_iterations, s.seed);
  out += fmt::format("iteration time  mean {}  p50 {}  p99 {}  min {}  max {}\n", ms(t["mean"]), ms(t["p50"]),
                     ms(t["p99"]), ms(t["min"]), ms(t["max"]));
  out += fmt::format("throughput      {:.1f} samples/s\n", r.throughput());
  out += "breakdown per iteration (mean over workers)\n";
  out += fmt::format("  forward {}  backward {}  compression {}\n", ms(b.forward), ms(b.backward), ms(b.compression));
  out += fmt::format("  exposed communication {}  sync wait {}  optimizer {}\n", ms(b.communication_exposed),
                     ms(b.sync_wait), ms(b.optimizer));
  out += fmt::format("buckets         {} collectives per iteration, {:.2f} MiB sent per worker", r.buckets.size(),
                     r.bytes_sent_per_worker / (1 << 20));
  if (r.lost_contributions > 0) out += fmt::format(", {:.0f} contributions lost (equal slices)", r.lost_contributions);
  out += "\n";
  if (r.plan.contains("tensor_missing_rate")) {
    out += fmt::format("plan            {} buffers, {} dense tensors, {} on CPU, tensor missing rate {:.3f}\n",
                       r.plan["buffers"].get<int>(), r.plan["dense_tensors"].get<int>(),
                       r.plan["cpu_offloaded_tensors"].get<int>(), r.plan["tensor_missing_rate"].get<double>());
  }
  out += fmt::format("simulator       {} queue events and {} worker steps in {:.3f} s ({:.0f} worker-iterations/s)\n",
                     r.queue_events, r.worker_steps, r.wall_s, double(r.worker_iterations) / r.wall_s);
  return out;
}

}  // namespace sparsefuse::cli
