#!/usr/bin/env bash
# The sweep command's contract: bad grids fail fast with exit 2 and write
# nothing; ids, CSV columns and sweep.json have the documented form.
set -uo pipefail
source "${TEST_SRCDIR}/sparsefuse/tests/sweep/common.sh"

# expect_error PATTERN -- ARGS...: exit status 2, stderr contains PATTERN, no $tmp/out.
expect_error() {
  local pattern=$1; shift 2
  local err status
  err=$("$sf" "$@" --out "$tmp/out" 2>&1 >/dev/null); status=$?
  [[ $status -eq 2 ]] || fail "sparsefuse $* exited $status, expected 2 ($err)"
  [[ "$err" == *"$pattern"* ]] || fail "sparsefuse $*: stderr lacks '$pattern': $err"
  [[ ! -e "$tmp/out" ]] || { fail "sparsefuse $* wrote $tmp/out"; rm -rf "$tmp/out"; }
}

expect_error '--grid workers=0: at /workers: expected an integer in [1, 1048576], got 0 (sweep point workers=0)' -- \
  sweep "$scenario" --grid workers=8,16,0
expect_error 'at /network/bandwidth_gbps: expected a number > 0' -- \
  sweep "$scenario" --grid workers=8,16 --grid network.bandwidth_gbps=100,-1
expect_error 'unknown preset "hovorod"; did you mean "horovod"?' -- sweep "$scenario" --schemes ddp,hovorod
expect_error '--grid workers: expected KEY=VALUE1,VALUE2,...' -- sweep "$scenario" --grid workers
expect_error 'value "8" is listed twice' -- sweep "$scenario" --grid workers=8,16,8
expect_error 'this key is swept twice' -- sweep "$scenario" --schemes ddp --grid scheme=wfbp
expect_error 'expected at least one --grid' -- sweep "$scenario"
expect_error 'expected a thread count' -- sweep "$scenario" --grid workers=8 -j 0
expect_error 'cannot open file' -- sweep "$tmp/missing.json" --grid workers=8
"$sf" sweep --help >/dev/null || fail "sweep --help exited non-zero"

# A JSON-valued axis and the --set order (base first, then the point).
"$sf" sweep "$scenario" --grid 'scheme={"preset":"ddp","bucket_cap_bytes":1048576},"horovod"' \
  --grid network.bandwidth_gbps=10,100 --set network.bandwidth_gbps=1 --set iterations=2 --out "$tmp/json" \
  >"$tmp/json.out" 2>&1 || fail "JSON-valued sweep failed: $(cat "$tmp/json.out")"
head -1 "$tmp/json/results.csv" | grep -qx 'scheme,network.bandwidth_gbps,iteration_mean_s,iteration_p50_s,iteration_p99_s,throughput_samples_per_s,communication_exposed_s,sync_wait_s,buckets,bytes_per_worker,status' ||
  fail "header: $(head -1 "$tmp/json/results.csv")"
sed -n 2p "$tmp/json/results.csv" | grep -q '^"{""preset"":""ddp"",""bucket_cap_bytes"":1048576}",10,' ||
  fail "JSON value not quoted in CSV: $(sed -n 2p "$tmp/json/results.csv")"
ls "$tmp/json/points/" | grep -q '^scheme=_horovod_,network.bandwidth_gbps=100-h[0-9a-f]\{16\}$' ||
  fail "unexpected point ids: $(ls "$tmp/json/points")"
python3 - "$tmp/json" <<'PY' || fail "sweep.json or result.json content"
import json, sys
d = sys.argv[1]
s = json.load(open(d + "/sweep.json"))
assert s["keys"] == ["scheme", "network.bandwidth_gbps"], s["keys"]
assert len(s["points"]) == 4
for p in s["points"]:
    r = json.load(open(d + "/" + p["result"]))
    # the point's value wins over the base --set
    assert r["scenario"]["network"]["bandwidth_gbps"] == float(p["values"]["network.bandwidth_gbps"])
    assert r["scenario"]["iterations"] == 2
PY

# Other commands never need mpirun or MPI.
"$sf" models >/dev/null || fail "models failed"

finish
