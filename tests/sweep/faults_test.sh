#!/usr/bin/env bash
# A sweep against a hostile filesystem (tests/lib/fault_fs.c, LD_PRELOAD):
# the disk filling up mid-sweep, an output directory that cannot be written,
# and two sweeps started on one directory at once. Each ends with a clear
# message and a non-zero status, leaves no half-written file, and a rerun
# once the fault is gone finishes with the same results.csv as a sweep that
# never failed.
set -uo pipefail
source "${TEST_SRCDIR}/sparsefuse/tests/sweep/common.sh"
shim=$PWD/tests/lib/libfault_fs.so

args=(sweep "$scenario" --schemes wfbp,ddp --grid "seed=1,2,3,4" -j 1)
"$sf" "${args[@]}" --out "$tmp/clean" >"$tmp/clean.out" 2>&1 || fail "fault-free sweep failed: $(cat "$tmp/clean.out")"

# Half-written files: a result.json that does not parse, or any temporary.
no_partial_files() {
  local dir=$1 f
  for f in $(find "$dir" -name '*.json' -type f); do
    python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$f" 2>/dev/null || fail "$2: half-written $f"
  done
  [[ -z $(find "$dir" -name '*.tmp.*') ]] || fail "$2: temporaries left: $(find "$dir" -name '*.tmp.*')"
}

# The disk fills after three point results: those points stay done, the
# others fail naming the file and ENOSPC, exit 1, no results.csv claims more.
LD_PRELOAD=$shim FAULT_FS_MATCH="$tmp/full/" FAULT_FS_OPS=write FAULT_FS_AFTER=4 \
  "$sf" "${args[@]}" --out "$tmp/full" >"$tmp/full.out" 2>&1
status=$?
[[ $status -eq 1 ]] || fail "full disk: status $status, expected 1: $(cat "$tmp/full.out")"
grep -q "sparsefuse sweep: point failed: .*cannot write $tmp/full/points/.*/result.json (via result.json.tmp.[0-9]*): No space left on device; nothing was written there" \
  "$tmp/full.out" || fail "full disk: no clear message: $(cat "$tmp/full.out")"
no_partial_files "$tmp/full" "full disk"
done_before=$(find "$tmp/full/points" -name result.json | wc -l)
[[ $done_before -ge 1 && $done_before -lt 8 ]] || fail "full disk: $done_before points done, expected some but not all"
"$sf" "${args[@]}" --out "$tmp/full" >"$tmp/full-resumed.out" 2>&1 || fail "resume after a full disk: $(cat "$tmp/full-resumed.out")"
grep -q "$((8 - done_before)) simulated, $done_before already done, 0 failed" "$tmp/full-resumed.out" ||
  fail "resume after a full disk: $(cat "$tmp/full-resumed.out")"
cmp "$tmp/clean/results.csv" "$tmp/full/results.csv" || fail "resume after a full disk: results.csv differs"

# An output directory that cannot be written (EACCES on every create there;
# root ignores permission bits, so the shim plays the read-only directory):
# exit 2 before any simulation, naming --out, the directory and the reason.
mkdir -p "$tmp/readonly"
LD_PRELOAD=$shim FAULT_FS_MATCH="$tmp/readonly/" FAULT_FS_OPS=open,mkdir,write,rename FAULT_FS_ERRNO=13 \
  "$sf" "${args[@]}" --out "$tmp/readonly" >"$tmp/readonly.out" 2>&1
status=$?
[[ $status -eq 2 ]] || fail "unwritable directory: status $status, expected 2: $(cat "$tmp/readonly.out")"
grep -q "error: --out $tmp/readonly: cannot create $tmp/readonly/.lock: Permission denied; expected a writable directory" \
  "$tmp/readonly.out" || fail "unwritable directory: $(cat "$tmp/readonly.out")"
[[ -z $(ls -A "$tmp/readonly") ]] || fail "unwritable directory: something was written: $(ls -A "$tmp/readonly")"
"$sf" "${args[@]}" --out "$tmp/readonly" >"$tmp/readonly-resumed.out" 2>&1 || fail "rerun once writable failed"
cmp "$tmp/clean/results.csv" "$tmp/readonly/results.csv" || fail "rerun once writable: results.csv differs"

# Two sweeps on one directory: the second is refused (exit 2) naming the
# first; the first finishes untouched. A slow grid keeps the first running.
"$sf" sweep "$scenario" --grid "seed=$(seq -s, 1 400)" --set workers=256 --set iterations=20 -j 1 --out "$tmp/shared" \
  >"$tmp/first.out" 2>&1 &
first=$!
for _ in $(seq 1 600); do
  [[ -s "$tmp/shared/.lock" ]] && break
  sleep 0.1
done
"$sf" "${args[@]}" --out "$tmp/shared" >"$tmp/second.out" 2>&1
status=$?
[[ $status -eq 2 ]] || fail "second sweep: status $status, expected 2: $(cat "$tmp/second.out")"
grep -q "error: --out $tmp/shared: another run is writing this directory: sparsefuse sweep (pid $first on .*, since .*) holds $tmp/shared/.lock" \
  "$tmp/second.out" || fail "second sweep: message: $(cat "$tmp/second.out")"
kill -TERM "$first" 2>/dev/null
wait "$first" 2>/dev/null
[[ ! -e "$tmp/shared/points/scheme=wfbp,seed=1" ]] || fail "the refused sweep wrote points"
# The lock dies with its holder: a rerun takes it, clears what the killed
# holder left half-done and completes.
"$sf" "${args[@]}" --out "$tmp/shared" >"$tmp/after.out" 2>&1 || fail "sweep after the holder ended: $(cat "$tmp/after.out")"
cmp "$tmp/clean/results.csv" "$tmp/shared/results.csv" || fail "sweep after the holder ended: results.csv differs"

finish
