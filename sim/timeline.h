// A Chrome-trace (Perfetto) timeline of chosen workers and iterations:
// one process per worker, with a compute track and a communication track.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "common/json_reader.h"
#include "common/time.h"

namespace sparsefuse::sim {

class Timeline {
 public:
  Timeline(std::set<int> workers, std::set<int> iterations)
      : workers_(std::move(workers)), iterations_(std::move(iterations)) {}

  bool wants(int worker, int iteration) const {
    return workers_.count(worker) && iterations_.count(iteration);
  }
  enum Track { kCompute = 0, kCommunication = 1, kCompression = 2 };
  void span(int worker, Track track, const std::string& name, TimeNs begin, TimeNs end, Json args = Json::object());
  Json to_json() const;

 private:
  std::set<int> workers_;
  std::set<int> iterations_;
  std::vector<Json> events_;
};

// Parses "0,2,5-7" into a set; throws InputError naming OPTION on bad input.
std::set<int> parse_index_list(const std::string& option, const std::string& text);

}  // namespace sparsefuse::sim
