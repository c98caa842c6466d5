#include "runtime/agreement.h"

#include <fmt/format.h>

namespace sparsefuse::runtime {

namespace {

class Fnv1a {
 public:
  void add(const std::string& text) {
    for (unsigned char c : text) {
      hash_ ^= c;
      hash_ *= 0x100000001b3ull;
    }
    add_separator();
  }
  void add(int64_t value) { add(std::to_string(value)); }
  uint64_t value() const { return hash_; }

 private:
  // Keeps ("ab", "c") apart from ("a", "bc").
  void add_separator() {
    hash_ ^= 0xff;
    hash_ *= 0x100000001b3ull;
  }
  uint64_t hash_ = 0xcbf29ce484222325ull;
};

}  // namespace

uint64_t run_fingerprint(const model::Scenario& scenario) {
  Fnv1a h;
  h.add(scenario.resolved().dump());
  for (const auto& t : scenario.trace.tensors) {
    h.add(t.name);
    h.add(t.elements);
    h.add(t.ready_ns);
  }
  return h.value();
}

std::vector<int64_t> exchange_fingerprints(CommThread& comm, uint64_t fingerprint, std::chrono::milliseconds timeout) {
  return comm.allgather(int64_t(fingerprint), "the start-up exchange of what every rank is about to run", timeout);
}

std::string disagreement(const std::vector<int64_t>& fingerprints) {
  std::string differing;
  for (size_t r = 1; r < fingerprints.size(); ++r) {
    if (fingerprints[r] == fingerprints[0]) continue;
    differing += fmt::format("{}rank {} (fingerprint {:016x})", differing.empty() ? "" : ", ", r,
                             uint64_t(fingerprints[r]));
  }
  if (differing.empty()) return "";
  return fmt::format("{} {} from rank 0 ({:016x})", differing,
                     differing.find(", ") == std::string::npos ? "differs" : "differ", uint64_t(fingerprints[0]));
}

}  // namespace sparsefuse::runtime
