#!/usr/bin/env bash
# The CLI contract: bad input exits 2 with a message naming the
# file, the JSON pointer and the expectation, and writes no output; success
# writes result.json atomically; same scenario and seed give the same result.
set -uo pipefail
cd "${TEST_SRCDIR}/sparsefuse"
sf=tools/cli/sparsefuse
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect_error STATUS PATTERN -- ARGS...: runs sparsefuse ARGS, checks the exit
# status and that stderr contains PATTERN (fixed string).
expect_error() {
  local want=$1 pattern=$2; shift 3
  local err status
  err=$("$sf" "$@" 2>&1 >/dev/null); status=$?
  [[ $status -eq $want ]] || fail "sparsefuse $* exited $status, expected $want ($err)"
  [[ "$err" == *"$pattern"* ]] || fail "sparsefuse $*: stderr lacks '$pattern': $err"
}

scenario() {  # writes a scenario with JSON members $1 into $tmp/$2
  echo "{\"model\": \"bert-base\", \"workers\": 4, \"iterations\": 3, \"scheme\": \"ddp\" $1}" > "$tmp/$2"
}

expect_error 2 "missing.json: cannot open file" -- simulate "$tmp/missing.json"
echo '{"workers": 4,' > "$tmp/malformed.json"
expect_error 2 "malformed.json: malformed JSON: parse error at line 2" -- simulate "$tmp/malformed.json"
scenario ', "wrokers": 2' typo.json
expect_error 2 'typo.json: at /wrokers: unknown key "wrokers"; did you mean "workers"?' -- simulate "$tmp/typo.json"
scenario ', "seed": "abc"' type.json
expect_error 2 'type.json: at /seed: expected an integer in [0, 9223372036854775807], got the string "abc"' -- simulate "$tmp/type.json"
scenario '' ok.json
expect_error 2 'at /workers: expected an integer in [1, 1048576], got 0' -- simulate "$tmp/ok.json" --set workers=0
expect_error 2 'at /network/bandwidth_gbps: expected a number > 0' -- simulate "$tmp/ok.json" --set network.bandwidth_gbps=-1
expect_error 2 'at /variability/compute_cv: expected a number >= 0' -- simulate "$tmp/ok.json" --set variability.compute_cv=-0.5
expect_error 2 'at /scheme: unknown preset "hovorod"; did you mean "horovod"?' -- simulate "$tmp/ok.json" --set scheme=hovorod
expect_error 2 'at /model: unknown model "resnet-50"; did you mean "resnet50"?' -- simulate "$tmp/ok.json" --set model=resnet-50
expect_error 2 'bad_no_tensors.json: at /tensors: expected at least one tensor' -- \
  simulate "$tmp/ok.json" --set "model={\"trace\": \"$PWD/tests/data/bad_no_tensors.json\"}"
expect_error 2 'bad_sizes.json: at /tensors/0/elements: inconsistent size' -- \
  simulate "$tmp/ok.json" --set "model={\"trace\": \"$PWD/tests/data/bad_sizes.json\"}"
expect_error 2 '--set workers: expected KEY=VALUE' -- simulate "$tmp/ok.json" --set workers
expect_error 2 'unknown command "simulte"' -- simulte "$tmp/ok.json"
expect_error 2 'unrecognised option' -- simulate "$tmp/ok.json" --bogus
expect_error 2 'expected a list like 0,2,5-7' -- simulate "$tmp/ok.json" --timeline "$tmp/t.json" --timeline-workers x
expect_error 2 'unknown preset "nope"' -- compare "$tmp/ok.json" --schemes ddp,nope

# Bad input leaves no partial output behind.
"$sf" simulate "$tmp/ok.json" --set workers=0 --out "$tmp/bad-out" >/dev/null 2>&1
[[ ! -e "$tmp/bad-out" ]] || fail "bad input created $tmp/bad-out"

for command in simulate compare models presets; do
  "$sf" $command --help >/dev/null || fail "$command --help exited non-zero"
done

# Success: result.json with the contracted fields; a timeline; compare.csv.
"$sf" simulate "$tmp/ok.json" --set variability.compute_cv=0.1 --out "$tmp/run1" \
  --timeline "$tmp/timeline.json" >/dev/null || fail "simulate failed"
"$sf" simulate "$tmp/ok.json" --set variability.compute_cv=0.1 --out "$tmp/run2" >/dev/null || fail "simulate failed"
"$sf" simulate "$tmp/ok.json" --set variability.compute_cv=0.1 --set seed=2 --out "$tmp/run3" >/dev/null ||
  fail "simulate failed"
/usr/bin/python3 - "$tmp" <<'PY' || fail "result.json checks"
import json, sys
tmp = sys.argv[1]
r1, r2, r3 = (json.load(open(f"{tmp}/run{i}/result.json")) for i in (1, 2, 3))
for key in ("mean", "p50", "p99", "min", "max"):
    assert r1["iteration_time_s"][key] > 0, key
for key in ("forward", "backward", "compression", "communication_exposed", "sync_wait", "optimizer"):
    assert key in r1["breakdown_s"], key
assert r1["throughput_samples_per_s"] > 0
b = r1["buckets"][0]
for key in ("tensors", "elements", "bytes_per_worker", "collective"):
    assert key in b, key
for key in ("queue_events", "worker_steps", "wall_s", "worker_iterations_per_s"):
    assert key in r1["simulator"], key
assert r1["scenario"]["network"]["latency_us"] == 5.0  # defaults resolved
for r in (r1, r2, r3):
    del r["simulator"]
assert r1 == r2, "same scenario and seed gave different results"
assert r1 != r3, "a different seed with noise gave the same result"
timeline = json.load(open(f"{tmp}/timeline.json"))
names = {e["name"] for e in timeline["traceEvents"]}
assert {"forward", "backward", "allreduce", "optimizer"} <= names, names
assert {e["pid"] for e in timeline["traceEvents"]} == {0, 1, 2, 3}
PY

out=$("$sf" compare "$tmp/ok.json" --schemes wfbp,syncea --out "$tmp/cmp") || fail "compare failed"
[[ "$out" == *"syncea"* ]] || fail "compare output lacks syncea: $out"
[[ $(head -1 "$tmp/cmp/compare.csv") == scheme,iteration_mean_s,* ]] || fail "compare.csv header"
[[ $(wc -l < "$tmp/cmp/compare.csv") -eq 3 ]] || fail "compare.csv rows"
[[ -f "$tmp/cmp/wfbp/result.json" && -f "$tmp/cmp/syncea/result.json" ]] || fail "compare results"
ls "$tmp"/cmp/*.tmp.* >/dev/null 2>&1 && fail "temporary files left behind"

[[ $("$sf" models | grep -vc '^measured/') -eq 8 ]] || fail "models should list 8 analytic traces"
[[ $("$sf" models | grep -c '^measured/.*\[measured: ') -ge 4 ]] || fail "models should list the measured traces"
presets=$("$sf" presets) || fail "presets failed"
grep -q "^horovod " <<<"$presets" || fail "presets lacks horovod"

# A CPU kernel profile the simulator accepts, and a scenario that uses it.
"$sf" profile-kernels --device cpu --max-elements 10000 --repetitions 1 --out "$tmp/cpu.json" >/dev/null ||
  fail "profile-kernels --device cpu"
out=$("$sf" simulate "$tmp/ok.json" --set scheme=ssfusion-o \
  --set "compression={\"profile\": \"$tmp/cpu.json\", \"cpu_profile\": \"$tmp/cpu.json\"}" --out "$tmp/prof") ||
  fail "a scenario using the measured profile"
grep -q "cpu.json" "$tmp/prof/result.json" || fail "result.json does not name the measured profile"
expect_error 2 "expected cpu or cuda" -- profile-kernels --device tpu
# Chosen sizes and kernels over a working set: one row per density.
"$sf" profile-kernels --sizes 3000 --kernels topk --working-set 1048576 --out "$tmp/ws.json" >/dev/null ||
  fail "profile-kernels --sizes --kernels --working-set"
[[ $(grep -c '"elements": 3000' "$tmp/ws.json") -eq 8 ]] || fail "profile-kernels --sizes 3000: expected 4 topk rows, hot and cold"
# With after-compute calls and the pack kernel, the runtime's bookkeeping per
# flush is measured too (three bucket sizes, their median charged); without
# the pack kernel it is not.
"$sf" profile-kernels --sizes 100 --kernels pack --repetitions 1 --after-compute 65536 --out "$tmp/after.json" \
  >"$tmp/after.log" || fail "profile-kernels --after-compute"
grep -q "runtime bookkeeping per packed flush: " "$tmp/after.log" || fail "no bookkeeping line: $(tail -2 "$tmp/after.log")"
/usr/bin/python3 - "$tmp/after.json" <<'PY' || fail "the profile's flush_bookkeeping"
import json, sys
f = json.load(open(sys.argv[1]))["flush_bookkeeping"]
points = f["points"]
assert [p["elements"] for p in points] == [64, 256, 2048], points
median = sorted(p["after_compute_us"] for p in points)[1]
assert f["time_us"] == max(0.0, median), (f["time_us"], median)
PY
"$sf" profile-kernels --sizes 100 --kernels topk --repetitions 1 --after-compute 65536 --out "$tmp/after-topk.json" \
  >/dev/null || fail "profile-kernels --after-compute --kernels topk"
! grep -q flush_bookkeeping "$tmp/after-topk.json" || fail "bookkeeping measured without the pack kernel"
expect_error 2 "working set outside" -- profile-kernels --working-set -5
expect_error 2 'unknown kernel "nope"' -- profile-kernels --kernels nope
expect_error 2 "expected 1 to 64, got 0" -- profile-kernels --processes 0
expect_error 2 "--rounds: expected >= 1, got 0" -- profile-kernels --rounds 0
expect_error 2 "need --out for their profiles" -- profile-kernels --processes 2 --sizes 1000
: >"$tmp/plain-file"
expect_error 2 "cannot write the profile there: $tmp/plain-file is not a directory" -- \
  profile-kernels --processes 2 --sizes 1000 --out "$tmp/plain-file/k.json"

if ((failures)); then echo "$failures check(s) failed"; exit 1; fi
echo "all CLI checks passed"
