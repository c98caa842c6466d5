// Measured collective tables as the tools print them, read into one list of
// samples: nccl-tests (all_reduce_perf, all_gather_perf, reduce_scatter_perf),
// OSU (osu_allreduce and friends: "# Size  Avg Latency(us)") and the
// project's own calibrated-table JSON (`sparsefuse profile-collectives`).
// Bad input is an InputError naming the file, the line and what was expected.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/collective.h"

namespace sparsefuse::calibrate {

struct Sample {
  Collective collective = Collective::kAllreduce;
  int ranks = 0;
  double bytes = 0;    // nccl-tests' "size": per-rank buffer for allreduce
  double time_us = 0;  // out-of-place time (nccl-tests), average latency (OSU)
  int line = 0;        // 1-based line in the source file (0 for JSON)
};

enum class TableFormat { kNcclTests, kOsu, kProfileJson };

// What the command line says about one input file; unset fields are taken
// from the file itself (rank lines, header) or its name.
struct InputSpec {
  std::string path;
  std::optional<int> ranks;
  std::optional<Collective> collective;
};

// "FILE" or "FILE@RANKS" (RANKS >= 1).
InputSpec parse_input_argument(const std::string& argument);

// The format from the file's content: '{' first -> JSON; a "Size ... Latency"
// header -> OSU; a "size count type" header -> nccl-tests. Otherwise an
// InputError listing the three accepted forms.
TableFormat detect_format(const std::string& text, const std::string& file);

// Parsers of the text forms. RANKS and COLLECTIVE fill what the text does not
// say; missing both there and in the text is an InputError.
std::vector<Sample> parse_nccl_tests(const std::string& text, const InputSpec& spec);
std::vector<Sample> parse_osu(const std::string& text, const InputSpec& spec);
std::vector<Sample> parse_profile_json(const std::string& text, const std::string& file);

// Reads SPEC.path, detects its format and parses it; no rows is an error.
std::vector<Sample> read_measured_table(const InputSpec& spec);

std::string format_name(TableFormat format);

}  // namespace sparsefuse::calibrate
