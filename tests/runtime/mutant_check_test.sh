#!/usr/bin/env bash
# The mutation check of `sparsefuse run --check`: sparsefuse_mutant_topk is
# the CLI with a top-k that keeps the (k+1)-th largest magnitude instead of the
# k-th (same count, one element wrong per tensor). Its top-k runs must fail the
# check with exit status 1 and a message naming the rank, tensor and element
# (with error feedback too, where the engine's residual follows the mutant);
# the same runs with the real CLI pass, and the mutant's dense runs (no top-k)
# pass as well.
set -uo pipefail
source "${TEST_SRCDIR}/sparsefuse/tests/lib/common.sh"
source "${TEST_SRCDIR}/sparsefuse/tests/lib/mpi_env.sh"
mutant=$PWD/tools/cli/sparsefuse_mutant_topk
mpi=(timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2)

cat >"$tmp/tiny4.json" <<JSON
{"model": {"trace": "$PWD/tests/data/tiny4.json"}, "workers": 2, "iterations": 2, "warmup_iterations": 0,
 "scheme": "topk-layerwise", "compression": {"density": 0.1}}
JSON

for ef in none tensor; do
  scheme=(--set "scheme={\"preset\": \"topk-layerwise\", \"error_feedback\": \"$ef\"}")
  "${mpi[@]}" "$mutant" run "$tmp/tiny4.json" "${scheme[@]}" --check >"$tmp/mutant-$ef.log" 2>&1
  status=$?
  [[ $status -eq 1 ]] || fail "mutant top-k (error feedback $ef) exited $status, expected 1: $(cat "$tmp/mutant-$ef.log")"
  grep -Eq "rank [01]: --check failed: iteration 0, rank [01]'s topk selection: tensor [0-9]+ \([a-z0-9_.]+\) element [0-9]+: (not sent, the reference selects|sent, the reference does not select) it" \
    "$tmp/mutant-$ef.log" || fail "mutant top-k (error feedback $ef): no message naming tensor and element: $(cat "$tmp/mutant-$ef.log")"
  grep -q "check           passed" "$tmp/mutant-$ef.log" && fail "mutant top-k (error feedback $ef) printed a passed check"
  "${mpi[@]}" "$sf" run "$tmp/tiny4.json" "${scheme[@]}" --check >"$tmp/real-$ef.log" 2>&1 ||
    fail "the real top-k (error feedback $ef) failed the check: $(cat "$tmp/real-$ef.log")"
done
grep -m1 "check failed" "$tmp/mutant-none.log"

"${mpi[@]}" "$mutant" run "$tmp/tiny4.json" --set scheme=wfbp --check >"$tmp/dense.log" 2>&1 ||
  fail "the mutant binary failed a dense run (no top-k): $(cat "$tmp/dense.log")"
finish
