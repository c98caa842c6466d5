#!/usr/bin/env bash
# Runs every preset `sparsefuse presets` lists under `mpirun -np P sparsefuse
# run --check` for each rank count given, simulates the same scenario, and
# prints one row per (preset, ranks): whether the check passed (or why the
# runtime refused the preset), the mean iteration time of the real run, and
# whether its bucket sequence equals the simulator's.
#
#   tests/runtime/presets_table.sh SPARSEFUSE SCENARIO.json OUTDIR P [P ...]
#
# SCENARIO.json's "workers" and "scheme" are overridden per row. Result
# directories and logs are left under OUTDIR (PRESET-P/, PRESET-P.log,
# PRESET-P-sim/). Exit status 0 when every row ran (passed or refused), 1 if
# any run failed, crashed or differed from the simulator.
set -uo pipefail
sf=$1 scenario=$2 out=$3
shift 3
py=/usr/bin/python3
mkdir -p "$out"
source "$(dirname "$0")/../lib/preset_rows.sh"

# "first:tensors:collective:elements ..." from a result.json.
sequence() {
  "$py" -c "import json,sys; r=json.load(open(sys.argv[1]))
print(' '.join(f\"{b['first_tensor']}:{b['tensors']}:{b['collective']}:{b['elements']}\" for b in r['buckets']))" "$1"
}

status_all=0
print_row preset ranks check "iter (ms)" "buckets vs simulate"
for preset in $(presets); do
  for np in "$@"; do
    row=$out/$preset-$np
    rm -rf "$row" "$row-sim"
    timeout 300 mpirun --allow-run-as-root --oversubscribe -np "$np" "$sf" run "$scenario" --set workers="$np" \
      --set scheme="$preset" --check --out "$row" >"$row.log" 2>&1
    status=$?
    if [[ $status -eq 2 ]] && grep -q "runtime-mpi cannot run preset" "$row.log"; then
      print_row "$preset" "$np" refused - "$(refusal_reason "$row.log")"
      continue
    fi
    check=$(grep -q "^check           passed" "$row.log" && echo passed || echo FAILED)
    if [[ $status -ne 0 || $check != passed || ! -f $row/result.json ]]; then
      print_row "$preset" "$np" FAILED - "exit $status: $(tail -1 "$row.log")"
      status_all=1
      continue
    fi
    "$sf" simulate "$scenario" --set workers="$np" --set scheme="$preset" --out "$row-sim" >/dev/null 2>&1
    if [[ "$(sequence "$row/result.json")" == "$(sequence "$row-sim/result.json" 2>/dev/null)" ]]; then
      same="same ($(sequence "$row/result.json" | wc -w) buckets)"
    else
      same="DIFFERS: run $(sequence "$row/result.json") / simulate $(sequence "$row-sim/result.json" 2>/dev/null)"
      status_all=1
    fi
    print_row "$preset" "$np" "$check" "$(mean_ms "$row/result.json")" "$same"
  done
done
exit $status_all
