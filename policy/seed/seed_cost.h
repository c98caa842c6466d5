// The seed code's static cost model (docs/seed-partition.md): the per-model backward
// time, the "8 nodes" communication table and the compression tables that
// FGBuff/RGMerge/SAFusion/SSFusion use for every adaptive decision.
//
// Units: every time is a double in SECONDS (suffix _s). The seed code works in
// Python floats, and these functions exist to reproduce its decisions, so they
// stay in doubles rather than the toolkit's integer time types. The tables are
// kept in milliseconds, as the spec prints them, and converted on the way out.
//
// Table lookups behave like SciPy interp1d(kind='linear') on the table points,
// clamped to the first/last value outside the range (interp1d itself would
// raise; the seed's committed GPT-2 log implies clamping). The KB argument is
// truncated exactly like Python's int().
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace sparsefuse::policy::seed {

// Per-message start-up cost α (`startup_time`), seconds.
inline constexpr double kSeedAlphaS = 3.781e-3;

// Compressor tables present in the seed's utils. Only top-k is used by
// the seed's partition and selection code; the others are there for
// experiments with the same cost model.
enum class SeedSparsifier { kTopk, kDgc, kRedSync, kRandomk, kSidcoExp };

// "topk", "dgc", "redsync", "randomk", "sidco" (also "sidco-exp", "exp");
// nullopt for anything else.
std::optional<SeedSparsifier> parse_seed_sparsifier(std::string_view name);

// Hard-coded per-iteration backward time of the whole model (T_bwd), seconds.
// Keys: resnet50, resnet152, resnet101, vgg16, vgg19, lstm, transformer,
// bert_base. Any other key (bert_large, gpt_2, vit, ...) gives 0.0, which is
// what the seed code does and which makes the cost model ignore overlap.
double seed_backward_time_s(std::string_view model_key);

// The model key the seed's training scripts pass for a built-in trace name
// (docs/seed-partition.md, "Model key"): bert-base -> "bert_base"; bert-large
// -> "bert_base" too (its script passes no model name, so the default,
// BERT-base's, applies); gpt2-large and vit-large -> "gpt_2" (T_bwd 0);
// resnet50 / resnet50-cifar100 -> "resnet50"; resnet152 -> "resnet152".
// Any other name is returned unchanged: a key the seed table knows (vgg16,
// ...) selects its entry, anything else gets T_bwd = 0 as in the seed code.
std::string seed_script_model_key(std::string_view trace_model);

// `diff_min` of the greedy step of optimal_gradient_merging_0101: 0 except
// lstm 5.8047e-3 s and transformer 9.0568e-2 s.
double seed_diff_min_s(std::string_view model_key);

// Tb: backward time attributed to N_ELEMENTS of a model of MODEL_TOTAL
// elements, proportional to element count: T_bwd * n / total. 0 if total <= 0.
double seed_tb_s(int64_t n_elements, int64_t model_total_elements, double t_bwd_s);

// Tc: communication time of n elements at density rho. The table argument is
// x = int(n * rho * 4 / 1024) KB (evaluated in that order, in doubles, like
// Python); table 0.1 KB .. 150,000 KB, clamped (5.115 ms / 1.5161 s).
int64_t seed_tc_kb(int64_t n_elements, double rho);
double seed_tc_s(int64_t n_elements, double rho);
// The same table at an argument already in KB (the seed-8node network model
// feeds it a collective's bytes per worker / 1024, truncated).
double seed_tc_at_kb_s(double kb);

// Tz: compression time of n elements. x = max(1, int(4n/1024)) KB over the
// points 10 KB .. 1,000,000 KB (the spec's "1 MB" column is 1,000 KB, the
// same decimal grid as the top-k row), clamped at both ends.
int64_t seed_tz_kb(int64_t n_elements);
double seed_tz_s(int64_t n_elements, SeedSparsifier sparsifier = SeedSparsifier::kTopk);
// Same, selected by name; throws std::invalid_argument for an unknown name.
double seed_tz_s(int64_t n_elements, std::string_view sparsifier_name);

// interp1d(kind='linear') with both ends clamped. XS must be strictly
// increasing and the same length as YS (>= 2). Inside the range it evaluates
// slope * (x - x_lo) + y_lo with lo = (first index with xs[i] >= x) - 1, which
// is the arithmetic SciPy uses (so a point exactly on a knot may differ
// from the table value in the last bit, as in SciPy).
double interp_linear_clamped(std::span<const double> xs, std::span<const double> ys, double x);

}  // namespace sparsefuse::policy::seed
