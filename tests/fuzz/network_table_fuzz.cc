// A calibrated network table (network.model = "calibrated", network.profile =
// FILE: what `sparsefuse calibrate --out` and `profile-collectives` write),
// read and then queried as the network model queries it.
#include "model/netmodel/calibrated.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sparsefuse;
  const std::string path = fuzz::scratch_file(fuzz::as_text(data, size), "network.json");
  fuzz::expect_only_input_errors([&] {
    const auto table = netmodel::CalibratedTable::load(path);
    for (Collective c : {Collective::kAllreduce, Collective::kAllgather, Collective::kReduceScatter}) {
      if (!table.has(c)) continue;
      for (int ranks : {1, 2, 8, 1024}) {
        for (double bytes : {0.0, 1.0, 4096.0, 1e9}) table.time_us(c, ranks, bytes);
      }
    }
  });
  return 0;
}
