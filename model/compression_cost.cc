#include "model/compression_cost.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <filesystem>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "common/embedded_json.h"
#include "model/gpu_devices.h"
#include "policy/seed/seed_cost.h"

namespace sparsefuse::model {

using policy::Sparsifier;

// profiles/cpu-dev-2core.json: `sparsefuse profile-kernels --device cpu` on the
// development machine (see profiles/README.md).
constexpr const char* kDefaultCpuProfile = "cpu-dev-2core";

void CostCurve::add(int64_t elements, double density, double time_us) {
  auto& points = by_density_[density];
  points.emplace_back(double(elements), time_us);
  std::sort(points.begin(), points.end());
  memo_.fill(Answer{});
  level_memo_.fill(Answer{});
}

double CostCurve::at_density(const std::vector<std::pair<double, double>>& points, double n) const {
  if (n <= points.front().first) return points.front().second;
  if (n >= points.back().first) return points.back().second * n / points.back().first;
  auto hi = std::lower_bound(points.begin(), points.end(), std::make_pair(n, -1.0));
  auto lo = hi - 1;
  double f = std::log(n / lo->first) / std::log(hi->first / lo->first);
  return std::exp(std::log(lo->second) + f * (std::log(hi->second) - std::log(lo->second)));
}

template <typename Compute>
double CostCurve::memoized(std::array<Answer, 256>& memo, int64_t elements, double density, Compute compute) {
  const uint64_t key = uint64_t(elements) * 0x9E3779B97F4A7C15ull ^ std::bit_cast<uint64_t>(density);
  Answer& answer = memo[(key * 0xBF58476D1CE4E5B9ull) >> 56];
  if (answer.elements != elements || answer.density != density) answer = {elements, density, compute()};
  return answer.us;
}

double CostCurve::time_us(int64_t elements, double density) const {
  return memoized(memo_, elements, density, [&] { return interpolated_us(elements, density); });
}

double CostCurve::at_level(const std::pair<const double, std::vector<std::pair<double, double>>>& level,
                           int64_t elements) const {
  // Not a structured binding: clang 14 (the fuzz build) cannot capture one.
  return memoized(level_memo_, elements, level.first, [&] { return at_density(level.second, double(elements)); });
}

double CostCurve::interpolated_us(int64_t elements, double density) const {
  auto hi = by_density_.lower_bound(density);
  if (hi == by_density_.end()) return at_level(*std::prev(hi), elements);
  if (hi == by_density_.begin() || hi->first == density) return at_level(*hi, elements);
  auto lo = std::prev(hi);
  double f = (density - lo->first) / (hi->first - lo->first);
  return (1 - f) * at_level(*lo, elements) + f * at_level(*hi, elements);
}

int64_t CostCurve::max_elements() const {
  double most = 0;
  for (const auto& [density, points] : by_density_) most = std::max(most, points.back().first);
  return int64_t(most);
}

int64_t CostCurve::min_elements() const {
  if (by_density_.empty()) return 0;
  double least = by_density_.begin()->second.front().first;
  for (const auto& [density, points] : by_density_) least = std::min(least, points.front().first);
  return int64_t(least);
}

CostCurve CostCurve::scaled_above_floor(double factor) const {
  CostCurve scaled;
  for (const auto& [density, points] : by_density_) {
    // The fastest call, wherever it is: the smallest size's is not always
    // the fastest (the H100's DGC at density 0.1: 199 us at 1e3 elements,
    // 112 us at 1e4), and scaling a faster point below a slower floor by a
    // factor > 1 would make it negative.
    double floor = points.front().second;
    for (const auto& point : points) floor = std::min(floor, point.second);
    auto& out = scaled.by_density_[density];
    for (const auto& [n, us] : points) out.emplace_back(n, floor + (us - floor) * factor);
  }
  return scaled;
}

CompressionConfig CompressionConfig::parse(const JsonNode& node) {
  node.check_keys({"density", "sparsifier", "profile", "cpu_profile", "fused_profile", "gpu_memory_gbytes_per_s",
                   "pcie_gbytes_per_s", "cpu_threads", "side_stream_contention", "calls", "flush_bookkeeping_us",
                   "request_bookkeeping_us"});
  CompressionConfig c;
  c.density = node.get_number("density", c.density, 0, 1, /*min_exclusive=*/true);
  if (auto s = node.optional_child("sparsifier")) {
    c.sparsifier = s->as_string();
    const auto& names = policy::sparsifier_names();
    if (std::find(names.begin(), names.end(), c.sparsifier) == names.end()) {
      std::string hint = nearest_name(c.sparsifier, names);
      s->fail(fmt::format("unknown sparsifier \"{}\"{}", c.sparsifier,
                          hint.empty() ? "" : fmt::format("; did you mean \"{}\"?", hint)));
    }
  }
  c.profile = node.get_string("profile", c.profile);
  c.cpu_profile = node.get_string("cpu_profile", c.cpu_profile);
  c.fused_profile = node.get_string("fused_profile", c.fused_profile);
  c.gpu_memory_gbytes_per_s = node.get_number("gpu_memory_gbytes_per_s", c.gpu_memory_gbytes_per_s, 0, 1e6, true);
  c.pcie_gbytes_per_s = node.get_number("pcie_gbytes_per_s", c.pcie_gbytes_per_s, 0, 1e6, true);
  c.cpu_threads = int(node.get_int("cpu_threads", c.cpu_threads, 1, 4096));
  c.side_stream_contention = node.get_number("side_stream_contention", c.side_stream_contention, 0, 100);
  if (node.has("flush_bookkeeping_us")) c.flush_bookkeeping_us = node.get_number("flush_bookkeeping_us", 0, 0, 1e6);
  if (node.has("request_bookkeeping_us")) {
    c.request_bookkeeping_us = node.get_number("request_bookkeeping_us", 0, 0, 1e6);
  }
  if (auto calls = node.optional_child("calls")) {
    const std::string value = calls->as_string();
    if (value != "hot" && value != "after-compute") {
      calls->fail(fmt::format("expected \"hot\" or \"after-compute\", got \"{}\"", value));
    }
    c.calls_after_compute = value == "after-compute";
  }
  return c;
}

Json CompressionConfig::to_json() const {
  Json j = {{"density", density},
            {"profile", profile},
            {"cpu_profile", cpu_profile},
            {"gpu_memory_gbytes_per_s", gpu_memory_gbytes_per_s},
            {"pcie_gbytes_per_s", pcie_gbytes_per_s},
            {"cpu_threads", cpu_threads},
            {"side_stream_contention", side_stream_contention},
            {"calls", calls_after_compute ? "after-compute" : "hot"}};
  if (!sparsifier.empty()) j["sparsifier"] = sparsifier;
  if (!fused_profile.empty()) j["fused_profile"] = fused_profile;
  if (flush_bookkeeping_us) j["flush_bookkeeping_us"] = *flush_bookkeeping_us;
  if (request_bookkeeping_us) j["request_bookkeeping_us"] = *request_bookkeeping_us;
  return j;
}

// The curve of ROWS (not empty) whose row length is nearest ROW, in ratio.
static const CostCurve& nearest_row(const std::map<int64_t, CostCurve>& rows, int64_t row) {
  auto hi = rows.lower_bound(row);
  if (hi == rows.end()) return std::prev(hi)->second;
  if (hi == rows.begin() || hi->first == row) return hi->second;
  auto lo = std::prev(hi);
  return double(row) / double(lo->first) <= double(hi->first) / double(row) ? lo->second : hi->second;
}

// One section of a profile ("compression", "compression_cold" or
// "compression_after_compute") into CURVES.
static void load_kernel_curves(const JsonNode& section, KernelCurves& curves) {
  section.expect_object();
  for (auto it = section.json().begin(); it != section.json().end(); ++it) {
    const auto& names = policy::sparsifier_names();
    const bool sparsifier = std::find(names.begin(), names.end(), it.key()) != names.end();
    if (!sparsifier && it.key() != "ef_topk" && it.key() != "pack") continue;  // a kernel the simulator does not cost
    JsonNode points = section.child(it.key());
    const bool adtopk = it.key() == "adtopk";
    CostCurve& curve = sparsifier            ? curves.sparsifiers[policy::parse_sparsifier(it.key())]
                       : it.key() == "pack" ? curves.pack
                                            : curves.ef_topk;
    for (size_t i = 0; i < points.array_size(); ++i) {
      JsonNode p = points.element(i);
      const int64_t elements = p.child("elements").as_int(1, int64_t(1) << 40);
      const double density = p.child("density").as_number(0, 1, true);
      const double time_us = p.child("time_us").as_number(0, 1e12, true);
      const int64_t row = adtopk && p.has("row") ? p.child("row").as_int(1, int64_t(1) << 40) : kProfileAdtopkRow;
      if (adtopk) curves.adtopk_rows[row].add(elements, density, time_us);
      if (row == kProfileAdtopkRow) curve.add(elements, density, time_us);
    }
    if (adtopk && curve.empty() && !curves.adtopk_rows.empty()) {
      curve = nearest_row(curves.adtopk_rows, kProfileAdtopkRow);
    }
  }
}

// "adtopk_tensors": [{name, elements, row, density, own_us, gaussian_us}]
// (kernels/profiler.h) into per-tensor ratios own / gaussian by density.
static void load_own_gradient_ratios(const JsonNode& node,
                                     std::map<std::string, std::vector<std::pair<double, double>>>& out) {
  for (size_t i = 0; i < node.array_size(); ++i) {
    const JsonNode e = node.element(i);
    e.check_keys({"name", "elements", "row", "density", "own_us", "gaussian_us"});
    e.child("elements").as_int(1, int64_t(1) << 40);
    e.child("row").as_int(1, int64_t(1) << 40);
    const double density = e.child("density").as_number(0, 1, true);
    const double own = e.child("own_us").as_number(0, 1e12, true);
    const double gaussian = e.child("gaussian_us").as_number(0, 1e12, true);
    auto& ratios = out[e.child("name").as_string()];
    if (!ratios.empty() && density <= ratios.back().first) {
      e.child("density").fail("expected a tensor's densities in increasing order");
    }
    ratios.emplace_back(density, own / gaussian);
  }
}

ProfileCurves load_profile_curves(const Json& document, const std::string& file) {
  ProfileCurves curves;
  JsonNode root(document, file, "");
  JsonNode format = root.child("format");
  if (format.as_string() != "sparsefuse-profile/1") format.fail("expected \"sparsefuse-profile/1\"");
  load_kernel_curves(root.child("compression"), curves.hot);
  if (auto device = root.optional_child("device"); device && device->has("kind")) {
    curves.gpu = device->child("kind").as_string() == "cuda";
  }
  if (auto cold = root.optional_child("compression_cold")) load_kernel_curves(*cold, curves.cold);
  if (auto after = root.optional_child("compression_after_compute")) load_kernel_curves(*after, curves.after_compute);
  // An effective bandwidth from the measured unpack points, if any.
  double bytes = 0, ns = 0;
  if (auto d = root.optional_child("decompression"); d && d->has("unpack")) {
    JsonNode unpack = d->child("unpack");
    for (size_t i = 0; i < unpack.array_size(); ++i) {
      JsonNode p = unpack.element(i);
      double n = double(p.child("elements").as_int(1, int64_t(1) << 40));
      double rho = p.child("density").as_number(0, 1, true);
      double workers = double(p.child("workers").as_int(1, 1 << 20));
      bytes += 4 * n + 8 * workers * std::floor(n * rho);
      ns += p.child("time_us").as_number(0, 1e12, true) * 1e3;
    }
  }
  curves.unpack_bytes_per_ns = ns > 0 ? bytes / ns : 0.0;
  if (auto bookkeeping = root.optional_child("flush_bookkeeping")) {
    curves.flush_bookkeeping_us = bookkeeping->child("time_us").as_number(0, 1e6);
  }
  if (auto bookkeeping = root.optional_child("request_bookkeeping")) {
    curves.request_bookkeeping_us = bookkeeping->child("time_us").as_number(0, 1e6);
  }
  if (auto tensors = root.optional_child("adtopk_tensors")) load_own_gradient_ratios(*tensors, curves.adtopk_own_ratio);
  return curves;
}

double own_gradient_ratio(const std::vector<std::pair<double, double>>* ratios, double density) {
  if (!ratios || ratios->empty() || !(density > 0)) return 1.0;
  const auto distance = [density](const std::pair<double, double>& r) { return std::abs(std::log(r.first / density)); };
  return std::min_element(ratios->begin(), ratios->end(),
                          [&](const auto& a, const auto& b) { return distance(a) < distance(b); })
      ->second;
}

// A built-in profile name (profiles/NAME.json, compiled in) or a file path.
static Json load_profile_document(const std::string& name, const std::string& base_dir, std::string& file) {
  for (const auto& entry : builtin_profile_table()) {
    if (entry.name == name) {
      file = "profiles/" + name + ".json";
      return Json::parse(entry.json);
    }
  }
  std::filesystem::path path(name);
  if (path.is_relative() && !base_dir.empty()) path = std::filesystem::path(base_dir) / path;
  file = path.string();
  return load_json_file(file);
}

CompressionCost::CompressionCost(const CompressionConfig& config, const std::string& base_dir,
                                 const std::string& scenario_file, const InSituFlush& in_situ)
    : config_(config), unpack_bytes_per_ns_(config.gpu_memory_gbytes_per_s), scenario_file_(scenario_file) {
  constexpr std::string_view kEstimate = "estimate:";
  if (config.profile == "seed-8node") {
    seed_tables_ = true;
    gpu_source_ = "seed-8node (the seed code's tables)";
  } else if (config.profile.rfind(kEstimate, 0) == 0) {
    load_estimate(config.profile.substr(kEstimate.size()), base_dir);
  } else {
    std::string file;
    ProfileCurves measured = load_profile_curves(load_profile_document(config.profile, base_dir, file), file);
    hot_ = std::move(measured.hot);
    cold_ = std::move(measured.cold);
    after_ = std::move(measured.after_compute);
    if (measured.unpack_bytes_per_ns > 0) unpack_bytes_per_ns_ = measured.unpack_bytes_per_ns;
    // A CPU's is measured after compute, as the runtime meets it in training
    // only; a GPU's is host work every flush pays, trace replays included.
    // A CPU's measured in situ after the model's own backward steps (the
    // trace's) replaces one measured after synthetic sweeps.
    if (config.calls_after_compute && !measured.gpu && in_situ.bookkeeping_us) {
      flush_bookkeeping_us_ = *in_situ.bookkeeping_us;
      flush_bookkeeping_source_ = "the trace's runtime_flush, measured in situ";
      if (!config.flush_bookkeeping_us) in_situ_flush_us_ = in_situ.tensor_flush_us;
    } else if (config.calls_after_compute || measured.gpu) {
      flush_bookkeeping_us_ = measured.flush_bookkeeping_us;
      flush_bookkeeping_source_ = "the profile's";
    }
    request_bookkeeping_us_ = measured.request_bookkeeping_us;
    gpu_source_ = file;
    adtopk_own_ratio_ = std::move(measured.adtopk_own_ratio);
    if (!adtopk_own_ratio_.empty()) adtopk_own_ratio_source_ = file;
  }
  if (!config.fused_profile.empty()) {
    if (seed_tables_) {
      throw InputError(scenario_file, "/compression/fused_profile",
                       "a fused profile refines a measured profile; compression.profile is the seed tables");
    }
    ProfileCurves fused = load_profile_curves(load_profile_document(config.fused_profile, base_dir, fused_source_),
                                              fused_source_);
    fused_hot_ = std::move(fused.hot);
    fused_cold_ = std::move(fused.cold);
    if (!fused.adtopk_own_ratio.empty()) {
      adtopk_own_ratio_ = std::move(fused.adtopk_own_ratio);
      adtopk_own_ratio_source_ = fused_source_;
    }
  }
  if (config.flush_bookkeeping_us) {
    flush_bookkeeping_us_ = *config.flush_bookkeeping_us;
    flush_bookkeeping_source_ = "compression.flush_bookkeeping_us";
  }
  if (config.request_bookkeeping_us) request_bookkeeping_us_ = *config.request_bookkeeping_us;
  // CPU curves: the named profile, else the one measured on the development
  // machine when it is compiled in (cpu_ns() reports their absence).
  const std::string cpu_name = config.cpu_profile.empty() ? kDefaultCpuProfile : config.cpu_profile;
  const bool builtin = std::any_of(builtin_profile_table().begin(), builtin_profile_table().end(),
                                   [&](const EmbeddedJson& e) { return e.name == cpu_name; });
  if (builtin || !config.cpu_profile.empty()) {
    cpu_ = load_profile_curves(load_profile_document(cpu_name, base_dir, cpu_source_), cpu_source_).hot;
  }
}

// A GPU without a measured profile: the reference device's measured curves
// with their bandwidth-bound part scaled by the ratio of peak memory
// bandwidths (the same kernels reaching the same fraction of peak), the
// measured unpack throughput likewise.
void CompressionCost::load_estimate(const std::string& gpu, const std::string& base_dir) {
  const GpuDevice* target = find_gpu_device(gpu);
  if (!target) {
    throw InputError(scenario_file_, "/compression/profile",
                     fmt::format("estimate:{} names no known GPU; expected one of {}", gpu, gpu_device_names()));
  }
  const GpuDevice& ref = estimate_reference_device();
  std::string file;
  const ProfileCurves measured = load_profile_curves(load_profile_document(ref.measured_profile, base_dir, file), file);
  const double factor = ref.memory_gbytes_per_s / target->memory_gbytes_per_s;
  auto scale = [factor](const KernelCurves& from, KernelCurves& to) {
    for (const auto& [s, curve] : from.sparsifiers) to.sparsifiers[s] = curve.scaled_above_floor(factor);
    for (const auto& [row, curve] : from.adtopk_rows) to.adtopk_rows[row] = curve.scaled_above_floor(factor);
    if (!from.ef_topk.empty()) to.ef_topk = from.ef_topk.scaled_above_floor(factor);
    if (!from.pack.empty()) to.pack = from.pack.scaled_above_floor(factor);
  };
  scale(measured.hot, hot_);
  scale(measured.cold, cold_);
  if (measured.unpack_bytes_per_ns > 0) unpack_bytes_per_ns_ = measured.unpack_bytes_per_ns / factor;
  gpu_source_ = fmt::format("estimate for {} ({}, {:g} GB/s): {} scaled by {:g}/{:g} above each curve's smallest call",
                            target->name, target->description, target->memory_gbytes_per_s, file,
                            ref.memory_gbytes_per_s, target->memory_gbytes_per_s);
}

// The seed tables exist for top-k, DGC, RedSync, random-k and SIDCo-exp.
// Gaussiank's row is commented out in the seed: it is costed with SIDCo's
// (both are a statistics pass plus a threshold pass); ADTopk with top-k's.
static policy::seed::SeedSparsifier seed_table_for(Sparsifier s) {
  using policy::seed::SeedSparsifier;
  switch (s) {
    case Sparsifier::kDgc: return SeedSparsifier::kDgc;
    case Sparsifier::kRedsync: return SeedSparsifier::kRedSync;
    case Sparsifier::kRandomk: return SeedSparsifier::kRandomk;
    case Sparsifier::kSidco:
    case Sparsifier::kGaussiank: return SeedSparsifier::kSidcoExp;
    default: return SeedSparsifier::kTopk;
  }
}

// SPARSIFIER's curve in CURVES, or null: ADTopk-I's global iterations are
// top-k; ADTopk without its own curve uses top-k's.
static const CostCurve* find_curve(const KernelCurves& curves, Sparsifier s) {
  auto it = curves.sparsifiers.find(s);
  if (it == curves.sparsifiers.end() && (s == Sparsifier::kAdtopk || s == Sparsifier::kAdtopkI)) {
    it = curves.sparsifiers.find(Sparsifier::kTopk);
  }
  return it == curves.sparsifiers.end() || it->second.empty() ? nullptr : &it->second;
}

static const CostCurve& curve_for(const KernelCurves& curves, Sparsifier s, const std::string& source) {
  const CostCurve* curve = find_curve(curves, s);
  if (!curve) {
    throw InputError(source, "/compression", "the profile has no curve for sparsifier \"" +
                                                 policy::sparsifier_name(s) + "\"");
  }
  return *curve;
}

// (1 - COLD) x HOT_US + COLD x the cold time, where there is one.
static double blend(double hot_us, std::optional<double> cold_us, double cold) {
  return cold_us && cold > 0 ? (1 - cold) * hot_us + cold * *cold_us : hot_us;
}

// HOT's time blended with COLD's (null: none measured); the cold curve is
// read only when COLD_FRACTION > 0, which per-tensor requests never have.
static double blended_us(const CostCurve& hot, const CostCurve* cold, int64_t elements, double density,
                         double cold_fraction) {
  const double hot_us = hot.time_us(elements, density);
  if (!cold || cold_fraction <= 0) return hot_us;
  return blend(hot_us, cold->time_us(elements, density), cold_fraction);
}

static TimeNs us_to_ns(double us) { return round_ns(us * 1e3); }

TimeNs CompressionCost::gpu_ns(Sparsifier s, int64_t elements, double density, double cold_fraction,
                               bool fused) const {
  if (seed_tables_) return seconds_to_ns(policy::seed::seed_tz_s(elements, seed_table_for(s)));
  if (const CostCurve* fused_hot = fused ? find_curve(fused_hot_, s) : nullptr) {
    return us_to_ns(blended_us(*fused_hot, find_curve(fused_cold_, s), elements, density, cold_fraction));
  }
  return us_to_ns(blended_us(curve_for(hot_, s, gpu_source_), find_curve(cold_, s), elements, density, cold_fraction));
}

TimeNs CompressionCost::adtopk_tensor_ns(int64_t elements, int64_t row_length, double density,
                                         double cold_fraction) const {
  if (!adtopk_by_row()) return gpu_ns(Sparsifier::kAdtopk, elements, density, cold_fraction);
  const int64_t row = row_length > 0 ? row_length : kProfileAdtopkRow;
  auto at_row = [&](int64_t measured) {
    auto cold = cold_.adtopk_rows.find(measured);
    return blended_us(hot_.adtopk_rows.at(measured), cold == cold_.adtopk_rows.end() ? nullptr : &cold->second,
                      elements, density, cold_fraction);
  };
  // The measured rows around ROW, of those measured at this size or below (a
  // tensor is at least one row long; the shortest row counts regardless).
  int64_t lo = 0, hi = 0;
  bool shortest = true;
  for (const auto& [measured, curve] : hot_.adtopk_rows) {
    const bool covers = shortest || curve.min_elements() <= elements;
    shortest = false;
    if (!covers) continue;
    if (measured <= row) lo = measured;
    if (measured >= row && hi == 0) hi = measured;
  }
  if (hi == 0 || lo == hi) return us_to_ns(at_row(lo));
  if (lo == 0) return us_to_ns(at_row(hi));
  const double f = std::log(double(row) / double(lo)) / std::log(double(hi) / double(lo));
  return us_to_ns(std::exp((1 - f) * std::log(at_row(lo)) + f * std::log(at_row(hi))));
}

TimeNs CompressionCost::cpu_ns(Sparsifier s, int64_t elements, double density) const {
  if (cpu_.sparsifiers.empty()) {
    throw InputError(scenario_file_, "/compression/cpu_profile",
                     "CPU offload needs CPU cost curves: give a profile measured with "
                     "`sparsefuse profile-kernels --device cpu`");
  }
  double copies_bytes = 4.0 * double(elements) + 8.0 * double(policy::exact_count(elements, density));
  double copy_ns = copies_bytes / config_.pcie_gbytes_per_s;
  return us_to_ns(curve_for(cpu_, s, cpu_source_).time_us(elements, density)) + TimeNs(std::llround(copy_ns));
}

// The fused kernel's excess over plain top-k in CURVES, if it measured both.
static std::optional<double> ef_excess_us(const KernelCurves& curves, int64_t elements, double density) {
  const CostCurve* topk = find_curve(curves, Sparsifier::kTopk);
  if (curves.ef_topk.empty() || !topk) return std::nullopt;
  return std::max(0.0, curves.ef_topk.time_us(elements, density) - topk->time_us(elements, density));
}

TimeNs CompressionCost::error_feedback_ns(int64_t elements, double density, double cold_fraction) const {
  if (const auto hot = ef_excess_us(hot_, elements, density)) {
    return us_to_ns(cold_fraction > 0 ? blend(*hot, ef_excess_us(cold_, elements, density), cold_fraction) : *hot);
  }
  return TimeNs(std::llround(12.0 * double(elements) / config_.gpu_memory_gbytes_per_s));
}

// The pack curve's density for PAIRS out of ELEMENTS (both > 0): 1 for a
// bucket sent dense as pairs.
static double pair_density(int64_t elements, int64_t pairs) { return std::min(1.0, double(pairs) / double(elements)); }

TimeNs CompressionCost::pack_ns(int64_t elements, int64_t pairs, double cold_fraction) const {
  if (hot_.pack.empty() || elements <= 0 || pairs <= 0) return 0;
  const double density = pair_density(elements, pairs);
  return us_to_ns(blended_us(hot_.pack, cold_.pack.empty() ? nullptr : &cold_.pack, elements, density, cold_fraction));
}

// AFTER's time less HOT's at (ELEMENTS clamped to AFTER's largest size,
// DENSITY), at least 0.
static double entry_excess_us(const CostCurve& after, const CostCurve& hot, int64_t elements, double density) {
  const int64_t n = std::min(elements, after.max_elements());
  return std::max(0.0, after.time_us(n, density) - hot.time_us(n, density));
}

TimeNs CompressionCost::entry_ns(Sparsifier s, bool error_feedback, int64_t elements, double density) const {
  if (!config_.calls_after_compute) return 0;
  if (error_feedback && s == Sparsifier::kTopk && !after_.ef_topk.empty() && !hot_.ef_topk.empty()) {
    return us_to_ns(entry_excess_us(after_.ef_topk, hot_.ef_topk, elements, density));
  }
  const CostCurve* after = find_curve(after_, s);
  return after ? us_to_ns(entry_excess_us(*after, curve_for(hot_, s, gpu_source_), elements, density)) : 0;
}

TimeNs CompressionCost::pack_entry_ns(int64_t elements, int64_t pairs) const {
  if (!config_.calls_after_compute || after_.pack.empty() || hot_.pack.empty() || elements <= 0 || pairs <= 0) return 0;
  return us_to_ns(entry_excess_us(after_.pack, hot_.pack, elements, pair_density(elements, pairs)));
}

TimeNs CompressionCost::flush_bookkeeping_ns() const { return us_to_ns(flush_bookkeeping_us_); }

const std::vector<std::pair<double, double>>* CompressionCost::adtopk_own_ratios(const std::string& tensor) const {
  const auto found = adtopk_own_ratio_.find(tensor);
  return found == adtopk_own_ratio_.end() ? nullptr : &found->second;
}

std::optional<TimeNs> CompressionCost::in_situ_flush_ns(int tensor) const {
  if (tensor < 0 || size_t(tensor) >= in_situ_flush_us_.size() || !in_situ_flush_us_[size_t(tensor)]) {
    return std::nullopt;
  }
  return us_to_ns(*in_situ_flush_us_[size_t(tensor)]);
}

TimeNs CompressionCost::request_bookkeeping_ns() const { return us_to_ns(request_bookkeeping_us_); }

std::string CompressionCost::compression_costs() const {
  std::string costs = gpu_source_;
  if (!fused_source_.empty()) costs += "; requests fusing several tensors selected at " + fused_source_ + "'s curves";
  if (config_.calls_after_compute) {
    const bool measured = !after_.sparsifiers.empty() || !after_.ef_topk.empty() || !after_.pack.empty();
    costs += measured ? "; calls after compute: its compression_after_compute excess charged"
                      : "; calls after compute: it measured none, every call charged hot";
  }
  if (flush_bookkeeping_us_ > 0) {
    costs += fmt::format("; the runtime's bookkeeping, {:g} us per packed flush ({})", flush_bookkeeping_us_,
                         flush_bookkeeping_source_);
  }
  if (!adtopk_own_ratio_.empty()) {
    costs += fmt::format("; ADTopk on {} tensors scaled by its time on their own gradient over Gaussian values ({})",
                         adtopk_own_ratio_.size(), adtopk_own_ratio_source_);
  }
  const auto measured = std::count_if(in_situ_flush_us_.begin(), in_situ_flush_us_.end(),
                                      [](const std::optional<double>& us) { return us.has_value(); });
  if (measured > 0) {
    costs += fmt::format("; a bucket of one tensor sent dense as pairs: that tensor's flush measured in situ by "
                         "the trace's runtime_flush ({} tensors)",
                         measured);
  }
  if (request_bookkeeping_us_ > 0) {
    costs += fmt::format("; the runtime's bookkeeping, {:g} us per inline compression request ({})",
                         request_bookkeeping_us_,
                         config_.request_bookkeeping_us ? "compression.request_bookkeeping_us" : "the profile's");
  }
  return costs;
}

TimeNs CompressionCost::decompression_ns(int64_t elements, int64_t gathered_pairs) const {
  return TimeNs(std::llround((4.0 * double(elements) + 8.0 * double(gathered_pairs)) / unpack_bytes_per_ns_));
}

}  // namespace sparsefuse::model
