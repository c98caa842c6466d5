#!/usr/bin/env bash
# Every preset `sparsefuse presets` lists trains a small classifier under
# `mpirun -np 2 sparsefuse train` (tests/train/presets_train_table.sh): none
# is refused or fails, and each run's bucket sequence equals the simulator's
# (`sparsefuse validate`) — for the presets that agree on their fusion at
# run time (preset_rows.sh), the same tensors in the same order.
set -uo pipefail
source "${TEST_SRCDIR}/sparsefuse/tests/lib/common.sh"
source "${TEST_SRCDIR}/sparsefuse/tests/lib/mpi_env.sh"

bash tests/train/presets_train_table.sh "$sf" "$tmp/rows" 2 >"$tmp/table.txt" 2>&1
status=$?
cat "$tmp/table.txt"
[[ $status -eq 0 ]] || fail "some preset failed to train or differed from the simulator (exit $status)"

source tests/lib/preset_rows.sh
expect_every_preset "$tmp/table.txt" 2
trained=$(awk '$2 == 2 && $3 == "trained" && ($5 == "same" || $5 == "fused") {print $1}' "$tmp/table.txt" | wc -l)
[[ $trained -eq $(presets | wc -l) ]] || fail "only $trained presets trained with the simulator's buckets"
# Only the presets that negotiate their fusion at run time may group differently.
for preset in $(awk '$5 == "fused" {print $1}' "$tmp/table.txt"); do
  is_negotiated "$preset" || fail "$preset grouped its buckets differently from the simulator"
done

# The table's own verdict must be able to fail: a result whose buckets the
# simulator does not produce is reported as differing.
row=$tmp/rows/wfbp-2
/usr/bin/python3 - "$row/result.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["buckets"] = r["buckets"][:-1]
json.dump(r, open(sys.argv[1], "w"))
PY
"$sf" validate "$row/result.json" --out "$tmp/v-bad" >"$tmp/v-bad.log" 2>&1 ||
  fail "validate of a result with a bucket removed: $(cat "$tmp/v-bad.log")"
grep -q "flushed different sequences: 5 buckets measured, 6 simulated" "$tmp/v-bad.log" ||
  fail "validate did not report the removed bucket: $(cat "$tmp/v-bad.log")"
finish
