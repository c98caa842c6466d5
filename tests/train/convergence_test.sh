#!/usr/bin/env bash
# Convergence sanity on 2 ranks (mpirun): the tasks.py classifier trained for
# ITERATIONS steps with a dense scheme (wfbp), with SAF's per-tensor DGC
# sparsification and error feedback through the correct receiver
# (alignment=exchange-counts), and with SAF as the seed ships it (the
# equal-slices receiver). The sparse run must end within TOLERANCE of the
# dense run's loss; the seed receiver must lose contributions and end
# measurably worse than the correct one.
set -uo pipefail
source "${TEST_SRCDIR}/sparsefuse/tests/lib/common.sh"
source "${TEST_SRCDIR}/sparsefuse/tests/lib/mpi_env.sh"
task="$PWD/tests/train/tasks.py"
ITERATIONS=@ITERATIONS@

train() {  # train NAME SCHEME [ARGS...]
  local name=$1 scheme=$2; shift 2
  timeout 600 mpirun --allow-run-as-root --oversubscribe -np 2 "$sf" train --model "$task:classifier" \
    --data "$task:shards" --batch 32 --scheme "$scheme" --warmup 0 --iterations "$ITERATIONS" --lr 0.05 \
    --profile-iterations 2 --set compression.density=0.05 --out "$tmp/$name" "$@" >"$tmp/$name.log" 2>&1 ||
    fail "train $name: $(cat "$tmp/$name.log")"
}
train dense wfbp
train correct saf --set scheme.alignment=exchange-counts
train seed saf

/usr/bin/python3 - "$tmp" <<'PY' || fail "convergence"
@CHECK@
PY
finish
