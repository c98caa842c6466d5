// Reading cases/*.json and bounds.json.
#include <algorithm>
#include <filesystem>

#include "common/input_error.h"
#include "common/json_reader.h"
#include "tools/fidelity/suite.h"

namespace sparsefuse::fidelity {

namespace {

std::string one_of(const JsonNode& node, const std::vector<std::string>& allowed) {
  std::string value = node.as_string();
  if (std::find(allowed.begin(), allowed.end(), value) == allowed.end()) {
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    node.fail("expected one of " + list + ", got \"" + value + "\"");
  }
  return value;
}

Point read_point(const JsonNode& node, const Case& c) {
  node.expect_object();
  Point p;
  if (c.kind == "collective") {
    node.check_keys({"bytes", "measured_us", "held_out"});
    p.bytes = node.child("bytes").as_number(4, 1e13);
    p.measured = node.child("measured_us").as_number(0, 1e12, true);
    p.held_out = node.get_bool("held_out", false);
    p.workers = c.workers;
  } else {
    node.check_keys({"scheme", "workers", "measured"});
    p.scheme = node.child("scheme").as_string();
    p.workers = int(node.child("workers").as_int(1, 1 << 20));
    p.measured = node.child("measured").as_number(0, 1e12, true);
  }
  return p;
}

Case read_case(const std::string& path) {
  Json doc = load_json_file(path);
  JsonNode root(doc, path, "");
  root.expect_object();
  root.check_keys({"id", "measurement", "category", "role", "calibrates", "note", "kind", "scenario", "metric",
                   "collective", "workers", "base_workers", "compare_methods", "points"});
  Case c;
  c.file = path;
  c.id = root.child("id").as_string();
  c.measurement = root.child("measurement").as_string();
  c.category = one_of(root.child("category"), {"nccl-tests", "osu", "per-layer-trace", "end-to-end"});
  c.role = one_of(root.child("role"), {"calibration", "validation"});
  // The Rule: end-to-end training numbers validate, they never calibrate.
  if (c.category == "end-to-end" && c.role != "validation") {
    root.child("role").fail("an end-to-end case is validation only: fit nothing to it");
  }
  c.calibrates = root.get_string("calibrates", "");
  c.note = root.get_string("note", "");
  c.kind = one_of(root.child("kind"), {"collective", "scaling"});
  c.scenario = (std::filesystem::path(path).parent_path() / root.child("scenario").as_string()).string();
  if (c.kind == "collective") {
    c.metric = "time_us";
    one_of(root.child("collective"), {"allreduce"});
    c.workers = int(root.child("workers").as_int(2, 1 << 20));
  } else {
    c.metric = one_of(root.child("metric"), {"speedup", "scaling_efficiency"});
    c.base_workers = int(root.get_int("base_workers", 1, 1, 1 << 20));
    c.compare_methods = root.get_bool("compare_methods", false);
  }
  JsonNode points = root.child("points");
  if (points.array_size() == 0) points.fail("expected at least one measured point");
  for (size_t i = 0; i < points.array_size(); ++i) c.points.push_back(read_point(points.element(i), c));
  return c;
}

}  // namespace

std::vector<Case> load_cases(const std::string& dir) {
  std::filesystem::path cases_dir = std::filesystem::path(dir) / "cases";
  if (!std::filesystem::is_directory(cases_dir)) {
    throw InputError(cases_dir.string(), "", "expected a directory of fidelity cases (*.json)");
  }
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(cases_dir)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) throw InputError(cases_dir.string(), "", "no *.json cases");
  std::vector<Case> cases;
  for (const auto& f : files) cases.push_back(read_case(f));
  return cases;
}

std::map<std::string, double> load_bounds(const std::string& path) {
  Json doc = load_json_file(path);
  JsonNode root(doc, path, "");
  root.expect_object();
  JsonNode bounds = root.child("bounds");
  bounds.expect_object();
  std::map<std::string, double> out;
  for (const auto& [id, value] : doc["bounds"].items()) out[id] = bounds.child(id).as_number(0, 100);
  return out;
}

}  // namespace sparsefuse::fidelity
