#include "model/scenario.h"

#include <filesystem>

#include <fmt/format.h>

#include "model/gpu_devices.h"
#include "model/seed_network.h"

namespace sparsefuse::model {

// SPEC as a scheme object: NAME, NAME{knobs} or a JSON object.
static Json scheme_object(const std::string& spec, const std::string& where) {
  Json value = Json::parse(spec, nullptr, /*allow_exceptions=*/false);
  if (value.is_object()) return value;
  if (value.is_string()) return Json{{"preset", value}};
  const size_t brace = spec.find('{');
  if (brace == std::string::npos) return Json{{"preset", spec}};
  Json knobs = Json::parse(spec.substr(brace), nullptr, /*allow_exceptions=*/false);
  if (!knobs.is_object() || brace == 0) {
    throw InputError(where, "", fmt::format("expected NAME or NAME{{\"knob\": value, ...}}, got {}", spec));
  }
  knobs["preset"] = spec.substr(0, brace);
  return knobs;
}

void choose_scheme(Json& document, const std::string& spec, const std::string& where, std::vector<std::string>& notes) {
  Json chosen = scheme_object(spec, where);
  const Json& previous = document.contains("scheme") ? document["scheme"] : Json();
  const policy::Preset* preset =
      chosen["preset"].is_string() ? policy::find_preset(chosen["preset"].get<std::string>()) : nullptr;
  if (previous.is_object() && preset) {
    // Only what the scenario set away from its own preset's defaults is a
    // setting to carry; a resolved scheme (result.json) lists every default.
    const policy::Preset* before =
        previous.value("preset", Json()).is_string() ? policy::find_preset(previous["preset"]) : nullptr;
    auto is_default = [before](const std::string& key, const Json& value) {
      if (key == "replan_every") return value == Json(0);
      const policy::Knob* knob = before ? before->knob(key) : nullptr;
      return knob && knob->default_value == value;
    };
    for (auto it = previous.begin(); it != previous.end(); ++it) {
      if (it.key() == "preset" || chosen.contains(it.key()) || is_default(it.key(), it.value())) continue;
      if (preset->knob(it.key()) || (it.key() == "replan_every" && preset->replanning == policy::Replanning::kAllowed)) {
        chosen[it.key()] = it.value();
        notes.push_back(fmt::format("{}: keeps the scenario's scheme knob {} = {}", preset->name, it.key(),
                                    it.value().dump()));
      } else {
        notes.push_back(fmt::format("{}: has no knob \"{}\"; the scenario's {} = {} does not apply to it",
                                    preset->name, it.key(), it.key(), it.value().dump()));
      }
    }
  }
  document["scheme"] = chosen.size() == 1 ? chosen["preset"] : chosen;
}

void apply_override(Json& document, const std::string& assignment, std::vector<std::string>* notes) {
  const std::string where = "--set " + assignment;
  size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) throw InputError(where, "", "expected KEY=VALUE");
  // Command-line bytes need not be UTF-8, and JSON text must be: a result file
  // could not record such a value (nlohmann's dump checks it).
  try {
    (void)Json(assignment).dump();
  } catch (const Json::type_error&) {
    throw InputError(where, "", "expected UTF-8 text");
  }
  std::string key = assignment.substr(0, eq);
  std::string text = assignment.substr(eq + 1);
  if (key == "scheme") {
    std::vector<std::string> discarded;
    choose_scheme(document, text, where, notes ? *notes : discarded);
    return;
  }
  Json value = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) value = text;

  Json* node = &document;
  size_t start = 0;
  std::string parent;
  while (true) {
    size_t dot = key.find('.', start);
    std::string part = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (part.empty()) throw InputError(where, "", "empty component in key \"" + key + "\"");
    if (node->is_string() && parent == "scheme") *node = Json{{"preset", node->get<std::string>()}};
    if (node->is_null()) *node = Json::object();
    if (!node->is_object()) {
      throw InputError(where, "", fmt::format("\"{}\" is not an object, cannot set \"{}\" in it", parent, part));
    }
    if (dot == std::string::npos) {
      (*node)[part] = value;
      return;
    }
    node = &(*node)[part];
    parent = part;
    start = dot + 1;
  }
}

static Trace load_model(const JsonNode& node, const std::string& scenario_file) {
  if (node.json().is_string()) {
    std::string name = node.as_string();
    if (is_builtin_trace(name)) return load_builtin_trace(name);
    std::string hint = nearest_name(name, builtin_trace_names());
    std::string all;
    for (const auto& n : builtin_trace_names()) all += (all.empty() ? "" : ", ") + n;
    node.fail(hint.empty() ? fmt::format("unknown model \"{}\"; built-in models: {} (or {{\"trace\": PATH}})",
                                         name, all)
                           : fmt::format("unknown model \"{}\"; did you mean \"{}\"?", name, hint));
  }
  node.expect_object();
  node.check_keys({"trace"});
  std::filesystem::path path = node.child("trace").as_string();
  if (path.is_relative()) path = std::filesystem::path(scenario_file).parent_path() / path;
  return load_trace_file(path.string());
}

// A topology with the flat model is a contradiction (the flat model costs
// every collective on one link class and ignores the graph); keys the chosen
// network model does not read are noted, so no setting is ignored in silence.
static void check_network_settings(const JsonNode& root, const JsonNode* network, Scenario& s) {
  if (s.topology && s.network.model == "flat") {
    (network && network->has("model") ? network->child("model") : root.child("topology"))
        .fail(fmt::format("the flat network model ignores the topology \"{}\"; use \"nccl\" (the default with a "
                          "topology) or \"calibrated\", or drop \"topology\"",
                          s.topology->preset));
  }
  if (!network) return;
  struct KeysOf {
    const char* model;
    std::vector<const char*> keys;
  };
  const KeysOf owners[] = {{"flat", {"latency_us", "bandwidth_gbps", "allreduce", "tree_segment_bytes"}},
                           {"nccl", {"nccl_algo", "nccl_proto", "nccl_channels", "hierarchical_allreduce"}},
                           {"calibrated", {"profile"}}};
  for (const auto& owner : owners) {
    if (s.network.model == owner.model) continue;
    for (const char* key : owner.keys) {
      if (network->has(key)) {
        s.notes.push_back(fmt::format("{}: network.{} is read by the {} model only; the {} model ignores it",
                                      s.file, key, owner.model, s.network.model));
      }
    }
  }
}

Scenario parse_scenario(const Json& document, const std::string& file) {
  JsonNode root(document, file, "");
  root.check_keys({"description", "model", "batch_per_worker", "workers", "iterations", "warmup_iterations",
                   "seed", "scheme", "network", "topology", "variability", "compression", "compute"});
  Scenario s;
  s.file = file;
  s.description = root.get_string("description", "");
  JsonNode model = root.child("model");
  s.model_spec = model.json();
  s.trace = load_model(model, file);
  s.batch_per_worker = root.get_int("batch_per_worker", s.trace.batch_size, 1, 1 << 24);
  s.workers = int(root.child("workers").as_int(1, 1 << 20));
  s.iterations = int(root.get_int("iterations", 20, 1, 10'000'000));
  s.warmup_iterations = int(root.get_int("warmup_iterations", 2, 0, 10'000'000));
  s.seed = uint64_t(root.get_int("seed", 1, 0, INT64_MAX));
  Json empty = Json::object();
  auto compression = root.optional_child("compression");
  s.compression = CompressionConfig::parse(compression ? *compression : JsonNode(empty, file, "/compression"));
  Json inherited = {{"density", s.compression.density}};
  if (!s.compression.sparsifier.empty()) inherited["sparsifier"] = s.compression.sparsifier;
  s.scheme = policy::parse_scheme_config(root.child("scheme"), inherited);
  auto network = root.optional_child("network");
  s.network = NetworkConfig::parse(network ? *network : JsonNode(empty, file, "/network"));
  if (auto topology = root.optional_child("topology")) {
    s.topology = netmodel::parse_topology(*topology);
    // The cluster has as many GPUs as the scenario has workers.
    int g = s.topology->gpus_per_node;
    if (!topology->has("nodes")) {
      if (s.workers % g != 0) {
        root.child("workers").fail(fmt::format("expected a multiple of the topology's {} GPUs per node, got {}", g,
                                               s.workers));
      }
      s.topology->nodes = s.workers / g;
    } else if (int64_t(s.topology->nodes) * g != s.workers) {
      topology->child("nodes").fail(fmt::format("nodes x gpus_per_node = {} x {} must equal workers ({})",
                                                s.topology->nodes, g, s.workers));
    }
    if (s.topology->fabric == netmodel::FabricKind::kFatTree) {
      const int needed = netmodel::fat_tree_radix_needed(*s.topology);
      if (needed > s.topology->radix) {
        (topology->has("fabric") ? topology->child("fabric") : *topology)
            .fail(fmt::format("a fat-tree of radix {} cannot connect {} NICs at oversubscription {}; it needs radix "
                              ">= {} (or fewer workers)",
                              s.topology->radix, s.topology->nodes * s.topology->nics_per_node,
                              s.topology->oversubscription, needed));
      }
    }
    // A named GPU sets the compression costs unless the scenario names a profile.
    if (!s.topology->gpu.empty()) {
      if (!find_gpu_device(s.topology->gpu)) {
        topology->child("gpu").fail(fmt::format("unknown GPU \"{}\"; expected one of {}", s.topology->gpu,
                                                gpu_device_names()));
      }
      if (!(compression && compression->has("profile"))) {
        s.compression.profile = default_compression_profile(s.topology->gpu);
      }
    }
    // A topology implies NCCL's model (seed-8node: the seed table) unless the scenario names another.
    if (!(network && network->has("model"))) s.network.model = netmodel::preset_network_model(s.topology->preset);
  }
  check_network_settings(root, network ? &*network : nullptr, s);
  if (s.network.model == "seed-table" && s.workers != kSeedTableWorkers) {
    root.child("workers").fail(fmt::format("the seed-table network model was measured on {} nodes; expected workers "
                                           "= {}, got {}", kSeedTableWorkers, kSeedTableWorkers, s.workers));
  }
  auto variability = root.optional_child("variability");
  s.variability = VariabilityConfig::parse(variability ? *variability : JsonNode(empty, file, "/variability"),
                                           s.workers, s.trace.iteration_cv);
  // Every topology preset describes GPU nodes whose collectives run as GPU
  // kernels beside the backward pass: the measured interference applies.
  auto compute = root.optional_child("compute");
  s.compute = ComputeConfig::parse(compute ? *compute : JsonNode(empty, file, "/compute"), s.topology.has_value());
  return s;
}

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  Json document = load_json_file(path);
  std::vector<std::string> notes;
  for (const auto& o : overrides) apply_override(document, o, &notes);
  Scenario s;
  try {
    s = parse_scenario(document, path);
  } catch (const InputError& e) {
    // A bad value that came from --set is the option's fault, not the file's.
    for (auto o = overrides.rbegin(); o != overrides.rend(); ++o) {
      const std::string key = o->substr(0, o->find('='));
      std::string pointer = "/" + key;
      for (char& ch : pointer) ch = ch == '.' ? '/' : ch;
      if (e.pointer() == pointer || e.pointer().rfind(pointer + "/", 0) == 0) {
        throw InputError("--set " + *o, e.pointer(), e.problem());
      }
    }
    throw;
  }
  s.notes.insert(s.notes.begin(), notes.begin(), notes.end());
  return s;
}

Json Scenario::resolved() const {
  Json model = model_spec;
  Json out = {{"description", description},
          {"model", model},
          {"batch_per_worker", batch_per_worker},
          {"workers", workers},
          {"iterations", iterations},
          {"warmup_iterations", warmup_iterations},
          {"seed", seed},
          {"scheme", scheme.resolved},
          {"network", network.to_json()},
          {"variability", variability.to_json()},
          {"compression", compression.to_json()},
          {"compute", compute.to_json()}};
  if (topology) out["topology"] = topology->to_json();
  return out;
}

std::string Scenario::base_dir() const {
  return file.empty() ? std::string() : std::filesystem::path(file).parent_path().string();
}

}  // namespace sparsefuse::model
