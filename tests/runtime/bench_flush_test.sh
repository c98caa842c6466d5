#!/usr/bin/env bash
# runtime/bench_flush runs the engine and the kernel and prints one row
# whose bookkeeping column is engine - kernel; a bad option exits 2.
set -uo pipefail
source "${TEST_SRCDIR}/sparsefuse/tests/lib/common.sh"
bench=$PWD/runtime/bench_flush
out=$("$bench" --elements 64 --tensors 4 --iterations 2 --evict 0 2>&1) || fail "bench_flush: $out"
row=$(tail -1 <<<"$out")
read -r elements tensors evict engine kernel bookkeeping <<<"$row"
[[ $elements == 64 && $tensors == 4 && $evict == 0 ]] || fail "the row's set-up: $row"
/usr/bin/python3 -c "
import sys
engine, kernel, bookkeeping = map(float, sys.argv[1:])
assert engine > 0 and kernel > 0, (engine, kernel)
assert abs(engine - kernel - bookkeeping) < 0.011, (engine, kernel, bookkeeping)
" "$engine" "$kernel" "$bookkeeping" || fail "the row's figures: $row"
err=$("$bench" --elements 0 2>&1); status=$?
[[ $status -eq 2 && $err == *"expected --elements"* ]] || fail "bad --elements: exit $status: $err"
err=$("$bench" --nope 1 2>&1); status=$?
[[ $status -eq 2 && $err == *"unknown option --nope"* ]] || fail "unknown option: exit $status: $err"
finish
