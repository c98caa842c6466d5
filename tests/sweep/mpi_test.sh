#!/usr/bin/env bash
# Acceptance: `mpirun -np 2 sparsefuse sweep` splits the points between the
# ranks (index % 2) and rank 0's results.csv is identical to one process's.
set -uo pipefail
source "${TEST_SRCDIR}/sparsefuse/tests/sweep/common.sh"
source "${TEST_SRCDIR}/sparsefuse/tests/lib/mpi_env.sh"
mpi=(mpirun --allow-run-as-root --oversubscribe -np 2)

args=(sweep "$scenario" --schemes ddp,wfbp,horovod --grid workers=16,64 --grid seed=1,2,3 -j 1)
"$sf" "${args[@]}" --out "$tmp/single" >"$tmp/single.out" 2>&1 || fail "single-process sweep failed: $(cat "$tmp/single.out")"
"${mpi[@]}" "$sf" "${args[@]}" --out "$tmp/mpi" >"$tmp/mpi.out" 2>&1 || fail "mpirun sweep failed: $(cat "$tmp/mpi.out")"
grep -q "18 points: 18 simulated, 0 already done, 0 failed" "$tmp/mpi.out" || fail "mpirun summary: $(cat "$tmp/mpi.out")"
[[ $(grep -c "^sweep: " "$tmp/mpi.out") -eq 1 ]] || fail "only rank 0 should print the summary: $(cat "$tmp/mpi.out")"
cmp "$tmp/single/results.csv" "$tmp/mpi/results.csv" || fail "mpirun results.csv differs from the single-process one"
cmp "$tmp/single/sweep.json" "$tmp/mpi/sweep.json" || fail "mpirun sweep.json differs"

# Resuming under mpirun: remove some points; only they are simulated again.
rm -r "$tmp/mpi/points/scheme=ddp,workers=16,seed=2" "$tmp/mpi/points/scheme=wfbp,workers=64,seed=3"
"${mpi[@]}" "$sf" "${args[@]}" --out "$tmp/mpi" >"$tmp/mpi2.out" 2>&1 || fail "mpirun resume failed: $(cat "$tmp/mpi2.out")"
grep -q "2 simulated, 16 already done" "$tmp/mpi2.out" || fail "mpirun resume: $(cat "$tmp/mpi2.out")"
cmp "$tmp/single/results.csv" "$tmp/mpi/results.csv" || fail "resumed mpirun results.csv differs"

# Bad input under mpirun: exit 2, one message, nothing written.
"${mpi[@]}" "$sf" sweep "$scenario" --grid workers=8,0 --out "$tmp/bad" >"$tmp/bad.out" 2>&1
status=$?
[[ $status -eq 2 ]] || fail "bad grid under mpirun exited $status, expected 2"
[[ $(grep -c "expected an integer in \[1, 1048576\], got 0" "$tmp/bad.out") -eq 1 ]] ||
  fail "expected exactly one error message: $(cat "$tmp/bad.out")"
[[ ! -e "$tmp/bad" ]] || fail "bad input under mpirun created $tmp/bad"

finish
