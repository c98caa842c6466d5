#include "kernels/profiler.h"

#include <algorithm>
#include <utility>
#include <chrono>
#include <cstdint>
#include <cmath>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <stdexcept>
#include <tuple>

#include "common/median.h"
#include "common/provenance.h"
#include "kernels/code_sweep.h"
#include "kernels/common.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/estimators.h"
#include "kernels/pack.h"
#include "kernels/rng.h"
#include "kernels/synthetic.h"
#include "kernels/topk.h"

namespace sparsefuse::kernels {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

const std::vector<std::string> kNames = {"topk",    "dgc",    "gaussiank", "redsync", "sidco",
                                         "randomk", "adtopk", "pack",      "ef_topk", "unpack"};

// Fewer repetitions for larger calls, but three at least (up to BASE): with
// one or two the median is one call, which a neighbour's burst decides.
int reps_for(int64_t n, int base) {
  const double scale = std::sqrt(std::min(1.0, 1e6 / static_cast<double>(n)));
  return std::max(std::min(base, 3), static_cast<int>(std::lround(base * scale)));
}

// CPU timing: each repetition loops the call until >= 2 ms have passed and
// records the mean per call; the median of the repetitions is returned.
double time_cpu_us(const std::function<void()>& fn, int reps, bool warmup) {
  if (warmup) fn();
  std::vector<double> per_call;
  for (int r = 0; r < reps; ++r) {
    int64_t calls = 0;
    const auto start = Clock::now();
    double elapsed = 0;
    do {
      fn();
      ++calls;
      elapsed = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    } while (elapsed < 2000.0);
    per_call.push_back(elapsed / static_cast<double>(calls));
  }
  return median(per_call);
}

// Each call timed alone: REPS calls, each after BEFORE (untimed); the median.
// After compute BEFORE sweeps the caches and code, then writes the gradient
// (what a layer's backward leaves behind, and the runtime's copy of the
// gradient into its slot); for large ef_topk calls it only writes one.
double time_each_call_us(const std::function<void()>& fn, const std::function<void()>& before, int reps) {
  std::vector<double> per_call;
  for (int r = 0; r < reps; ++r) {
    before();
    const auto start = Clock::now();
    fn();
    per_call.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  return median(per_call);
}

double time_cuda_us(const std::function<void()>& fn, int reps) {
  return cuda::median_event_time_us(fn, std::max(reps, 3));
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string v = line.substr(colon + 1);
        v.erase(0, v.find_first_not_of(" \t"));
        return v;
      }
    }
  }
  return "unknown cpu";
}

std::string compiler() {
#if defined(__clang__)
  return std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  return std::string("g++ ") + __VERSION__;
#else
  return "unknown";
#endif
}

// The pack layout: 4 tensors of (nearly) equal size, k selections spread over
// them, evenly spaced ascending local indices.
struct PackInput {
  std::vector<int64_t> offsets;
  std::vector<int64_t> counts;
  std::vector<int32_t> local;
};

PackInput pack_input(int64_t n, int64_t k) {
  PackInput p;
  const int tensors = n >= 4 ? 4 : 1;
  for (int t = 0; t <= tensors; ++t) p.offsets.push_back(n * t / tensors);
  for (int t = 0; t < tensors; ++t) {
    const int64_t size = p.offsets[t + 1] - p.offsets[t];
    const int64_t c = std::min(size, k / tensors + (t < k % tensors ? 1 : 0));
    p.counts.push_back(c);
    for (int64_t j = 0; j < c; ++j) p.local.push_back(static_cast<int32_t>(j * (size / std::max<int64_t>(c, 1))));
  }
  return p;
}

// The unpack stream: P ranks, each k distinct ascending indices j*step + (r mod step).
struct UnpackInput {
  std::vector<float> values;
  std::vector<int32_t> indices;
  std::vector<int64_t> counts;
};

UnpackInput unpack_input(const std::vector<float>& g, int64_t n, int64_t k, int P) {
  UnpackInput u;
  const int64_t step = std::max<int64_t>(1, n / std::max<int64_t>(k, 1));
  u.values.reserve(static_cast<size_t>(P * k));
  u.indices.reserve(static_cast<size_t>(P * k));
  for (int r = 0; r < P; ++r) {
    for (int64_t j = 0; j < k; ++j) {
      const int64_t i = j * step + (r % step);
      u.indices.push_back(static_cast<int32_t>(i));
      u.values.push_back(g[static_cast<size_t>(i)]);
    }
    u.counts.push_back(k);
  }
  return u;
}

// How many copies of a kernel's inputs (BYTES_PER_COPY) fill WORKING_SET: at least one.
size_t working_set_copies(int64_t working_set, int64_t bytes_per_copy) {
  return static_cast<size_t>(std::max<int64_t>(1, working_set / std::max<int64_t>(1, bytes_per_copy)));
}


}  // namespace

// The tensors must tile the gradient exactly, each with a shape.
static void validate_gradient_tensors(const ProfileOptions& o) {
  if (!o.gradients || o.device != "cpu") {
    throw std::invalid_argument("profile: tensors are profiled on their own gradient, on the cpu, with gradients");
  }
  int64_t total = 0;
  for (const GradientTensor& t : o.tensors) {
    int64_t product = t.shape.empty() ? 0 : 1;
    for (const int64_t d : t.shape) product = d > 0 ? product * d : 0;
    if (product < 1 || product != t.elements) {
      throw std::invalid_argument("profile: tensor " + t.name + ": expected a shape of positive dimensions whose "
                                  "product is its " + std::to_string(t.elements) + " elements");
    }
    total += t.elements;
  }
  if (total != static_cast<int64_t>(o.gradients->size())) {
    throw std::invalid_argument("profile: the tensors hold " + std::to_string(total) + " elements, the gradient " +
                                std::to_string(o.gradients->size()));
  }
}

void validate_profile_options(const ProfileOptions& o) {
  if (o.device != "cpu" && o.device != "cuda")
    throw std::invalid_argument("profile: device must be \"cpu\" or \"cuda\", got \"" + o.device + "\"");
  for (const auto& k : o.kernels)
    if (std::find(kNames.begin(), kNames.end(), k) == kNames.end())
      throw std::invalid_argument("profile: unknown kernel \"" + k + "\"");
  for (const double d : o.densities)
    if (!(d > 0.0 && d <= 1.0)) throw std::invalid_argument("profile: density outside (0, 1]");
  for (const int64_t n : o.sizes)
    if (n < 1 || n > kMaxElements) throw std::invalid_argument("profile: size outside [1, 2^31 - 1]");
  if (o.repetitions < 1) throw std::invalid_argument("profile: repetitions must be >= 1");
  if (o.rounds < 1) throw std::invalid_argument("profile: rounds must be >= 1");
  if (o.workers < 1) throw std::invalid_argument("profile: workers must be >= 1");
  if (o.working_set_bytes < 0 || o.working_set_bytes > kMaxWorkingSet)
    throw std::invalid_argument("profile: working set outside [0, 4 GiB]");
  if (o.working_set_bytes > 0 && o.device != "cpu")
    throw std::invalid_argument("profile: a working set is measured on the cpu only");
  if (o.after_compute_evict_bytes < 0 || o.after_compute_evict_bytes > kMaxWorkingSet)
    throw std::invalid_argument("profile: after-compute eviction outside [0, 4 GiB]");
  if (o.after_compute_evict_bytes > 0 && o.device != "cpu")
    throw std::invalid_argument("profile: after-compute calls are measured on the cpu only");
  if (!o.tensors.empty()) validate_gradient_tensors(o);
}

size_t sample_window_start(uint64_t i, size_t size) {
  constexpr double kGoldenFraction = 0.6180339887498949;
  const double turns = double(i) * kGoldenFraction;
  return std::min(size - 1, size_t((turns - std::floor(turns)) * double(size)));
}

std::vector<std::vector<float>> distinct_gradients(int64_t n, size_t copies, uint64_t first_seed,
                                                   const std::vector<float>* sample) {
  std::vector<std::vector<float>> pool(copies);
  for (size_t c = 0; c < copies; ++c) {
    if (!sample) {
      pool[c] = gaussian_gradient(n, first_seed + c, 1e-3);
      continue;
    }
    pool[c].resize(size_t(n));
    size_t from = sample_window_start(first_seed + c, sample->size());
    for (size_t done = 0; done < size_t(n);) {
      const size_t take = std::min(size_t(n) - done, sample->size() - from);
      std::copy_n(sample->begin() + ptrdiff_t(from), take, pool[c].begin() + ptrdiff_t(done));
      done += take;
      from = 0;
    }
  }
  return pool;
}

std::vector<float> read_gradient_sample(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::invalid_argument(path + ": cannot be read");
  const std::streamoff bytes = in.tellg();
  if (bytes <= 0 || bytes % 4 != 0) {
    throw std::invalid_argument(path + ": " + std::to_string(bytes) +
                                " bytes; expected a positive whole number of float32 values (4 bytes each)");
  }
  std::vector<float> values(size_t(bytes / 4));
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(values.data()), bytes)) throw std::invalid_argument(path + ": read failed");
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      throw std::invalid_argument(path + ": value " + std::to_string(i) + " is not finite; expected a gradient");
    }
  }
  return values;
}

bool measures(const ProfileOptions& o, const std::string& kernel) {
  return o.kernels.empty() || std::find(o.kernels.begin(), o.kernels.end(), kernel) != o.kernels.end();
}

size_t hot_pool_copies(int64_t n) {
  return static_cast<size_t>(std::max<int64_t>(1, kHotPoolBytes / std::max<int64_t>(1, 4 * n)));
}

namespace {

std::vector<int64_t> sizes_of(const ProfileOptions& o) {
  std::vector<int64_t> s = o.sizes;
  if (s.empty()) {
    for (int64_t n = 1000; n <= 100'000'000; n *= 10) s.push_back(n);
    if (o.device == "cuda") s.push_back(500'000'000);
  }
  if (o.max_elements > 0) s.erase(std::remove_if(s.begin(), s.end(), [&](int64_t n) { return n > o.max_elements; }), s.end());
  return s;
}

bool has_density(const ProfileOptions& o, double d) {
  return std::find(o.densities.begin(), o.densities.end(), d) != o.densities.end();
}

// The densities measured: the options', and 1 for pack (a bucket sent dense
// as pairs packs every element).
std::vector<double> densities_with_dense_pairs(const ProfileOptions& o) {
  std::vector<double> d = o.densities;
  if (measures(o, "pack") && !has_density(o, 1.0)) d.push_back(1.0);
  return d;
}

// How a measured call meets the caches (profiler.h): in a loop over one hot
// gradient, in a loop over gradient copies filling the working set, or alone
// after an eviction sweep.
enum class Condition { kHot, kCold, kAfterCompute };

// One measurement callback per (kernel, density, ADTopk row length (0 for
// the other kernels), condition) at the size prepare() took; returns time_us.
using Measure = std::function<double(const std::string&, double, int64_t, Condition)>;

// The grid's sections, one round's or the rounds' medians.
struct GridPoints {
  json compression = json::object(), cold = json::object(), after_compute = json::object();
  json unpack = json::array();
};

GridPoints run_round(const ProfileOptions& o, const std::vector<int64_t>& sizes,
                     const std::function<Measure(int64_t)>& prepare) {
  GridPoints g;
  // (row, elements, density) of the ADTopk points taken: two sizes can floor
  // to one tensor (5000 and 4096 to a single row of 4096).
  std::set<std::tuple<int64_t, int64_t, double>> adtopk_taken;
  for (const int64_t n : sizes) {
    const Measure measure = prepare(n);
    for (const double d : densities_with_dense_pairs(o)) {
      for (const auto& name : kNames) {
        if (!measures(o, name) || (d == 1.0 && name != "pack" && !has_density(o, 1.0))) continue;
        for (const int64_t row : name == "adtopk" ? std::vector<int64_t>(kAdtopkRows.begin(), kAdtopkRows.end())
                                                 : std::vector<int64_t>{0}) {
          const int64_t elements = row > 0 ? n / row * row : n;  // ADTopk: (n / row) whole rows
          if (row > 0 && (elements == 0 || !adtopk_taken.emplace(row, elements, d).second)) continue;
          auto point = [&](Condition c) {
            if (o.before_point) o.before_point();
            json p = {{"elements", elements}, {"density", d}, {"time_us", measure(name, d, row, c)}};
            if (row > 0) p["row"] = row;
            return p;
          };
          if (name == "unpack") {
            json p = point(Condition::kHot);
            p["workers"] = o.workers;
            g.unpack.push_back(p);
            continue;
          }
          g.compression[name].push_back(point(Condition::kHot));
          if (o.working_set_bytes > 0) g.cold[name].push_back(point(Condition::kCold));
          if (o.after_compute_evict_bytes > 0 && n <= kAfterComputeMaxElements) {
            g.after_compute[name].push_back(point(Condition::kAfterCompute));
          }
        }
      }
    }
  }
  return g;
}

// Every round measures the same points in the same order: point i of a
// curve gets the median of its rounds' time_us.
void take_round_medians(json& into, const std::vector<const json*>& rounds) {
  for (size_t i = 0; i < into.size(); ++i) {
    std::vector<double> times;
    for (const json* r : rounds) times.push_back(r->at(i).at("time_us").get<double>());
    into[i]["time_us"] = median(std::move(times));
  }
}

GridPoints round_medians(const std::vector<GridPoints>& rounds) {
  GridPoints out = rounds.front();
  for (json GridPoints::*section : {&GridPoints::compression, &GridPoints::cold, &GridPoints::after_compute}) {
    for (auto curve = (out.*section).begin(); curve != (out.*section).end(); ++curve) {
      std::vector<const json*> each;
      for (const GridPoints& r : rounds) each.push_back(&(r.*section).at(curve.key()));
      take_round_medians(*curve, each);
    }
  }
  std::vector<const json*> each;
  for (const GridPoints& r : rounds) each.push_back(&r.unpack);
  take_round_medians(out.unpack, each);
  return out;
}

// o.rounds passes over the whole grid, so that a slow spell of a shared
// machine lands on one pass of every point rather than on all the
// repetitions of a few; each point keeps the median of its passes.
void run_grid(const ProfileOptions& o, const std::vector<int64_t>& sizes,
              const std::function<Measure(int64_t)>& prepare, json& doc) {
  std::vector<GridPoints> rounds;
  for (int r = 0; r < o.rounds; ++r) rounds.push_back(run_round(o, sizes, prepare));
  GridPoints g = round_medians(rounds);
  doc["compression"] = std::move(g.compression);
  if (o.working_set_bytes > 0) doc["compression_cold"] = std::move(g.cold);
  if (o.after_compute_evict_bytes > 0) doc["compression_after_compute"] = std::move(g.after_compute);
  doc["decompression"] = json{{"unpack", std::move(g.unpack)}};
  doc["provenance"]["rounds"] = o.rounds;
}

// ADTopk on each large tensor's own gradient and on Gaussian values of its
// shape, the same calls timed the same way (a loop on one input), at every
// density profiled: the simulator scales its curve by their ratio for that
// tensor (docs/simulator-model.md, "ADTopk on a tensor's own gradient").
json adtopk_on_own_gradients(const ProfileOptions& o) {
  json entries = json::array();
  int64_t offset = 0;
  for (const GradientTensor& t : o.tensors) {
    const float* own = o.gradients->data() + offset;
    offset += t.elements;
    if (t.elements < kOwnGradientMinElements || t.shape.size() < 2) continue;
    const std::vector<float> gaussian = gaussian_gradient(t.elements, 7, 1e-3);
    const int reps = reps_for(t.elements, o.repetitions);
    for (const double d : o.densities) {
      auto timed = [&](const float* g) {
        if (o.before_point) o.before_point();
        return time_cpu_us([&] { adtopk(g, t.shape, d); }, reps, true);
      };
      const double own_us = timed(own), gaussian_us = timed(gaussian.data());
      entries.push_back({{"name", t.name}, {"elements", t.elements}, {"row", t.shape[1]}, {"density", d},
                         {"own_us", own_us}, {"gaussian_us", gaussian_us}});
    }
  }
  return entries;
}

ProfileRun profile_cpu(const ProfileOptions& o) {
  ProfileRun run;
  run.memory_bandwidth = measure_cpu_read_bandwidth();
  run.bandwidth_method = "single-thread streaming read of 256 MiB";
  json& doc = run.profile;
  doc["format"] = "sparsefuse-profile/1";
  doc["device"] = {{"kind", "cpu"}, {"name", cpu_model()}, {"threads", 1}};
  doc["provenance"] = {{"kind", "measured"}, {"tool", "sparsefuse profile-kernels"}, {"date", today_utc()},
                       {"host", host_name()}, {"compiler", compiler()}};
  doc["provenance"]["inputs"] =
      o.gradients ? "windows of a model's gradient: " + o.gradients_source + " (" + std::to_string(o.gradients->size()) +
                        " float32 values)"
                  : "Gaussian draws, scale 1e-3";
  // State shared across densities of one size. Every call takes the next of
  // a pool of distinct gradients small enough to stay in cache, as backward
  // leaves the gradient it has just written (new values each time). With a
  // working set, the residual error feedback keeps from one iteration to the
  // next is held in as many copies as fill it and each call takes the next,
  // so it meets the kernel out of cache, as in training. The cold
  // measurements (compression_cold) take the gradient likewise from distinct
  // copies filling the working set: a fused buffer's older tensors, written
  // before later layers' backward passed through the cache. The
  // after-compute calls (compression_after_compute) each follow a sweep of
  // the eviction buffer, one of the code (sweep_code) and a write of the
  // next hot gradient into a landing slot: what a layer's backward leaves
  // behind when the runtime copies its gradient in and compresses it.
  // ef_topk's calls above kAfterComputeMaxElements are timed one by one,
  // each after a write of a gradient into the next landing slot
  // (profiler.h).
  std::vector<float> dense, values;
  std::vector<uint64_t> evict(static_cast<size_t>(o.after_compute_evict_bytes) / sizeof(uint64_t));
  std::vector<std::vector<float>> hot, cold_pool, residuals, landings;
  size_t landed = 0;  // the landing slot written last
  std::vector<int32_t> indices;
  size_t turn = 0;
  TopkWorkspace ws;
  auto prepare = [&](int64_t n) -> Measure {
    hot = distinct_gradients(n, hot_pool_copies(n), 1, o.gradients.get());
    cold_pool.clear();
    if (o.working_set_bytes > 0) {
      cold_pool = distinct_gradients(n, working_set_copies(o.working_set_bytes, 4 * n), 1 + hot.size(), o.gradients.get());
    }
    const std::vector<float>& g = hot.front();
    std::vector<float> r(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) r[i] = 0.1f * g[n - 1 - i];
    residuals.assign(working_set_copies(o.working_set_bytes, 4 * n), r);
    dense.assign(static_cast<size_t>(n), 0.0f);
    values.assign(static_cast<size_t>(n), 0.0f);
    indices.assign(static_cast<size_t>(n), 0);
    // Where a gradient is written before a call timed one by one: one slot
    // after compute (the sweep evicts it); for ef_topk above
    // kAfterComputeMaxElements slots filling the working set, as the
    // runtime's model-sized gradient buffer.
    landings.clear();
    landed = 0;
    if (o.after_compute_evict_bytes > 0 && n <= kAfterComputeMaxElements) landings.assign(1, std::vector<float>(size_t(n)));
    if (n > kAfterComputeMaxElements && measures(o, "ef_topk")) {
      landings.assign(working_set_copies(o.working_set_bytes, 4 * n), std::vector<float>(size_t(n)));
    }
    return [&, n](const std::string& name, double d, int64_t row, Condition condition) -> double {
      const int64_t k = k_for_density(n, d);
      const int reps = reps_for(n, o.repetitions);
      const bool warm = n < 10'000'000;
      float* v = values.data();
      int32_t* ix = indices.data();
      // Calls timed one by one: after compute, and ef_topk's above
      // kAfterComputeMaxElements, which rewrite a residual too large for the
      // cache (profiler.h).
      const bool one_by_one = condition == Condition::kAfterCompute || (name == "ef_topk" && n > kAfterComputeMaxElements);
      // Call I's gradient: the next of the copies filling the working set,
      // the one just written, or the next of the hot pool.
      auto gradient = [&](size_t i) -> float* {
        if (condition == Condition::kCold) return cold_pool[i % cold_pool.size()].data();
        if (one_by_one) return landings[landed].data();
        return hot[i % hot.size()].data();
      };
      auto in = [&] { return gradient(++turn); };
      auto write_gradient = [&] {
        landed = (landed + 1) % landings.size();
        const std::vector<float>& next = hot[turn % hot.size()];
        std::copy(next.begin(), next.end(), landings[landed].begin());
      };
      // After compute, WRITTEN_LAST_ITERATION (if set) also flushes the
      // call's buffers that training touches once an iteration.
      auto time = [&](const std::function<void()>& call, const std::function<void()>& written_last_iteration = {}) {
        if (!one_by_one) return time_cpu_us(call, reps, warm);
        if (condition != Condition::kAfterCompute) {
          if (warm) call();
          return time_each_call_us(call, write_gradient, std::max(5, reps));
        }
        auto after_compute = [&] {
          sweep_after_compute(evict);
          if (written_last_iteration) written_last_iteration();
          write_gradient();
        };
        return time_each_call_us(call, after_compute, std::max(9, 3 * o.repetitions));
      };
      if (name == "topk") return time([&] { topk_abs(in(), n, k, v, ix, &ws); });
      // A fresh sample and a fresh key every call, as the runtime draws them
      // (per rank, iteration and tensor): one fixed seed would keep its
      // sampled positions in cache from one call to the next.
      if (name == "dgc") {
        return time([&] {
          const float* g = in();
          dgc(g, n, d, turn);
        });
      }
      if (name == "gaussiank") return time([&] { gaussiank(in(), n, d); });
      if (name == "redsync") return time([&] { redsync(in(), n, d); });
      if (name == "sidco") return time([&] { sidco(in(), n, d); });
      if (name == "randomk") {
        return time([&] {
          const float* g = in();
          randomk(g, n, k, RandomkKey{1, turn, 0}, v, ix, &ws);
        });
      }
      if (name == "adtopk") {
        const std::vector<int64_t> shape{n / row, row};
        return time([&] { adtopk(in(), shape, d); });
      }
      // A bucket's payload (and its list of local indices) is its own,
      // written once an iteration (runtime/exchange.cc).
      auto flush_payload = [&](size_t pairs) {
        flush_from_caches(v, pairs * sizeof(float));
        flush_from_caches(ix, pairs * sizeof(int32_t));
      };
      if (name == "pack" && d == 1.0) {  // every element as a pair: the runtime's copy and count
        return time([&] { pack_dense(in(), n, v, ix); }, [&] { flush_payload(size_t(n)); });
      }
      if (name == "pack") {
        const PackInput p = pack_input(n, k);
        const size_t pairs = p.local.size();
        return time([&] { pack(in(), p.offsets, p.local.data(), p.counts, v, ix); },
                    [&] {
                      flush_payload(pairs);
                      flush_from_caches(p.local.data(), pairs * sizeof(int32_t));
                    });
      }
      if (name == "ef_topk") {
        return time([&] {
          const size_t i = ++turn;
          ef_topk(residuals[i % residuals.size()].data(), gradient(i), n, k, v, ix, &ws);
        });
      }
      // unpack
      const UnpackInput u = unpack_input(hot.front(), n, k, o.workers);
      return time([&] { unpack(u.values.data(), u.indices.data(), u.counts, n, dense.data()); });
    };
  };
  run_grid(o, sizes_of(o), prepare, doc);
  if (!o.tensors.empty()) doc["adtopk_tensors"] = adtopk_on_own_gradients(o);
  return run;
}

ProfileRun profile_cuda(const ProfileOptions& o) {
  std::string reason;
  if (!cuda::device_available(&reason)) throw cuda::CudaError(cudaErrorNoDevice, "profile --device cuda: " + reason);
  ProfileRun run;
  cuda::Workspace ws;
  run.memory_bandwidth = cuda::measure_copy_bandwidth(size_t{1} << 30, 20, ws);
  run.bandwidth_method = "device-to-device copy of 1 GiB (read + write bytes)";
  int runtime = 0;
  cuda::check(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
  json& doc = run.profile;
  doc["format"] = "sparsefuse-profile/1";
  doc["device"] = {{"kind", "cuda"}, {"name", cuda::device_name()}};
  doc["provenance"] = {{"kind", "measured"},
                       {"tool", "sparsefuse profile-kernels"},
                       {"date", today_utc()},
                       {"host", host_name()},
                       {"compiler", compiler() + " + nvcc (sm_90)"},
                       {"cuda", std::to_string(runtime / 1000) + "." + std::to_string((runtime % 1000) / 10)}};
  std::unique_ptr<cuda::DeviceBuffer<float>> g, r, dense, values;
  std::unique_ptr<cuda::DeviceBuffer<int32_t>> indices;
  std::vector<float> host_g;
  auto prepare = [&](int64_t n) -> Measure {
    // Release the previous size's buffers before allocating the next.
    g.reset(); r.reset(); dense.reset(); values.reset(); indices.reset();
    g = std::make_unique<cuda::DeviceBuffer<float>>(n);
    r = std::make_unique<cuda::DeviceBuffer<float>>(n);
    dense = std::make_unique<cuda::DeviceBuffer<float>>(n);
    // The most any kernel selects: top-k or pack at the densest density (pack's
    // dense pairs: all n), or ADTopk there over its shortest rows (one a row at least).
    const std::vector<double> densities = densities_with_dense_pairs(o);
    const double densest = *std::max_element(densities.begin(), densities.end());
    int64_t cap = k_for_density(n, densest);
    for (const int64_t row : kAdtopkRows) cap = std::max(cap, (n / row) * k_for_density(row, densest));
    values = std::make_unique<cuda::DeviceBuffer<float>>(cap);
    indices = std::make_unique<cuda::DeviceBuffer<int32_t>>(cap);
    cuda::fill_normal(g->data(), n, 1, 1e-3f);
    cuda::fill_normal(r->data(), n, 2, 1e-4f);
    host_g = g->download();
    // The working set and after-compute calls are CPU options
    // (validate_profile_options): every call here is hot.
    return [&, n](const std::string& name, double d, int64_t row, Condition) -> double {
      const int64_t k = k_for_density(n, d);
      const int reps = reps_for(n, o.repetitions);
      const float* gp = g->data();
      float* v = values->data();
      int32_t* ix = indices->data();
      if (name == "topk") return time_cuda_us([&] { cuda::topk_abs(gp, n, k, v, ix, ws); }, reps);
      if (name == "dgc") return time_cuda_us([&] { cuda::dgc(gp, n, d, 1, ws); }, reps);
      if (name == "gaussiank") return time_cuda_us([&] { cuda::gaussiank(gp, n, d, ws); }, reps);
      if (name == "redsync") return time_cuda_us([&] { cuda::redsync(gp, n, d, ws); }, reps);
      if (name == "sidco") return time_cuda_us([&] { cuda::sidco(gp, n, d, SidcoFit::kExponential, 1, ws); }, reps);
      if (name == "randomk")
        return time_cuda_us([&] { cuda::randomk(gp, n, k, RandomkKey{1, 0, 0}, v, ix, ws); }, reps);
      if (name == "adtopk") {
        const std::vector<int64_t> shape{n / row, row};
        return time_cuda_us([&] { cuda::adtopk(gp, shape, d, v, ix, ws); }, reps);
      }
      if (name == "pack") {
        const PackInput p = pack_input(n, k);
        cuda::DeviceBuffer<int32_t> local;
        local.upload(p.local);
        return time_cuda_us([&] { cuda::pack(gp, p.offsets, local.data(), p.counts, v, ix, ws); }, reps);
      }
      if (name == "ef_topk") return time_cuda_us([&] { cuda::ef_topk(r->data(), gp, n, k, v, ix, ws); }, reps);
      const UnpackInput u = unpack_input(host_g, n, k, o.workers);
      cuda::DeviceBuffer<float> uv;
      cuda::DeviceBuffer<int32_t> ui;
      uv.upload(u.values);
      ui.upload(u.indices);
      return time_cuda_us([&] { cuda::unpack(uv.data(), ui.data(), u.counts, n, dense->data(), ws); }, reps);
    };
  };
  run_grid(o, sizes_of(o), prepare, doc);
  return run;
}

}  // namespace

const std::vector<std::string>& profile_kernel_names() { return kNames; }

double profile_bytes_moved(const std::string& kernel, int64_t n, double density, int workers, int64_t adtopk_row) {
  const double dn = static_cast<double>(n);
  if (kernel == "adtopk") {
    if (adtopk_row < 1) throw std::invalid_argument("profile_bytes_moved: ADTopk row length below 1");
    const double k = static_cast<double>((n / adtopk_row) * k_for_density(adtopk_row, density));
    return 4.0 * dn + 8.0 * k;
  }
  const double k = static_cast<double>(k_for_density(n, density));
  if (kernel == "topk" || kernel == "dgc" || kernel == "gaussiank" || kernel == "redsync" || kernel == "sidco")
    return 4.0 * dn + 8.0 * k;
  if (kernel == "randomk") return std::min(4.0 * dn, 32.0 * k) + 8.0 * k;
  if (kernel == "ef_topk") return 12.0 * dn + 8.0 * k;
  if (kernel == "pack") return 16.0 * k;
  if (kernel == "unpack") return 8.0 * workers * k + 4.0 * dn;
  throw std::invalid_argument("profile_bytes_moved: unknown kernel \"" + kernel + "\"");
}

ProfileRun run_profile(const ProfileOptions& options) {
  validate_profile_options(options);
  return options.device == "cpu" ? profile_cpu(options) : profile_cuda(options);
}

json profile_kernels(const ProfileOptions& options) { return run_profile(options).profile; }

void print_profile_table(const ProfileRun& run, std::FILE* out) {
  const json& p = run.profile;
  const json& dev = p.at("device");
  std::fprintf(out, "# sparsefuse profile-kernels: device %s \"%s\"%s\n", dev.at("kind").get<std::string>().c_str(),
               dev.at("name").get<std::string>().c_str(),
               dev.contains("threads") ? (" threads " + std::to_string(dev.at("threads").get<int>())).c_str() : "");
  std::fprintf(out, "# memory bandwidth: %.2f GB/s (%s)\n", run.memory_bandwidth / 1e9, run.bandwidth_method.c_str());
  std::fprintf(out, "# floor ratio = time / (bytes / memory bandwidth)\n#\n");
  std::fprintf(out, "# %14s %14s %8s %34s %12s %9s %12s\n", "size(elements)", "bytes", "density", "kernel", "time(us)",
               "GB/s", "floor ratio");
  auto row = [&](const std::string& kernel, const json& e, int workers, const char* suffix) {
    const int64_t n = e.at("elements").get<int64_t>();
    const double d = e.at("density").get<double>();
    const double t = e.at("time_us").get<double>();
    const int64_t adtopk_row = e.value("row", kProfileAdtopkRow);
    const double bytes = profile_bytes_moved(kernel, n, d, workers, adtopk_row);
    const double gbps = bytes / (t * 1e-6) / 1e9;
    const double floor_us = bytes / run.memory_bandwidth * 1e6;
    const std::string name = kernel + (e.contains("row") ? " rows of " + std::to_string(adtopk_row) : "") + suffix;
    std::fprintf(out, "  %14lld %14.0f %8.3f %34s %12.2f %9.2f %12.2f\n", static_cast<long long>(n), bytes, d,
                 name.c_str(), t, gbps, t / floor_us);
  };
  using Section = std::pair<const char*, const char*>;  // key, suffix of its rows' kernel names
  for (const auto& [key, suffix] : {Section{"compression", ""}, Section{"compression_cold", " (cold)"},
                                    Section{"compression_after_compute", " (after compute)"}}) {
    if (!p.contains(key)) continue;
    const json& section = p.at(key);
    for (const auto& kernel : kNames)  // documented order (json objects sort their keys)
      if (section.contains(kernel))
        for (const auto& e : section.at(kernel)) row(kernel, e, 1, suffix);
  }
  for (const auto& e : p.at("decompression").at("unpack")) row("unpack", e, e.at("workers").get<int>(), "");
}

double measure_cpu_read_bandwidth() {
  const size_t words = (size_t{256} << 20) / sizeof(uint64_t);
  std::vector<uint64_t> buf(words);
  for (size_t i = 0; i < words; ++i) buf[i] = i * kGolden64;
  double best = 0;
  volatile uint64_t sink = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const auto start = Clock::now();
    uint64_t acc0 = 0, acc1 = 0, acc2 = 0, acc3 = 0;
    for (size_t i = 0; i < words; i += 4) {
      acc0 ^= buf[i];
      acc1 ^= buf[i + 1];
      acc2 ^= buf[i + 2];
      acc3 ^= buf[i + 3];
    }
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    sink = sink ^ acc0 ^ acc1 ^ acc2 ^ acc3;
    best = std::max(best, static_cast<double>(words * sizeof(uint64_t)) / s);
  }
  (void)sink;
  return best;
}

}  // namespace sparsefuse::kernels
