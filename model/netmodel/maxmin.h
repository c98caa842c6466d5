// Flow-level bandwidth sharing: the max-min fair allocation of link
// capacities among flows, by progressive filling (water-filling). All active
// flows grow at the same pace; when a link fills, the flows crossing it are
// frozen at their current rate; a flow also freezes at its own cap. This is
// the standard fluid model of TCP/IB sharing used by flow-level simulators,
// and what the communication engine needs when concurrent collectives cross
// the same links.
//
// Properties the tests check: every link carries at most its capacity; every
// flow is either at its cap or crosses a saturated link on which no flow has a
// larger rate (which characterises max-min fairness); adding a flow never
// raises the smallest rate among the existing flows, nor their sorted rate
// vector in leximin order. Note that an individual existing flow CAN speed up
// when a flow is added (the newcomer can slow a competitor of it elsewhere),
// so "no existing flow gets faster" is not a property of max-min fairness.
#pragma once

#include <limits>
#include <vector>

namespace sparsefuse::netmodel {

struct Flow {
  std::vector<int> links;  // link ids; a link listed twice is crossed twice (uses twice the rate)
  double cap = std::numeric_limits<double>::infinity();  // the flow's own limit, e.g. its NIC or the sender
};

// Rates (same unit as CAPACITY) of FLOWS sharing links of the given
// capacities. A flow crossing no link is limited only by its cap (infinite if
// none). Throws std::invalid_argument for a link id out of range or a
// negative capacity or cap.
std::vector<double> max_min_rates(const std::vector<double>& capacity, const std::vector<Flow>& flows);

}  // namespace sparsefuse::netmodel
