// Generated at build time (common/embed_traces.py) from traces/*.json, so the
// CLI finds its built-in models whatever the working directory.
#pragma once

#include <string_view>
#include <vector>

namespace sparsefuse {

struct BuiltinTrace {
  std::string_view name;
  std::string_view json;
};

const std::vector<BuiltinTrace>& builtin_trace_table();

}  // namespace sparsefuse
