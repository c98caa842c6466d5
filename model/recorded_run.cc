#include "model/recorded_run.h"

#include "common/input_error.h"

namespace sparsefuse::model {

RecordedRun load_recorded_run(const std::string& path, const std::vector<std::string>& overrides) {
  RecordedRun run{load_json_file(path), {}};
  const JsonNode root(run.document, path, "");
  root.expect_object();
  Json scenario_doc = root.child("scenario").json();
  for (const auto& o : overrides) apply_override(scenario_doc, o);
  try {
    run.scenario = parse_scenario(scenario_doc, path);
  } catch (const InputError& e) {
    if (e.file() != path) throw;  // a trace or profile the scenario names
    throw InputError(path, "/scenario" + e.pointer(), e.problem());
  }
  return run;
}

}  // namespace sparsefuse::model
