#include "sim/sweep.h"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "common/atomic_file.h"
#include "common/input_error.h"
#include "model/scenario.h"
#include "sim/simulator.h"

namespace sparsefuse::sim {

namespace fs = std::filesystem;

namespace {

// A grid larger than this is almost certainly a typo (and would not finish).
constexpr size_t kMaxPoints = 10'000'000;
constexpr size_t kMaxIdLength = 160;

// Splits on commas that are not inside JSON brackets, braces or strings.
std::vector<std::string> split_top_level(const std::string& text) {
  std::vector<std::string> parts;
  std::string current;
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    } else if (c == ',' && depth == 0) {
      parts.push_back(current);
      current.clear();
      continue;
    }
    current += c;
  }
  parts.push_back(current);
  return parts;
}

std::vector<std::string> checked_values(const std::string& where, const std::string& list) {
  // Keys and values go into sweep.json, which must be UTF-8 (nlohmann's dump checks it).
  try {
    (void)Json(where).dump();
  } catch (const Json::type_error&) {
    throw InputError(where, "", "expected UTF-8 text");
  }
  std::vector<std::string> values = split_top_level(list);
  std::set<std::string> seen;
  for (const auto& v : values) {
    if (v.empty()) throw InputError(where, "", "expected a comma-separated list of non-empty values");
    if (!seen.insert(v).second) throw InputError(where, "", fmt::format("value \"{}\" is listed twice", v));
  }
  return values;
}

// FNV-1a: a small, portable hash; ids must not depend on the standard library.
uint64_t fnv1a(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

bool safe_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '+' || c == '=' || c == ',' || c == '-';
}

// A point's error with the point appended; a bad grid value is named as the
// "--grid KEY=VALUE" it came from, not the "--set" it was applied as.
InputError with_point_context(const InputError& e, const std::string& id, const std::vector<GridAxis>& axes) {
  std::string where = e.file();
  for (const auto& axis : axes) {
    if (where.rfind("--set " + axis.key + "=", 0) == 0) where = "--grid " + where.substr(6);
  }
  return InputError(where, e.pointer(), e.problem() + " (sweep point " + id + ")");
}

bool read_text(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  out = buffer.str();
  return bool(in) || in.eof();
}

// Removes temporary files a killed run may have left in a point's directory.
void remove_stale_temporaries(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("result.json.tmp.", 0) == 0 || name.rfind("error.json.tmp.", 0) == 0) {
      fs::remove(entry.path(), ec);
    }
  }
}

std::string format_number(const Json& value) {
  if (value.is_number_integer()) return fmt::format("{}", value.get<int64_t>());
  // Times are sums of integer nanoseconds divided by counts, so the shortest round-trip form
  // shows summation noise (0.49028133980000005); 12 significant digits keep sub-nanosecond
  // precision for any time below 1000 s and drop the noise.
  return fmt::format("{:.12g}", value.get<double>());
}

}  // namespace

GridAxis parse_grid_axis(const std::string& text) {
  const std::string where = "--grid " + text;
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) throw InputError(where, "", "expected KEY=VALUE1,VALUE2,...");
  return {text.substr(0, eq), checked_values(where, text.substr(eq + 1))};
}

GridAxis schemes_axis(const std::string& list) {
  return {"scheme", checked_values("--schemes " + list, list)};
}

std::string point_id(const std::vector<GridAxis>& axes, const std::vector<std::string>& values) {
  std::string exact;
  for (size_t a = 0; a < axes.size(); ++a) {
    exact += (a ? "," : "") + axes[a].key + "=" + values[a];
  }
  std::string id = exact;
  bool changed = false;
  for (char& c : id) {
    if (!safe_char(c)) {
      c = '_';
      changed = true;
    }
  }
  if (!changed && id.size() <= kMaxIdLength) return id;
  if (id.size() > kMaxIdLength) id.resize(kMaxIdLength);
  return id + fmt::format("-h{:016x}", fnv1a(exact));
}

// Runs BODY(i) for i in [0, count) on THREADS threads pulling from a shared counter.
template <typename Body>
static void parallel_for(size_t count, int threads, Body body) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < count;) body(i);
  };
  size_t n = std::min<size_t>(size_t(std::max(threads, 1)), std::max<size_t>(count, 1));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < n; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
}

SweepPlan plan_sweep(const std::string& scenario_path, const std::vector<std::string>& base_overrides,
                     const std::vector<GridAxis>& axes, bool validate, int threads) {
  if (axes.empty()) throw InputError("sweep", "", "expected at least one --grid KEY=VALUES or --schemes");
  SweepPlan plan{scenario_path, base_overrides, axes, {}};
  size_t total = 1;
  std::set<std::string> keys;
  for (const auto& axis : axes) {
    if (!keys.insert(axis.key).second) {
      throw InputError("--grid " + axis.key, "", "this key is swept twice (--schemes sweeps \"scheme\")");
    }
    if (axis.values.empty()) throw InputError("--grid " + axis.key, "", "expected at least one value");
    if (total > kMaxPoints / axis.values.size()) {
      throw InputError("--grid", "", fmt::format("the grid has more than {} points", kMaxPoints));
    }
    total *= axis.values.size();
  }

  std::vector<size_t> digit(axes.size(), 0);  // mixed-radix counter, last axis fastest
  std::set<std::string> ids;
  for (size_t i = 0; i < total; ++i) {
    SweepPoint point;
    point.index = i;
    point.overrides = base_overrides;
    for (size_t a = 0; a < axes.size(); ++a) {
      point.values.push_back(axes[a].values[digit[a]]);
      point.overrides.push_back(axes[a].key + "=" + axes[a].values[digit[a]]);
    }
    point.id = point_id(axes, point.values);
    if (!ids.insert(point.id).second) {
      throw InputError("--grid", "", "two points map to the same directory name " + point.id);
    }
    plan.points.push_back(std::move(point));
    for (size_t a = axes.size(); a-- > 0;) {
      if (++digit[a] < axes[a].values.size()) break;
      digit[a] = 0;
    }
  }

  if (validate) {
    // Points are taken in increasing order, so once point i failed every
    // point before it has been taken: the lowest failure found is the first.
    std::mutex mutex;
    std::atomic<size_t> first_bad{SIZE_MAX};
    std::optional<InputError> error;
    parallel_for(plan.points.size(), threads, [&](size_t i) {
      if (i > first_bad.load()) return;
      try {
        model::load_scenario(scenario_path, plan.points[i].overrides);
      } catch (const InputError& e) {
        std::lock_guard<std::mutex> lock(mutex);
        if (i < first_bad.load()) {
          first_bad = i;
          error.emplace(with_point_context(e, plan.points[i].id, axes));
        }
      }
    });
    if (error) throw *error;
  }
  return plan;
}

Json SweepPlan::description() const {
  Json keys = Json::array(), values = Json::array(), points_json = Json::array();
  for (const auto& axis : axes) {
    keys.push_back(axis.key);
    values.push_back(axis.values);
  }
  for (const auto& point : points) {
    Json assignment = Json::object();
    for (size_t a = 0; a < axes.size(); ++a) assignment[axes[a].key] = point.values[a];
    points_json.push_back({{"id", point.id},
                           {"values", assignment},
                           {"result", "points/" + point.id + "/result.json"}});
  }
  return {{"format", "sparsefuse-sweep/1"},
          {"scenario", scenario_path},
          {"set", base_overrides},
          {"keys", keys},
          {"values", values},
          {"points", points_json},
          {"results_csv", "results.csv"}};
}

std::string point_dir(const std::string& out_dir, const SweepPoint& point) {
  return (fs::path(out_dir) / "points" / point.id).string();
}

std::string point_result_path(const std::string& out_dir, const SweepPoint& point) {
  return (fs::path(point_dir(out_dir, point)) / "result.json").string();
}

std::optional<Json> read_point_result(const std::string& path) {
  std::string text;
  if (!read_text(path, text)) return std::nullopt;
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  // The fields results.csv reads; anything less is treated as not done.
  for (const char* pointer : {"/iteration_time_s/mean", "/iteration_time_s/p50", "/iteration_time_s/p99",
                              "/throughput_samples_per_s", "/breakdown_s/communication_exposed",
                              "/breakdown_s/sync_wait"}) {
    Json::json_pointer p(pointer);
    if (!j.contains(p) || !j.at(p).is_number()) return std::nullopt;
  }
  if (!j.contains("buckets") || !j["buckets"].is_array() || !j.contains("scenario")) return std::nullopt;
  for (const auto& b : j["buckets"]) {
    if (!b.is_object() || !b.contains("bytes_per_worker") || !b["bytes_per_worker"].is_number()) {
      return std::nullopt;
    }
  }
  return j;
}

SweepRunSummary run_sweep_points(const SweepPlan& plan, const std::string& out_dir,
                                 const SweepRunOptions& options) {
  if (options.ranks < 1 || options.rank < 0 || options.rank >= options.ranks) {
    throw std::invalid_argument("run_sweep_points: rank out of range");
  }
  std::vector<const SweepPoint*> mine;
  for (const auto& point : plan.points) {
    if (point.index % size_t(options.ranks) == size_t(options.rank)) mine.push_back(&point);
  }
  SweepRunSummary summary;
  summary.assigned = mine.size();
  std::mutex mutex;  // guards summary and the progress callback
  size_t done = 0;

  auto process = [&](const SweepPoint& point) {
    const std::string dir = point_dir(out_dir, point);
    const std::string result_path = point_result_path(out_dir, point);
    const std::string error_path = (fs::path(dir) / "error.json").string();
    bool ran = false;
    std::string error;
    try {
      model::Scenario scenario = model::load_scenario(plan.scenario_path, point.overrides);
      Json resolved = scenario.resolved();
      auto existing = read_point_result(result_path);
      if (!existing || (*existing)["scenario"] != resolved) {
        remove_stale_temporaries(dir);
        model::RunResult result = simulate(scenario);
        write_file_atomically(result_path, result.to_json().dump(2) + "\n");
        std::error_code ignored;
        fs::remove(error_path, ignored);
        ran = true;
      }
    } catch (const std::exception& e) {
      error = e.what();
      try {
        write_file_atomically(error_path, Json{{"error", error}}.dump(2) + "\n");
      } catch (const std::exception&) {
        // The failure is still counted and reported; the CSV will say "missing".
      }
    }
    std::lock_guard<std::mutex> lock(mutex);
    if (!error.empty()) {
      ++summary.failed;
      summary.errors.push_back(point.id + ": " + error);
    } else if (ran) {
      ++summary.ran;
    } else {
      ++summary.skipped;
    }
    ++done;
    if (options.progress) options.progress(done, mine.size(), ran);
  };

  parallel_for(mine.size(), options.threads, [&](size_t i) { process(*mine[i]); });
  return summary;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string results_csv(const SweepPlan& plan, const std::string& out_dir) {
  std::string csv;
  for (const auto& axis : plan.axes) csv += csv_field(axis.key) + ",";
  csv += "iteration_mean_s,iteration_p50_s,iteration_p99_s,throughput_samples_per_s,"
         "communication_exposed_s,sync_wait_s,buckets,bytes_per_worker,status\n";
  for (const auto& point : plan.points) {
    for (const auto& value : point.values) csv += csv_field(value) + ",";
    auto result = read_point_result(point_result_path(out_dir, point));
    if (!result) {
      std::error_code ec;
      bool failed = fs::exists(fs::path(point_dir(out_dir, point)) / "error.json", ec);
      csv += failed ? ",,,,,,,,failed\n" : ",,,,,,,,missing\n";
      continue;
    }
    const Json& j = *result;
    int64_t bytes = 0;
    for (const auto& b : j["buckets"]) bytes += b["bytes_per_worker"].get<int64_t>();
    csv += fmt::format("{},{},{},{},{},{},{},{},ok\n", format_number(j["iteration_time_s"]["mean"]),
                       format_number(j["iteration_time_s"]["p50"]), format_number(j["iteration_time_s"]["p99"]),
                       format_number(j["throughput_samples_per_s"]),
                       format_number(j["breakdown_s"]["communication_exposed"]),
                       format_number(j["breakdown_s"]["sync_wait"]), j["buckets"].size(), bytes);
  }
  return csv;
}

}  // namespace sparsefuse::sim
