#!/usr/bin/env bash
# User mistakes are bad input (exit 2, one line naming what is wrong), found
# before any work; relative paths under `bazel run` mean the caller's
# directory; --version answers.
set -uo pipefail
source tests/lib/common.sh

# expect2 PATTERN -- ARGS: exit 2 and PATTERN (fixed string) on stderr.
expect2() {
  local pattern=$1; shift 2
  local err status
  err=$("$sf" "$@" 2>&1 >/dev/null); status=$?
  [[ $status -eq 2 ]] || fail "sparsefuse $*: exit $status, expected 2 ($err)"
  [[ "$err" == *"$pattern"* ]] || fail "sparsefuse $*: stderr lacks '$pattern': $err"
}

echo '{"model": "bert-base", "workers": 4, "iterations": 1, "warmup_iterations": 0, "scheme": "ddp"}' > "$tmp/ok.json"
mkdir -p "$tmp/adir"
expect2 "adir: is a directory; expected a JSON file" -- simulate "$tmp/adir"
expect2 "--set workers=\"many\": at /workers: expected an integer" -- simulate "$tmp/ok.json" --set 'workers="many"'
touch "$tmp/afile"
expect2 "--out $tmp/afile: exists and is not a directory" -- simulate "$tmp/ok.json" --out "$tmp/afile"
expect2 "--out $tmp/afile: exists and is not a directory" -- compare "$tmp/ok.json" --schemes ddp --out "$tmp/afile"
expect2 "--timeline-workers: worker 9999 does not exist; the scenario has 4 (0-3)" -- \
  simulate "$tmp/ok.json" --timeline "$tmp/t.json" --timeline-workers 0-9999
expect2 "--timeline-iterations: iteration 5 does not exist; the scenario runs 1 (0-0)" -- \
  simulate "$tmp/ok.json" --timeline "$tmp/t.json" --timeline-iterations 5
[[ ! -e "$tmp/t.json" ]] || fail "a rejected timeline was written"
# The default timeline range is cut to the workers there are.
"$sf" simulate "$tmp/ok.json" --timeline "$tmp/t.json" >/dev/null || fail "default timeline on 4 workers"
[[ $(python3 -c "import json; print(sorted({e['pid'] for e in json.load(open('$tmp/t.json'))['traceEvents'] if e.get('ph') == 'X'}))") == "[0, 1, 2, 3]" ]] ||
  fail "default timeline tracks"

# A fat-tree too small for its NICs says which radix it needs.
expect2 'at /topology/fabric: a fat-tree of radix 4 cannot connect 64 NICs at oversubscription 1; it needs radix >= 11' -- \
  simulate "$tmp/ok.json" --set workers=64 --set 'topology={"preset":"ib-56g","fabric":{"kind":"fat-tree","radix":4}}'
# Compute interference: a negative or non-numeric slowdown names the field, in a file or in --set.
expect2 "--set compute.comm_interference=-0.1: at /compute/comm_interference: expected a number >= 0 and <= 10, got -0.1" -- \
  simulate "$tmp/ok.json" --set compute.comm_interference=-0.1
echo '{"model": "bert-base", "workers": 4, "scheme": "ddp", "compute": {"comm_interference": "high"}}' > "$tmp/interference.json"
expect2 "interference.json: at /compute/comm_interference: expected a number, got the string \"high\"" -- \
  simulate "$tmp/interference.json" --out "$tmp/interference-out"
[[ ! -e "$tmp/interference-out" ]] || fail "a rejected scenario wrote output"
# plot and report: an unusable --out is bad input, not a traceback.
"$sf" simulate "$tmp/ok.json" --out "$tmp/plotme/a" >/dev/null || fail "simulate for plot"
expect2 "--out $tmp/afile: cannot create the output directory" -- plot "$tmp/plotme" --out "$tmp/afile"
expect2 "--out $tmp/afile: cannot create the output directory" -- report "$tmp/plotme" --out "$tmp/afile"

# bazel run: BUILD_WORKING_DIRECTORY is where relative paths resolve.
(cd / && BUILD_WORKING_DIRECTORY="$tmp" "$sf" simulate ok.json >/dev/null) || fail "BUILD_WORKING_DIRECTORY ignored"

[[ $("$sf" --version) =~ ^sparsefuse\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "--version: $("$sf" --version)"

# The simulator's work counters say what they count.
"$sf" simulate "$tmp/ok.json" --out "$tmp/res" >"$tmp/sim.log" || fail "simulate"
[[ $(field "$tmp/res/result.json" 'r["simulator"]["worker_steps"] >= 4 * 1 * 200 and r["simulator"]["queue_events"] > 0') == True ]] ||
  fail "simulator counters: $(field "$tmp/res/result.json" 'r["simulator"]')"
grep -q 'queue events and .* worker steps' "$tmp/sim.log" || fail "summary counters: $(tail -1 "$tmp/sim.log")"

finish
