// A measured collective table as `sparsefuse calibrate FILE[@RANKS]` reads
// it: nccl-tests or OSU text, or profile-collectives JSON (the format is
// detected from the content). The rows then go through the fit and the
// output file, as the command does, for tables of up to kMaxFittedRows rows:
// the fit's search grows with the rows (a 269-row seed takes seconds under
// the sanitizers), and what it is fed, the parsed rows, is what the readers
// check. Each input is read twice: as FILE and as FILE@8 (OSU text needs the
// rank count from the command line).
#include "tools/calibrate/calibration.h"
#include "tools/calibrate/measured_table.h"
#include "tests/fuzz/fuzz_input.h"

constexpr size_t kMaxFittedRows = 24;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sparsefuse;
  const std::string path = fuzz::scratch_file(fuzz::as_text(data, size), "table.txt");
  for (std::optional<int> ranks : {std::optional<int>(), std::optional<int>(8)}) {
    fuzz::expect_only_input_errors([&] {
      const auto rows = calibrate::read_measured_table({path, ranks, std::nullopt});
      if (rows.size() > kMaxFittedRows) return;
      const auto c = calibrate::calibrate(rows, calibrate::default_holdout(rows), calibrate::FitOptions{});
      calibrate::format_calibration(c);
      calibrate::calibration_file(c, {"fuzz", "fuzz", {path}});
    });
  }
  return 0;
}
