#!/usr/bin/env bash
# Generates a small results directory with the real CLI, runs `sparsefuse
# plot` and `sparsefuse report` on it from an unrelated working directory,
# and checks the outputs (check_outputs.py) and the error contract.
set -uo pipefail
root="${TEST_SRCDIR:?run under bazel test}/sparsefuse"
sf=$root/tools/cli/sparsefuse
scenario=$root/tests/plot/small.json
check="/usr/bin/python3 $root/tests/plot/check_outputs.py"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect_status STATUS PATTERN -- ARGS...: exit status and a fixed string in stderr.
expect_status() {
  local want=$1 pattern=$2; shift 3
  local err status
  err=$("$sf" "$@" 2>&1 >/dev/null); status=$?
  [[ $status -eq $want ]] || fail "sparsefuse $* exited $status, expected $want ($err)"
  [[ "$err" == *"$pattern"* ]] || fail "sparsefuse $*: stderr lacks '$pattern': $err"
}

# --- a results directory: compare at two scales, a timeline, a two-key sweep
res=$tmp/results
for workers in 8 32; do
  "$sf" compare "$scenario" --schemes horovod,wfbp,ddp,syncea,ssfusion --set workers=$workers \
    --out "$res/compare-$workers" >/dev/null || fail "compare at $workers workers"
done
"$sf" simulate "$scenario" --set scheme=ssfusion --out "$res/timeline-ssfusion" \
  --timeline "$res/timeline-ssfusion/timeline.json" --timeline-workers 0-5 >/dev/null || fail "simulate --timeline"
"$sf" sweep "$scenario" --grid workers=4,8,16 --grid network.bandwidth_gbps=10,100 --set scheme=ddp \
  --out "$res/sweep" -j 2 >/dev/null 2>&1 || fail "sweep"

# --- plot and report from another working directory
mkdir -p "$tmp/elsewhere" && cd "$tmp/elsewhere" || exit 1
"$sf" plot "$res" >"$tmp/plot.out" 2>&1 || fail "plot failed: $(cat "$tmp/plot.out")"
"$sf" report "$res" --out "$tmp/report" >"$tmp/report.out" 2>&1 || fail "report failed: $(cat "$tmp/report.out")"
$check --results "$res" --figures "$res/figures" --report "$tmp/report" --baseline horovod \
  --expect-kinds scaling,speedup-bars,breakdown,timeline,partition,heatmap || fail "output checks"

# The same inputs give the same sidecars.
cp -r "$res/figures" "$tmp/figures-1"
"$sf" plot "$res" >/dev/null 2>&1 || fail "second plot failed"
for f in "$tmp"/figures-1/*.json; do
  cmp -s "$f" "$res/figures/$(basename "$f")" || fail "$(basename "$f") differs between two runs"
done

# A sweep over schemes (heatmap keyed by preset) whose times spread over 30x:
# the scaling and speedup axes must turn logarithmic.
"$sf" sweep "$scenario" --schemes horovod,topk-layerwise --grid workers=8,64 --set compression.density=0.5 \
  --out "$tmp/spread/sweep" -j 2 >/dev/null 2>&1 || fail "scheme sweep"
"$sf" plot "$tmp/spread" >/dev/null 2>&1 || fail "plot of the scheme sweep failed"
$check --results "$tmp/spread" --figures "$tmp/spread/figures" --baseline horovod \
  --expect-kinds scaling,speedup-bars,breakdown,partition,heatmap || fail "scheme sweep output checks"
/usr/bin/python3 - "$tmp/spread/figures" <<'PY' || fail "log axes for a 30x spread"
import json, sys
scaling = json.load(open(sys.argv[1] + "/scaling-bert-base.json"))
bars = json.load(open(sys.argv[1] + "/speedup-bars.json"))
got = (scaling["throughput_y_scale"], scaling["speedup_y_scale"], bars["y_scale"])
sys.exit(0 if got == ("log", "log", "log") else f"axes {got}, expected log for all three")
PY

# Captions name the network model a result really used, topology included.
"$sf" compare "$scenario" --schemes horovod,ddp --set 'topology={"preset": "dgx-h200-ib400"}' \
  --out "$tmp/dgx/compare" >/dev/null 2>&1 || fail "compare on dgx-h200-ib400"
"$sf" plot "$tmp/dgx" >/dev/null 2>&1 || fail "plot of the dgx comparison failed"
grep -q 'NCCL model on dgx-h200-ib400 (1 x 8 GPUs)' "$tmp/dgx/figures/scaling-bert-base.json" ||
  fail "dgx caption: $(grep -o '"caption": "[^"]*"' "$tmp/dgx/figures/scaling-bert-base.json")"

# A real run's figures say so (its scenario's network model was not what timed it).
mkdir -p "$tmp/real/run" && cp "$tmp/dgx/compare/horovod/result.json" "$tmp/real/run/result.json" &&
  /usr/bin/python3 - "$tmp/real/run/result.json" <<'PY' || fail "making a runtime result"
import json, sys
r = json.load(open(sys.argv[1]))
r["executor"] = {"name": "runtime-mpi", "transport": "mpi", "ranks": 8, "host": "box"}
json.dump(r, open(sys.argv[1], "w"))
PY
"$sf" plot "$tmp/real" >/dev/null 2>&1 || fail "plot of a runtime result failed"
grep -q 'real run: runtime-mpi over mpi, 8 ranks on box' "$tmp/real/figures/breakdown-bert-base.json" ||
  fail "runtime caption: $(grep -o '"caption": "[^"]*"' "$tmp/real/figures/breakdown-bert-base.json")"

# A validation (sparsefuse validate --out) is drawn: measured against simulated per metric and bucket.
"$sf" validate "$res/compare-8/horovod/result.json" --set network.bandwidth_gbps=10 --out "$tmp/val/v" \
  >/dev/null 2>&1 || fail "validate"
"$sf" plot "$tmp/val" >/dev/null 2>&1 || fail "plot of a validation failed"
$check --results "$tmp/val" --figures "$tmp/val/figures" --baseline horovod --expect-kinds validation ||
  fail "validation output checks"

# --baseline, --workers and the throughput heatmap; sparse buckets in the partition.
"$sf" plot "$res" --out "$tmp/fig-options" --baseline wfbp --workers 8 --heatmap-metric throughput \
  >/dev/null 2>&1 || fail "plot with options failed"
$check --results "$res" --figures "$tmp/fig-options" --baseline wfbp --workers 8 --metric throughput \
  --expect-kinds scaling,speedup-bars,breakdown,timeline,partition,heatmap || fail "option output checks"
mkdir -p "$tmp/sparse" && cp -r "$res/compare-8" "$tmp/sparse/" &&
  /usr/bin/python3 - "$tmp/sparse/compare-8/syncea/result.json" <<'PY' || fail "making a sparse result"
import json, sys
# A stand-in for a sparse scheme: half the elements sent dense, 1% of the rest.
path = sys.argv[1]
r = json.load(open(path))
for b in r["buckets"]:
    b["dense_elements"] = b["elements"] // 2
    b["sent_elements"] = b["dense_elements"] + b["elements"] // 200
json.dump(r, open(path, "w"))
PY
"$sf" report "$tmp/sparse" >/dev/null 2>&1 || fail "report on sparse results failed"
$check --results "$tmp/sparse" --figures "$tmp/sparse/figures" --report "$tmp/sparse" --baseline horovod \
  --expect-kinds scaling,speedup-bars,breakdown,partition --sparse || fail "sparse output checks"

# A sweep over a scheme knob x a setting that becomes a scheme knob
# (compression.density) is ONE 6x2 heatmap, its axes in numeric order.
"$sf" sweep "$scenario" --set scheme=ssfusion --grid scheme.tensors_per_buffer=0,5,10,22,50,100 \
  --grid compression.density=0.01,0.1 --out "$tmp/knobs/sweep" -j 2 >/dev/null 2>&1 || fail "knob sweep"
"$sf" plot "$tmp/knobs" >/dev/null 2>&1 || fail "plot of the knob sweep failed"
/usr/bin/python3 - "$tmp/knobs/figures" <<'PY' || fail "one 6x2 heatmap in numeric order"
import glob, json, sys
maps = sorted(glob.glob(sys.argv[1] + "/heatmap-*.json"))
if len(maps) != 1:
    sys.exit(f"{len(maps)} heatmaps, expected 1: {maps}")
d = json.load(open(maps[0]))
want = ([0, 5, 10, 22, 50, 100], [0.01, 0.1])
if (d["y_values"], d["x_values"]) != want:
    sys.exit(f"axes {d['y_values']} x {d['x_values']}, expected {want}")
if any(v is None for row in d["values"] for v in row) or len(d["values"]) != 6 or len(d["values"][0]) != 2:
    sys.exit(f"values {d['values']}: expected 6 rows of 2 cells")
PY

# Descriptions in older results cite outside notes and hold absolute paths;
# captions must hold neither (check_outputs.py checks every caption).
mkdir -p "$tmp/paths" && cp -r "$res/compare-8" "$tmp/paths/" &&
  /usr/bin/python3 - "$tmp/paths/compare-8/ssfusion/result.json" <<'PY' || fail "making a result with paths"
import json, sys
r = json.load(open(sys.argv[1]))
r["compression_costs"] = "seed-8node (seed code tables, notes.md §1.2); cpu: /home/dev/sparsefuse/profiles/cpu-dev-2core.json"
json.dump(r, open(sys.argv[1], "w"))
PY
"$sf" plot "$tmp/paths" >/dev/null 2>&1 || fail "plot of results with paths failed"
$check --results "$tmp/paths" --figures "$tmp/paths/figures" --baseline horovod \
  --expect-kinds scaling,speedup-bars,breakdown,partition || fail "portable captions"
grep -q 'cpu: cpu-dev-2core.json' "$tmp/paths/figures/breakdown-bert-base.json" ||
  fail "caption lost the profile's name: $(grep -o '"caption": "[^"]*"' "$tmp/paths/figures/breakdown-bert-base.json")"

# Three seeds per point are one point, their mean with a 95% Student-t
# interval, n in the legend. Expected values computed here from the three result.json files.
for scheme in horovod ddp; do
  "$sf" sweep "$scenario" --set scheme=$scheme --grid seed=1,2,3 --grid workers=8,16 \
    --out "$tmp/seeds/$scheme" -j 2 >/dev/null 2>&1 || fail "seed sweep of $scheme"
done
"$sf" plot "$tmp/seeds" >/dev/null 2>&1 || fail "plot of the seed sweeps failed"
/usr/bin/python3 - "$tmp/seeds" <<'PY' || fail "seeds aggregated"
import glob, json, math, sys
root = sys.argv[1]
side = json.load(open(root + "/figures/scaling-bert-base.json"))
errors = []
if sorted(s["preset"] for s in side["series"]) != ["ddp", "horovod"]:
    errors.append(f"series {[s['label'] for s in side['series']]}: expected one per scheme, not per seed")
if "95%" not in side["caption"]:
    errors.append(f"caption does not say the interval: {side['caption']}")
for s in side["series"]:
    if not s["legend"].endswith("(n=3)"):
        errors.append(f"legend {s['legend']!r} lacks n=3")
    for i, workers in enumerate(s["workers"]):
        runs = [json.load(open(p)) for p in glob.glob(f"{root}/{s['preset']}/points/*workers={workers}*/result.json")]
        x = [r["throughput_samples_per_s"] for r in runs]
        if len(x) != 3 or len({r["scenario"]["seed"] for r in runs}) != 3:
            errors.append(f"{s['preset']} at {workers}: found {len(x)} runs")
            continue
        mean = sum(x) / 3
        sd = math.sqrt(sum((v - mean) ** 2 for v in x) / 2)
        half = 4.302653 * sd / math.sqrt(3)  # t(0.975, 2 degrees of freedom)
        if s["n"][i] != 3 or abs(s["throughput_samples_per_s"][i] - mean) > 1e-9 * mean \
                or abs(s["throughput_ci95_half_width"][i] - half) > 1e-6 * half:
            errors.append(f"{s['preset']} at {workers}: n {s['n'][i]}, mean {s['throughput_samples_per_s'][i]}, "
                          f"half-width {s['throughput_ci95_half_width'][i]}; expected 3, {mean}, {half}")
sys.exit("\n".join(errors) or None)
PY

# The quickstart's 22 schemes. check_outputs.py checks unique colours and
# markers, at most 8 series per line figure, and identical series named in the legend.
quick=wfbp,horovod,ddp,syncea,mgwfbp,omgs,fgbuff,saf,safusion-inter,safusion,ssfusion,ssfusion-o,ssfusion-i
quick=$quick,adtopk,adtopk-i,adtopk-p,adtopk-h,topk-layerwise,rgmerge-dynamic,dear,oktopk,spardl
for workers in 8 16; do
  "$sf" compare "$scenario" --schemes $quick --set workers=$workers --out "$tmp/many/compare-$workers" \
    >/dev/null 2>&1 || fail "compare of 22 schemes at $workers workers"
done
"$sf" plot "$tmp/many" >/dev/null 2>&1 || fail "plot of 22 schemes failed"
$check --results "$tmp/many" --figures "$tmp/many/figures" --baseline wfbp \
  --expect-kinds scaling,speedup-bars,breakdown,partition || fail "22-scheme output checks"
/usr/bin/python3 - "$tmp/many/figures" <<'PY' || fail "22 schemes: figures split by family"
import json, sys
index = json.load(open(sys.argv[1] + "/index.json"))
names = sorted(f["name"] for f in index["figures"] if f["kind"] in ("scaling", "partition"))
want = {"scaling-bert-base-dense", "scaling-bert-base-seed-sparse-1", "scaling-bert-base-seed-sparse-2",
        "scaling-bert-base-baselines"}
errors = [f"missing {n} (have {names})" for n in sorted(want - set(names))]
for f in index["figures"]:
    if f["kind"] == "partition":
        rows = len(json.load(open(sys.argv[1] + "/" + f["json"]))["series"])
        if rows > 8:
            errors.append(f"{f['name']}: {rows} rows, at most 8")
sys.exit("\n".join(errors) or None)
PY

# A swept bandwidth in GB/s is written as GB/s, not seconds ("900 s").
"$sf" sweep "$scenario" --set scheme=ddp --grid compression.gpu_memory_gbytes_per_s=450,900 \
  --out "$tmp/gbytes/sweep" -j 2 >/dev/null 2>&1 || fail "sweep of gpu_memory_gbytes_per_s"
"$sf" report "$tmp/gbytes" >/dev/null 2>&1 || fail "report of the GB/s sweep failed"
grep -q 'gbytes\\_per\\_s: 450 GB/s, 900 GB/s' "$tmp/gbytes/report.md" ||
  fail "report: $(grep -o 'gpu_memory_gbytes_per_s[^;|]*' "$tmp/gbytes/report.md" | head -3)"
grep -q '900 s\b' "$tmp/gbytes/report.md" && fail "report writes a bandwidth in seconds"

# --- bad input: exit 2, a message naming the problem, nothing written
mkdir -p "$tmp/empty/sub"
expect_status 2 "missing: no such directory" -- plot "$tmp/missing"
expect_status 2 "missing: no such directory" -- report "$tmp/missing"
expect_status 2 "no result.json found" -- plot "$tmp/empty"
expect_status 2 "no result.json found" -- report "$tmp/empty"
[[ ! -e "$tmp/empty/figures" && ! -e "$tmp/empty/report.md" ]] || fail "bad input wrote output"
echo '{"format": "sparsefuse-result/1",' > "$tmp/empty/sub/result.json"
expect_status 2 "result.json: malformed JSON" -- plot "$tmp/empty"
echo '{"format": "sparsefuse-result/1", "iteration_time_s": {"mean": -1}}' > "$tmp/empty/sub/result.json"
expect_status 2 "at /iteration_time_s/mean: expected a number > 0" -- plot "$tmp/empty"
[[ ! -e "$tmp/empty/figures" ]] || fail "bad input wrote figures"
expect_status 2 "--workers 3: no results at that scale" -- plot "$res" --workers 3 --out "$tmp/nope"
expect_status 2 '--baseline nope: no such scheme' -- report "$res" --baseline nope --out "$tmp/nope"
[[ ! -e "$tmp/nope" ]] || fail "bad options wrote output"
expect_status 2 "expected time or throughput" -- plot "$res" --heatmap-metric fast
expect_status 2 "unrecognised option" -- plot "$res" --bogus
# A failing interpreter is an internal error (exit 1).
SPARSEFUSE_PYTHON=/bin/false expect_status 1 "failed with exit status 1" -- plot "$res" --out "$tmp/nope"
SPARSEFUSE_PYTHON=$tmp/no-python expect_status 1 "not found or not executable" -- plot "$res" --out "$tmp/nope"
for command in plot report; do
  "$sf" $command --help >/dev/null || fail "$command --help exited non-zero"
done
ls -a "$res/figures" | grep -q '\.tmp$' && fail "temporary files left in figures/"

if ((failures)); then echo "$failures check(s) failed"; exit 1; fi
echo "all plot/report checks passed"
