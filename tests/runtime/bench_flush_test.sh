#!/usr/bin/env bash
# runtime/bench_flush runs the engine and the kernel and prints a weight row
# and a bias row whose bookkeeping column is engine - kernel; a bad option
# exits 2.
set -uo pipefail
source "${TEST_SRCDIR}/sparsefuse/tests/lib/common.sh"
bench=$PWD/runtime/bench_flush
out=$("$bench" --elements 64 --modules 4 --iterations 2 --evict 0 2>&1) || fail "bench_flush: $out"
for flush in weight bias; do
  row=$(awk -v f="$flush" '$4 == f' <<<"$out")
  read -r elements modules evict label engine kernel bookkeeping <<<"$row"
  [[ $elements == 64 && $modules == 4 && $evict == 0 && $label == "$flush" ]] || fail "the $flush row's set-up: $out"
  /usr/bin/python3 -c "
import sys
engine, kernel, bookkeeping = map(float, sys.argv[1:])
assert engine > 0 and kernel > 0, (engine, kernel)
assert abs(engine - kernel - bookkeeping) < 0.011, (engine, kernel, bookkeeping)
" "$engine" "$kernel" "$bookkeeping" || fail "the $flush row's figures: $row"
done
err=$("$bench" --elements 0 2>&1); status=$?
[[ $status -eq 2 && $err == *"expected elements"* ]] || fail "bad --elements: exit $status: $err"
err=$("$bench" --nope 1 2>&1); status=$?
[[ $status -eq 2 && $err == *"unknown option --nope"* ]] || fail "unknown option: exit $status: $err"
err=$("$bench" --elements 2>&1); status=$?
[[ $status -eq 2 && $err == *"expected --option value pairs"* ]] || fail "a missing value: exit $status: $err"
finish
