// How collectives moving bytes at the same time share bandwidth. A
// collective's traffic is one flow over every link its transfers cross (a
// ring crosses each hop's links); concurrent flows get max-min fair rates
// (model/netmodel/maxmin.h), recomputed whenever one starts or ends, and a
// collective progresses at its rate over the rate it would have alone.
// Without a topology, all collectives cross one shared network: equal shares.
#pragma once

#include <memory>
#include <vector>

#include "model/netmodel/topology.h"

namespace sparsefuse::sim {

class Contention {
 public:
  virtual ~Contention() = default;
  // Progress speeds (1 = as fast as alone) of N collectives moving bytes at once.
  virtual void speeds(int n, std::vector<double>& out) const = 0;
};

class EqualShare : public Contention {
 public:
  void speeds(int n, std::vector<double>& out) const override { out.assign(size_t(n), 1.0 / n); }
};

// Every communicator spans all ranks (world), so every collective is a ring
// over ranks 0..P-1 in placement order and crosses the same links.
class LinkContention : public Contention {
 public:
  explicit LinkContention(const netmodel::Topology& topology);
  void speeds(int n, std::vector<double>& out) const override;

 private:
  std::vector<double> capacity_;
  std::vector<int> ring_links_;  // every transfer's links, with repeats
  double alone_rate_ = 0;
  mutable std::vector<double> cache_;  // speeds by n (the answer depends only on n here)
};

}  // namespace sparsefuse::sim
