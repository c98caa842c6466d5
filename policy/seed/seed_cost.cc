#include "policy/seed/seed_cost.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

namespace sparsefuse::policy::seed {
namespace {

// The seed's communication table: x in KB, time in ms.
constexpr std::array<double, 8> kTcKb = {0.1, 1, 10, 100, 1000, 10000, 100000, 150000};
constexpr std::array<double, 8> kTcMs = {5.115, 5.463, 5.578, 5.976, 19.65, 112.4, 1005.7, 1516.1};

// The seed's compression tables: x in KB (10 KB ... 1 GB on a decimal grid), time in ms.
constexpr std::array<double, 6> kTzKb = {10, 100, 1000, 10000, 100000, 1000000};
constexpr std::array<double, 6> kTopkMs = {0.0768, 0.1762, 0.3171, 0.2413, 0.3452, 1.5996};
constexpr std::array<double, 6> kDgcMs = {0.340, 0.376, 0.994, 2.592, 10.45, 39.02};
constexpr std::array<double, 6> kRedSyncMs = {0.416, 0.394, 0.751, 0.971, 3.156, 26.70};
constexpr std::array<double, 6> kRandomkMs = {0.252, 0.132, 0.356, 0.786, 1.914, 13.43};
constexpr std::array<double, 6> kSidcoExpMs = {0.343, 0.233, 0.452, 0.407, 1.360, 11.03};

const std::array<double, 6>& tz_table_ms(SeedSparsifier s) {
  switch (s) {
    case SeedSparsifier::kTopk: return kTopkMs;
    case SeedSparsifier::kDgc: return kDgcMs;
    case SeedSparsifier::kRedSync: return kRedSyncMs;
    case SeedSparsifier::kRandomk: return kRandomkMs;
    case SeedSparsifier::kSidcoExp: return kSidcoExpMs;
  }
  return kTopkMs;  // unreachable; keeps -Wreturn-type quiet
}

}  // namespace

std::optional<SeedSparsifier> parse_seed_sparsifier(std::string_view name) {
  if (name == "topk") return SeedSparsifier::kTopk;
  if (name == "dgc") return SeedSparsifier::kDgc;
  if (name == "redsync") return SeedSparsifier::kRedSync;
  if (name == "randomk") return SeedSparsifier::kRandomk;
  if (name == "sidco" || name == "sidco-exp" || name == "exp") return SeedSparsifier::kSidcoExp;
  return std::nullopt;
}

double seed_backward_time_s(std::string_view model_key) {
  struct Entry {
    std::string_view key;
    double t_bwd_s;
  };
  // Current (uncommented) values; the older resnet50/152/101 values are not used.
  static constexpr std::array<Entry, 8> kTable = {{
      {"resnet50", 0.035237},
      {"resnet152", 0.057006},
      {"resnet101", 0.054357},
      {"vgg16", 0.015517},
      {"vgg19", 0.017644},
      {"lstm", 0.065097},
      {"transformer", 0.093534},
      {"bert_base", 0.046414},
  }};
  for (const Entry& e : kTable) {
    if (e.key == model_key) return e.t_bwd_s;
  }
  return 0.0;
}

std::string seed_script_model_key(std::string_view trace_model) {
  struct Entry {
    std::string_view trace;
    std::string_view key;
  };
  static constexpr std::array<Entry, 6> kScripts = {{
      {"bert-base", "bert_base"},
      {"bert-large", "bert_base"},  // no model name passed: the script default
      {"gpt2-large", "gpt_2"},
      {"vit-large", "gpt_2"},  // the ViT scripts pass gpt_2
      {"resnet50", "resnet50"},
      {"resnet50-cifar100", "resnet50"},
  }};
  for (const Entry& e : kScripts) {
    if (e.trace == trace_model) return std::string(e.key);
  }
  return std::string(trace_model);
}

double seed_diff_min_s(std::string_view model_key) {
  if (model_key == "lstm") return 5.8047e-3;
  if (model_key == "transformer") return 9.0568e-2;
  return 0.0;
}

double seed_tb_s(int64_t n_elements, int64_t model_total_elements, double t_bwd_s) {
  if (model_total_elements <= 0) return 0.0;
  return t_bwd_s * static_cast<double>(n_elements) / static_cast<double>(model_total_elements);
}

int64_t seed_tc_kb(int64_t n_elements, double rho) {
  // Python: int(n * rho * 4 / 1024): float product, left to right, then
  // truncation toward zero (static_cast does the same).
  const double kb = static_cast<double>(n_elements) * rho * 4.0 / 1024.0;
  return static_cast<int64_t>(kb);
}

double seed_tc_s(int64_t n_elements, double rho) { return seed_tc_at_kb_s(static_cast<double>(seed_tc_kb(n_elements, rho))); }

double seed_tc_at_kb_s(double kb) { return interp_linear_clamped(kTcKb, kTcMs, kb) / 1000.0; }

int64_t seed_tz_kb(int64_t n_elements) {
  // Python: max(1, int(4 * n / 1024)). 4n/1024 = n/256 is exact in a double
  // for any realistic n, so integer division gives the same truncation.
  return std::max<int64_t>(1, (4 * n_elements) / 1024);
}

double seed_tz_s(int64_t n_elements, SeedSparsifier sparsifier) {
  const double x = static_cast<double>(seed_tz_kb(n_elements));
  return interp_linear_clamped(kTzKb, tz_table_ms(sparsifier), x) / 1000.0;
}

double seed_tz_s(int64_t n_elements, std::string_view sparsifier_name) {
  const std::optional<SeedSparsifier> s = parse_seed_sparsifier(sparsifier_name);
  if (!s) throw std::invalid_argument("unknown seed sparsifier: " + std::string(sparsifier_name));
  return seed_tz_s(n_elements, *s);
}

double interp_linear_clamped(std::span<const double> xs, std::span<const double> ys, double x) {
  if (xs.size() < 2 || xs.size() != ys.size()) {
    throw std::invalid_argument("interp_linear_clamped: need >= 2 points and equal lengths");
  }
  // Clamp strictly outside the range only: on the end knots interp1d still
  // interpolates, and so do we.
  if (x < xs.front()) return ys.front();
  if (x > xs.back()) return ys.back();
  // searchsorted(side='left') then clip to [1, n-1], as interp1d does.
  const auto it = std::lower_bound(xs.begin(), xs.end(), x);
  const std::size_t hi = std::max<std::size_t>(1, static_cast<std::size_t>(it - xs.begin()));
  const std::size_t lo = hi - 1;
  const double slope = (ys[hi] - ys[lo]) / (xs[hi] - xs[lo]);
  return slope * (x - xs[lo]) + ys[lo];
}

}  // namespace sparsefuse::policy::seed
