// A result file as `sparsefuse validate` reads it back: the document and the
// scenario it recorded, ready to be simulated again and compared
// (validation.h). Its own library, so the fuzz target for result files
// (tests/fuzz) calls exactly what the command calls.
#pragma once

#include <string>
#include <vector>

#include "common/json_reader.h"
#include "model/scenario.h"

namespace sparsefuse::model {

struct RecordedRun {
  Json document;
  Scenario scenario;
};

// Reads PATH and its "scenario" member with OVERRIDES (--set KEY=VALUE)
// applied. Relative paths in the scenario resolve from the result's
// directory; errors in the scenario point into the result file's "scenario"
// member (a trace or profile it names is blamed by its own name).
RecordedRun load_recorded_run(const std::string& path, const std::vector<std::string>& overrides);

}  // namespace sparsefuse::model
