// Sweep grid specifications as `sparsefuse sweep` takes them: each line is
// one --grid KEY=V1,V2,... (a line "schemes A,B" is --schemes A,B), planned
// into points with their directory names and sweep.json. Points are not
// validated against a scenario: that is the scenario target's reader.
#include <algorithm>

#include "sim/sweep.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

// Grids are legal up to ten million points and planning costs time per point
// (about 0.2 ms under the sanitizers): 48,000 points took over libFuzzer's
// 10 s, and with a cap of 4,096 the rate still fell from 2,700 to under 300
// runs/s as the corpus grew towards the cap. Each point runs the same code
// (an id, a directory name, a sweep.json entry), so the fuzzer plans products
// of up to 256 points and stops larger ones after their axes are parsed;
// sim/sweep_test.cc plans the large grids.
constexpr size_t kMaxFuzzedPoints = 256;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sparsefuse;
  const auto lines = fuzz::split_lines(fuzz::as_text(data, size));
  fuzz::expect_only_input_errors([&] {
    std::vector<sim::GridAxis> axes;
    size_t points = 1;
    for (const auto& line : lines) {
      axes.push_back(line.rfind("schemes ", 0) == 0 ? sim::schemes_axis(line.substr(8)) : sim::parse_grid_axis(line));
      points *= std::max<size_t>(axes.back().values.size(), 1);
      if (points > kMaxFuzzedPoints) return;
    }
    const auto plan = sim::plan_sweep("scenario.json", {}, axes, /*validate=*/false);
    plan.description().dump();
    for (const auto& point : plan.points) sim::point_dir("out", point);
  });
  return 0;
}
