// A scenario: which model, how many workers, which scheme, which network,
// variability and compute interference, how many iterations. Schema and example: scenarios/README.md.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/json_reader.h"
#include "common/trace.h"
#include "policy/presets.h"
#include "model/compression_cost.h"
#include "model/compute_config.h"
#include "model/netmodel/topology.h"
#include "model/network.h"
#include "model/variability_config.h"

namespace sparsefuse::model {

struct Scenario {
  std::string file;
  Json model_spec;  // as given: a built-in name or {"trace": PATH}
  Trace trace;
  std::string description;
  int64_t batch_per_worker = 0;
  int workers = 0;
  int iterations = 0;
  int warmup_iterations = 0;
  uint64_t seed = 0;
  policy::SchemeConfig scheme;
  NetworkConfig network;
  std::optional<netmodel::TopologyConfig> topology;  // the cluster, when the scenario gives one
  VariabilityConfig variability;
  CompressionConfig compression;
  ComputeConfig compute;
  // Settings that have no effect here, and scheme knobs carried over or
  // dropped when --set scheme=... or --schemes chose another preset: the
  // CLI prints them, so nothing is ignored in silence.
  std::vector<std::string> notes;

  // Where relative paths in the scenario (traces, profiles) resolve.
  std::string base_dir() const;
  // Ratio of the scenario's batch to the trace's: compute times scale by it.
  double compute_scale() const { return double(batch_per_worker) / double(trace.batch_size); }
  // Fully resolved, defaults included: re-running it gives the same result.
  Json resolved() const;
};

// Applies "--set KEY=VALUE" overrides. KEY is a dotted path (workers,
// scheme.preset, network.bandwidth_gbps); VALUE is parsed as JSON, else kept
// as a string. A string scheme becomes {"preset": NAME} when a knob is set.
// "scheme=SPEC" chooses a scheme (see choose_scheme); what it carried over or
// dropped goes to NOTES when given.
void apply_override(Json& document, const std::string& assignment, std::vector<std::string>* notes = nullptr);

// Replaces the document's scheme by SPEC: a preset name, NAME{"knob": value,
// ...}, or a JSON object {"preset": NAME, ...}. Knobs the document's scheme
// object set away from its preset's defaults survive where the new preset has
// them (a density set in the file applies to every compared scheme); the
// others are dropped with a note.
// WHERE names the option SPEC came from, for errors.
void choose_scheme(Json& document, const std::string& spec, const std::string& where, std::vector<std::string>& notes);

Scenario parse_scenario(const Json& document, const std::string& file);
Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides);

}  // namespace sparsefuse::model
