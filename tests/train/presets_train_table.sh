#!/usr/bin/env bash
# Trains a small classifier (tests/train/tasks.py) under every preset
# `sparsefuse presets` lists, `mpirun -np P sparsefuse train`, for each rank
# count given, validates each run against the simulator (`sparsefuse
# validate`) and prints one row per (preset, ranks): whether it trained (or
# why the runtime refused the preset), the mean iteration time, and whether
# its bucket sequence equals the simulator's (for the presets that negotiate
# their fusion at run time, that it covers the same tensors in the same
# order). The averages themselves are
# checked against an independent reference by //tests/train:train_mpi_test
# (dense, error-feedback top-k, CaSync, DeAR, ByteScheduler) and, for every
# preset, by `sparsefuse run --check` (tests/runtime/presets_table.sh).
#
#   tests/train/presets_train_table.sh SPARSEFUSE OUTDIR P [P ...]
#
# Run from the repository root. Result directories and logs are left under
# OUTDIR (PRESET-P/, PRESET-P.log, PRESET-P.validate.log). Exit status 0 when
# every row trained (or was refused) with the simulator's bucket sequence,
# 1 otherwise.
set -uo pipefail
if (($# < 3)); then
  echo "usage: $0 SPARSEFUSE OUTDIR P [P ...]" >&2
  exit 2
fi
sf=$1 out=$2
shift 2
task="$PWD/tests/train/tasks.py"
if [[ ! -f $task ]]; then
  echo "$0: run from the repository root ($task: no such file)" >&2
  exit 2
fi
mkdir -p "$out"
source "$(dirname "$0")/../lib/preset_rows.sh"

# "tensor:collective ..." over a result.json's buckets, and their count: for
# a negotiated preset (preset_rows.sh) the same tensors in the same order,
# grouped differently, is a match.
tensor_order() {
  /usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1]))
print(' '.join(f\"{t}:{b['collective']}\" for b in r['buckets'] for t in range(b['first_tensor'], b['first_tensor'] + b['tensors'])))" "$1"
}
buckets() { /usr/bin/python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['buckets']))" "$1"; }

status_all=0
print_row preset ranks train "iter (ms)" "buckets vs simulate"
for preset in $(presets); do
  for np in "$@"; do
    row=$out/$preset-$np
    rm -rf "$row"
    timeout 300 mpirun --allow-run-as-root --oversubscribe -np "$np" "$sf" train --model "$task:classifier" \
      --data "$task:shards" --batch 16 --scheme "$preset" --warmup 1 --iterations 3 --profile-iterations 2 \
      --out "$row" >"$row.log" 2>&1
    status=$?
    if [[ $status -eq 2 ]] && grep -q "cannot run preset" "$row.log"; then
      print_row "$preset" "$np" refused - "$(refusal_reason "$row.log")"
      continue
    fi
    if [[ $status -ne 0 || ! -f $row/result.json ]]; then
      print_row "$preset" "$np" FAILED - "exit $status: $(tail -1 "$row.log")"
      status_all=1
      continue
    fi
    "$sf" validate "$row/result.json" --out "$row/v" >"$row.validate.log" 2>&1
    same=$(grep -o "the same [0-9]* collectives in the same order" "$row.validate.log")
    if [[ -n $same ]]; then
      same="same ($(echo "$same" | awk '{print $3}') buckets)"
    elif is_negotiated "$preset" &&
      [[ "$(tensor_order "$row/result.json")" == "$(tensor_order "$row/v/simulated/result.json")" ]]; then
      same="fused at run time: the same tensors in order, $(buckets "$row/result.json") buckets measured, $(buckets "$row/v/simulated/result.json") simulated"
    else
      same="DIFFERS: $(grep -A1 '^buckets' "$row.validate.log" | head -2 | tr -s ' \n' ' ')"
      status_all=1
    fi
    print_row "$preset" "$np" trained "$(mean_ms "$row/result.json")" "$same"
  done
done
exit $status_all
