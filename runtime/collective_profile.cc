#include "runtime/collective_profile.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <stdexcept>

#include <fmt/format.h>

#include "common/input_error.h"
#include "common/median.h"
#include "common/provenance.h"

namespace sparsefuse::runtime {

namespace {

// Bytes of one "element" as profile_sizes rounds them: a float per rank
// (allreduce), a (float, int32) pair from every rank (allgather's output), a
// float to every rank (reduce-scatter's input).
int64_t unit_bytes(Collective collective, int ranks) {
  switch (collective) {
    case Collective::kAllreduce: return 4;
    case Collective::kAllgather: return 8 * int64_t(ranks);
    case Collective::kReduceScatter: return 4 * int64_t(ranks);
    case Collective::kBroadcast: break;  // the runtime broadcasts nothing a scheme times
  }
  throw std::logic_error("profile-collectives times allreduce, allgather and reduce-scatter only");
}

double bus_factor(Collective collective, int ranks) {
  const double p = ranks;
  return collective == Collective::kAllreduce ? 2 * (p - 1) / p : (p - 1) / p;
}

void check_range(const char* option, int64_t value, int64_t low, int64_t high) {
  if (value < low || value > high) {
    throw InputError(option, "", fmt::format("expected an integer in [{}, {}], got {}", low, high, value));
  }
}

}  // namespace

void validate(const CollectiveProfileOptions& o) {
  check_range("--min-bytes", o.min_bytes, 1, kMaxProfileBytes);
  check_range("--max-bytes", o.max_bytes, 1, kMaxProfileBytes);
  if (o.min_bytes > o.max_bytes) {
    throw InputError("--min-bytes", "",
                     fmt::format("expected at most --max-bytes ({}), got {}", o.max_bytes, o.min_bytes));
  }
  check_range("--warmup", o.warmup, 0, 1'000'000);
  check_range("--iterations", o.iterations, 1, 1'000'000);
  check_range("--working-set", o.working_set, 0, kMaxWorkingSetBytes);
}

const std::vector<Collective>& profiled_collectives() {
  static const std::vector<Collective> all = {Collective::kAllreduce, Collective::kAllgather,
                                              Collective::kReduceScatter};
  return all;
}

std::vector<int64_t> profile_sizes(Collective collective, int ranks, int64_t min_bytes, int64_t max_bytes) {
  const int64_t unit = unit_bytes(collective, ranks);
  std::vector<int64_t> sizes;
  for (int64_t nominal = min_bytes; nominal <= max_bytes; nominal *= 2) {
    const int64_t bytes = std::max<int64_t>(1, nominal / unit) * unit;
    if (sizes.empty() || sizes.back() != bytes) sizes.push_back(bytes);
  }
  return sizes;
}

double time_collective(Communicator& comm, Collective collective, int64_t bytes, int warmup, int iterations,
                       int64_t working_set) {
  const int P = comm.size();
  const int64_t n = bytes / unit_bytes(collective, P);  // floats or pairs per rank (reduce-scatter: received)
  // Per copy of the buffers: the lengths of send (values), receive, and for
  // the allgather the indices in and out; the bytes one repetition touches.
  int64_t send_n = n, receive_n = 0, index_n = 0;
  if (collective == Collective::kAllgather) receive_n = n * P, index_n = n;
  if (collective == Collective::kReduceScatter) send_n = n * P, receive_n = n;
  const int64_t footprint = 4 * (send_n + receive_n + index_n + index_n * P);
  const int64_t copies = std::max<int64_t>(1, working_set / footprint);
  // Zeros stay zeros under repeated in-place sums, so no repetition meets
  // infinities or denormals.
  std::vector<float> send(size_t(send_n * copies), 0.0f), receive(size_t(receive_n * copies));
  std::vector<int32_t> indices(size_t(index_n * copies), 0), all_indices(size_t(index_n * P * copies));
  const std::vector<int64_t> counts(size_t(P), n);
  std::function<void(int64_t)> run;  // on copy K
  switch (collective) {
    case Collective::kAllreduce:
      run = [&](int64_t k) { comm.allreduce_sum(&send[size_t(k * n)], &send[size_t(k * n)], n); };
      break;
    case Collective::kAllgather:
      run = [&](int64_t k) {
        comm.allgatherv(&send[size_t(k * n)], &indices[size_t(k * n)], counts, &receive[size_t(k * n * P)],
                        &all_indices[size_t(k * n * P)]);
      };
      break;
    case Collective::kReduceScatter:
      run = [&](int64_t k) { comm.reduce_scatter_sum(&send[size_t(k * n * P)], &receive[size_t(k * n)], n); };
      break;
    case Collective::kBroadcast: break;  // unreachable: unit_bytes refused it above
  }
  for (int64_t k = 0; copies > 1 && k < copies; ++k) run(k);
  std::vector<double> times_us;
  for (int repetition = 0; repetition < warmup + iterations; ++repetition) {
    comm.barrier();
    const auto start = std::chrono::steady_clock::now();
    run(repetition % copies);
    const auto end = std::chrono::steady_clock::now();
    if (repetition >= warmup) times_us.push_back(std::chrono::duration<double, std::micro>(end - start).count());
  }
  comm.allreduce_max(times_us.data(), int64_t(times_us.size()));  // each repetition's slowest rank
  return median(std::move(times_us));
}

Json CollectiveProfile::to_json() const {
  Json collectives = Json::object();
  for (Collective c : profiled_collectives()) {
    Json list = Json::array();
    for (const CollectiveTiming& t : timings) {
      // To the nanosecond: the clock's resolution (a median of two may end in half a nanosecond).
      const double time_us = std::round(t.time_us * 1e3) / 1e3;
      if (t.collective == c) list.push_back({{"ranks", ranks}, {"bytes", t.bytes}, {"time_us", time_us}});
    }
    if (!list.empty()) collectives[std::string(collective_name(c))] = std::move(list);
  }
  return {{"format", "sparsefuse-profile/1"},
          {"provenance",
           {{"kind", "measured"},
            {"tool", "sparsefuse profile-collectives"},
            {"transport", transport},
            {"ranks", ranks},
            {"host", host_name()},
            {"date", today_utc()},
            {"mpi_library", library},
            {"warmup", options.warmup},
            {"iterations", options.iterations},
            {"working_set_bytes", options.working_set},
            {"statistic", "median over the timed repetitions of the slowest rank's time; a barrier before each"}}},
          {"collectives", std::move(collectives)}};
}

std::string table_header(const CollectiveProfile& p) {
  return fmt::format(
      "# sparsefuse profile-collectives: {} ranks over {} ({}), rank 0 on {}\n"
      "# time: median of {} repetitions (after {} warm-up) of the slowest rank; busbw factors as nccl-tests\n"
      "# buffers: {}\n"
      "#\n"
      "# {:>10} {:>12} {:>6} {:>15} {:>12} {:>12} {:>12}\n"
      "# {:>10} {:>12} {:>6} {:>15} {:>12} {:>12} {:>12}\n",
      p.ranks, p.transport, p.library, host_name(), p.options.iterations, p.options.warmup,
      p.options.working_set > 0
          ? fmt::format("copies filling a {}-byte working set, one per repetition in turn", p.options.working_set)
          : std::string("one set per size, reused"),
      "size", "count", "type",
      "collective", "time", "algbw", "busbw", "(B)", "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)");
}

std::string table_row(const CollectiveTiming& t, int ranks) {
  const bool pairs = t.collective == Collective::kAllgather;
  const double algbw = double(t.bytes) / (t.time_us * 1e3);  // bytes per ns = GB/s
  return fmt::format("  {:>10} {:>12} {:>6} {:>15} {:>12.2f} {:>12.3f} {:>12.3f}\n", t.bytes,
                     t.bytes / (pairs ? 8 : 4), pairs ? "pair" : "float", collective_name(t.collective), t.time_us,
                     algbw, algbw * bus_factor(t.collective, ranks));
}

}  // namespace sparsefuse::runtime
