// JSON data compiled into the binary at build time (common/embed_files.py):
// the built-in traces (traces/*.json, traces/measured/*.json) and hardware
// profiles (profiles/*.json),
// so the CLI finds them whatever the working directory.
#pragma once

#include <string_view>
#include <vector>

namespace sparsefuse {

struct EmbeddedJson {
  std::string_view name;  // file name without ".json"
  std::string_view json;
};

const std::vector<EmbeddedJson>& builtin_trace_table();
const std::vector<EmbeddedJson>& builtin_measured_trace_table();
const std::vector<EmbeddedJson>& builtin_profile_table();

}  // namespace sparsefuse
