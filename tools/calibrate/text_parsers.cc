// The two text forms: nccl-tests' table and OSU's two-or-more-column table.
#include <algorithm>
#include <sstream>

#include <fmt/format.h>

#include "common/input_error.h"
#include "common/json_reader.h"
#include "tools/calibrate/measured_table.h"
#include "tools/calibrate/words.h"

namespace sparsefuse::calibrate {

std::optional<Collective> collective_from_text(const std::string& text);

namespace {

bool blank(const std::string& line) { return line.find_first_not_of(" \t\r") == std::string::npos; }

// NCCL_DEBUG=INFO interleaves its log lines with the table; they carry no
// measurement and are not a malformed row.
bool nccl_log_line(const std::string& line) {
  return line.find(" NCCL INFO ") != std::string::npos || line.find(" NCCL WARN ") != std::string::npos;
}

int required_ranks(const InputSpec& spec, int from_text, const std::string& how) {
  if (spec.ranks) return *spec.ranks;
  if (from_text > 0) return from_text;
  throw InputError(spec.path, "", "the number of ranks is not in the file (" + how + "): pass it as " + spec.path +
                                      "@RANKS");
}

Collective required_collective(const InputSpec& spec, std::optional<Collective> from_text) {
  if (from_text) return *from_text;
  if (spec.collective) return *spec.collective;
  throw InputError(spec.path, "", "cannot tell the collective: name the file after the benchmark "
                                  "(all_reduce_perf, all_gather_perf, reduce_scatter_perf, osu_allreduce)");
}

}  // namespace

std::vector<Sample> parse_nccl_tests(const std::string& text, const InputSpec& spec) {
  std::istringstream in(text);
  int line_no = 0, rank_lines = 0;
  size_t columns = 0, size_col = 0, time_col = 0;
  std::vector<Sample> out;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (blank(line) || nccl_log_line(line)) continue;
    if (line[0] == '#') {
      auto words = split_words(line.substr(1));
      if (words.size() >= 2 && words[0] == "Rank") ++rank_lines;
      if (words.size() >= 3 && words[0] == "size" && words[1] == "count" && words[2] == "type") {
        columns = words.size();
        size_col = 0;
        time_col = std::find(words.begin(), words.end(), "time") - words.begin();
        // A header without a "time" column has nothing to read times from.
        if (time_col == columns) {
          throw InputError(spec.path, fmt::format("line {}", line_no),
                           "expected a 'time' column in the '#  size  count  type ...' header");
        }
      }
      continue;
    }
    auto words = split_words(line);
    std::optional<double> bytes, time;
    if (columns > 0 && words.size() == columns) {
      bytes = whole_number(words[size_col]);
      time = whole_number(words[time_col]);
    }
    if (!bytes || !time || *bytes <= 0 || *time <= 0) {
      throw InputError(spec.path, fmt::format("line {}", line_no),
                       columns == 0 ? std::string("a data row before the '#  size  count  type ...' header")
                                    : fmt::format("expected {} columns 'size count type redop root time algbw busbw "
                                                  "#wrong ...' with size > 0 and time > 0, got \"{}\"",
                                                  columns, line));
    }
    out.push_back({Collective::kAllreduce, 0, *bytes, *time, line_no});
  }
  Collective collective = required_collective(spec, std::nullopt);
  int ranks = required_ranks(spec, rank_lines, "no '#  Rank N Group ...' device lines");
  for (auto& s : out) s.collective = collective, s.ranks = ranks;
  return out;
}

std::vector<Sample> parse_osu(const std::string& text, const InputSpec& spec) {
  std::istringstream in(text);
  int line_no = 0;
  std::optional<Collective> from_title;
  std::vector<Sample> out;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (blank(line)) continue;
    if (line[0] == '#') {
      // "# OSU MPI Allreduce Latency Test v5.4.0" names the collective.
      if (line.find("OSU") != std::string::npos && !from_title) from_title = collective_from_text(line);
      continue;
    }
    auto words = split_words(line);
    std::optional<double> bytes = words.size() >= 2 ? whole_number(words[0]) : std::nullopt;
    std::optional<double> time = words.size() >= 2 ? whole_number(words[1]) : std::nullopt;
    if (!bytes || !time || *bytes <= 0 || *time <= 0) {
      throw InputError(spec.path, fmt::format("line {}", line_no),
                       fmt::format("expected 'SIZE AVG_LATENCY_US [...]' with both > 0, got \"{}\"", line));
    }
    out.push_back({Collective::kAllreduce, 0, *bytes, *time, line_no});
  }
  Collective collective = required_collective(spec, from_title);
  int ranks = required_ranks(spec, 0, "OSU does not print it");
  for (auto& s : out) s.collective = collective, s.ranks = ranks;
  return out;
}

std::vector<Sample> parse_profile_json(const std::string& text, const std::string& file) {
  Json document;
  try {
    document = Json::parse(text);
  } catch (const std::exception& e) {
    throw InputError(file, "", std::string("expected a JSON profile: ") + e.what());
  }
  JsonNode root(document, file, "");
  root.expect_object();
  JsonNode collectives = root.child("collectives");
  collectives.expect_object();
  collectives.check_keys({"allreduce", "allgather", "reduce_scatter"});
  std::vector<Sample> out;
  for (const auto& [key, value] : document["collectives"].items()) {
    JsonNode list = collectives.child(key);
    for (size_t i = 0; i < list.array_size(); ++i) {
      JsonNode e = list.element(i);
      out.push_back({*collective_from_text(key), int(e.child("ranks").as_int(1, 1 << 24)),
                     e.child("bytes").as_number(0, 1e18, true), e.child("time_us").as_number(0, 1e15, true), 0});
    }
  }
  return out;
}

}  // namespace sparsefuse::calibrate
