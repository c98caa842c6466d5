#include "sim/timeline.h"

#include <fmt/format.h>

namespace sparsefuse::sim {

void Timeline::span(int worker, Track track, const std::string& name, TimeNs begin, TimeNs end, Json args) {
  if (end <= begin) return;
  events_.push_back({{"name", name},
                     {"ph", "X"},
                     {"pid", worker},
                     {"tid", int(track)},
                     {"ts", double(begin) / 1e3},
                     {"dur", double(end - begin) / 1e3},
                     {"args", std::move(args)}});
}

Json Timeline::to_json() const {
  Json events = Json::array();
  for (int w : workers_) {
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", w}, {"args", {{"name", fmt::format("worker {}", w)}}}});
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", w}, {"tid", 0}, {"args", {{"name", "compute"}}}});
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", w}, {"tid", 1}, {"args", {{"name", "communication"}}}});
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", w}, {"tid", 2}, {"args", {{"name", "compression (side stream, CPU)"}}}});
  }
  for (const auto& e : events_) events.push_back(e);
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

std::set<int> parse_index_list(const std::string& option, const std::string& text) {
  std::set<int> out;
  size_t start = 0;
  auto bad = [&]() {
    throw InputError(option, "", fmt::format("expected a list like 0,2,5-7 of non-negative integers, got \"{}\"", text));
  };
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t dash = item.find('-');
    try {
      size_t used = 0;
      int lo = std::stoi(item.substr(0, dash), &used);
      if (used != (dash == std::string::npos ? item.size() : dash) || lo < 0) bad();
      int hi = lo;
      if (dash != std::string::npos) {
        std::string rest = item.substr(dash + 1);
        hi = std::stoi(rest, &used);
        if (used != rest.size() || hi < lo || hi - lo > 100000) bad();
      }
      for (int i = lo; i <= hi; ++i) out.insert(i);
    } catch (const std::logic_error&) {
      bad();
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace sparsefuse::sim
