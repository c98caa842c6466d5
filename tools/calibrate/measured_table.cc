#include "tools/calibrate/measured_table.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "common/input_error.h"
#include "tools/calibrate/words.h"

namespace sparsefuse::calibrate {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

}  // namespace

// The collective from a name: nccl-tests binaries (all_reduce_perf), OSU
// benchmarks (osu_allreduce, "MPI Allreduce") and our own keys all spell it
// with or without the underscore.
std::optional<Collective> collective_from_text(const std::string& text) {
  std::string s = lower(text);
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  s.erase(std::remove(s.begin(), s.end(), '-'), s.end());
  if (s.find("allreduce") != std::string::npos) return Collective::kAllreduce;
  if (s.find("allgather") != std::string::npos) return Collective::kAllgather;
  if (s.find("reducescatter") != std::string::npos) return Collective::kReduceScatter;
  return std::nullopt;
}

InputSpec parse_input_argument(const std::string& argument) {
  InputSpec spec;
  auto at = argument.rfind('@');
  spec.path = argument.substr(0, at);
  if (at != std::string::npos) {
    auto ranks = whole_number(argument.substr(at + 1));
    if (!ranks || *ranks < 1 || *ranks != double(int(*ranks))) {
      throw InputError(argument, "", "expected FILE or FILE@RANKS with RANKS an integer >= 1");
    }
    spec.ranks = int(*ranks);
  }
  auto slash = spec.path.rfind('/');
  spec.collective = collective_from_text(spec.path.substr(slash == std::string::npos ? 0 : slash + 1));
  return spec;
}

TableFormat detect_format(const std::string& text, const std::string& file) {
  auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') return TableFormat::kProfileJson;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '#') continue;
    auto words = split_words(lower(line.substr(1)));
    bool has_size = !words.empty() && words[0] == "size";
    if (has_size && words.size() >= 3 && words[1] == "count" && words[2] == "type") return TableFormat::kNcclTests;
    if (has_size && line.find("Latency") != std::string::npos) return TableFormat::kOsu;
  }
  throw InputError(file, "", "unknown format: expected nccl-tests output (a '#  size  count  type ...' header), "
                             "OSU output (a '# Size  Avg Latency(us)' header) or a profile-collectives JSON file");
}

std::string format_name(TableFormat format) {
  switch (format) {
    case TableFormat::kNcclTests: return "nccl-tests";
    case TableFormat::kOsu: return "osu";
    case TableFormat::kProfileJson: return "profile-json";
  }
  return "unknown";
}

std::vector<Sample> read_measured_table(const InputSpec& spec) {
  std::ifstream in(spec.path);
  if (!in) throw InputError(spec.path, "", "cannot read the file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  std::vector<Sample> samples;
  switch (detect_format(text, spec.path)) {
    case TableFormat::kNcclTests: samples = parse_nccl_tests(text, spec); break;
    case TableFormat::kOsu: samples = parse_osu(text, spec); break;
    case TableFormat::kProfileJson:
      if (spec.ranks) throw InputError(spec.path, "", "@RANKS is for text tables: a profile JSON names its ranks per row");
      samples = parse_profile_json(text, spec.path);
      break;
  }
  if (samples.empty()) throw InputError(spec.path, "", "no measurement rows: expected at least one size with a time");
  return samples;
}

}  // namespace sparsefuse::calibrate
