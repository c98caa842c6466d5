#!/usr/bin/env bash
# `sparsefuse validate`: a real run (mpirun -np 2 sparsefuse run) re-simulated
# and compared; a simulated result agrees with itself exactly; a different
# plan is reported as a different bucket sequence; bad input exits 2.
set -uo pipefail
source "${TEST_SRCDIR}/sparsefuse/tests/lib/common.sh"
source "${TEST_SRCDIR}/sparsefuse/tests/lib/mpi_env.sh"

cat >"$tmp/tiny4.json" <<JSON
{"model": {"trace": "$PWD/tests/data/tiny4.json"}, "workers": 2, "iterations": 3, "warmup_iterations": 1,
 "scheme": "topk-layerwise", "compression": {"density": 0.1}}
JSON

# A real run, validated against the simulator with the development machine's CPU kernel profile.
timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 "$sf" run "$tmp/tiny4.json" --time-scale 100 \
  --out "$tmp/run" >"$tmp/run.log" 2>&1 || fail "sparsefuse run: $(cat "$tmp/run.log")"
"$sf" validate "$tmp/run/result.json" --set compression.profile=cpu-dev-2core --out "$tmp/v" >"$tmp/v.log" 2>&1 ||
  fail "validate exited $?: $(cat "$tmp/v.log")"
grep -q "^measured    $tmp/run/result.json (runtime-mpi, 2 ranks on " "$tmp/v.log" || fail "measured line: $(cat "$tmp/v.log")"
grep -q "the same 4 collectives in the same order" "$tmp/v.log" || fail "bucket line: $(cat "$tmp/v.log")"
python3 - "$tmp/v/validation.json" "$tmp/run/result.json" <<'PY' || fail "validation.json"
import json, sys
v, run = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert v["format"] == "sparsefuse-validation/1" and v["same_buckets"], v
assert len(v["buckets"]) == 4 and v["overrides"] == ["compression.profile=cpu-dev-2core"], v
mean = next(m for m in v["metrics"] if m["name"] == "iteration time, mean (ms)")
assert abs(mean["measured"] - 1e3 * run["iteration_time_s"]["mean"]) < 1e-9, mean
assert abs(mean["relative_error"] - (mean["simulated"] - mean["measured"]) / mean["measured"]) < 1e-12, mean
PY
[[ -f "$tmp/v/simulated/result.json" ]] || fail "no simulated/result.json"
# The run replayed every compute time x 100 (--time-scale 100): so does the
# simulation (tiny4: forward 1000 ns -> 0.1 ms, backward 4000 ns -> 0.4 ms).
grep -q "compute times x 100 (the run's executor.time_scale)" "$tmp/v.log" || fail "time scale line: $(cat "$tmp/v.log")"
python3 - "$tmp/v/simulated/result.json" "$tmp/v/validation.json" <<'PY' || fail "validate ignores executor.time_scale"
import json, sys
sim, v = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert abs(sim["breakdown_s"]["forward"] - 1e-4) < 1e-12, sim["breakdown_s"]
assert sim["breakdown_s"]["backward"] >= 4e-4 - 1e-12, sim["breakdown_s"]
assert v["time_scale"] == 100, v
PY

# A simulation compared with itself: every error is exactly 0.
"$sf" simulate "$tmp/tiny4.json" --out "$tmp/sim" >/dev/null 2>&1 || fail "simulate"
"$sf" validate "$tmp/sim/result.json" --out "$tmp/self" >"$tmp/self.log" 2>&1 || fail "self validation: $(cat "$tmp/self.log")"
python3 - "$tmp/self/validation.json" <<'PY' || fail "a simulation does not agree with itself"
import json, sys
v = json.load(open(sys.argv[1]))
errors = [m["relative_error"] for m in v["metrics"] if m["relative_error"] is not None]
assert v["same_buckets"] and len(errors) >= 8 and all(e == 0 for e in errors), v["metrics"]
PY

# Another plan: reported as a different bucket sequence, not compared bucket by bucket.
"$sf" validate "$tmp/run/result.json" --set scheme=syncea-topk >"$tmp/diff.log" 2>&1 || fail "validate with another plan"
grep -q "the executors flushed different sequences: 4 buckets measured, 1 simulated" "$tmp/diff.log" ||
  fail "different plan: $(cat "$tmp/diff.log")"

# Bad input: exit 2 with the file and the field.
expect2() {
  local pattern=$1; shift
  "$sf" validate "$@" >"$tmp/bad.log" 2>&1
  local status=$?
  [[ $status -eq 2 ]] || fail "validate $* exited $status, expected 2"
  grep -qF "$pattern" "$tmp/bad.log" || fail "validate $*: expected '$pattern' in: $(cat "$tmp/bad.log")"
}
expect2 "$tmp/none.json: cannot open file" "$tmp/none.json"
expect2 "$PWD/tests/data/tiny4.json: at /: missing required key \"scenario\"" "$PWD/tests/data/tiny4.json"
expect2 "$tmp/run/result.json: at /scenario/workers: expected an integer" "$tmp/run/result.json" --set workers=0
python3 - "$tmp/run/result.json" "$tmp/scale0.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["executor"]["time_scale"] = 0
json.dump(r, open(sys.argv[2], "w"))
PY
expect2 "$tmp/scale0.json: at /executor/time_scale: expected" "$tmp/scale0.json"
# Relative paths resolve from the result's directory.
cp "$PWD/profiles/cpu-dev-2core.json" "$tmp/run/kernels.json"
"$sf" validate "$tmp/run/result.json" --set compression.profile=kernels.json >/dev/null 2>&1 ||
  fail "a profile path relative to the result's directory"
expect2 "$tmp/run/missing.json: cannot open file" "$tmp/run/result.json" --set compression.profile=missing.json

finish
