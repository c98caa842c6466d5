#!/usr/bin/env bash
# Trains a model under each scheme on P ranks (`sparsefuse train`, which
# profiles the model on every rank first), simulates each run with
# `sparsefuse validate` on the trace it profiled, and prints one markdown row
# per scheme: bucket count and whether the sequence equals the simulator's,
# iteration time measured and simulated, the error, and the per-bucket and
# summed compression errors. The README's validation table comes from here.
#
#   tools/train/validation_table.sh SPARSEFUSE OUTDIR P "TRAIN ARGS" "VALIDATE ARGS" SCHEME...
#
# e.g. tools/train/validation_table.sh bazel-bin/tools/cli/sparsefuse /tmp/acc 2 \
#        "--model resnet50-cifar100 --batch 1 --warmup 1 --iterations 10 --profile-iterations 10" \
#        "--set compression.profile=cpu-dev-2core --set variability.compute_cv=trace --set iterations=200" \
#        wfbp ddp fgbuff ssfusion adtopk topk-layerwise
# Logs and results stay under OUTDIR/SCHEME/. REVALIDATE=1 keeps a scheme's
# earlier training run when OUTDIR/SCHEME/result.json exists and only
# validates it again (e.g. with another compression profile). Exit status 1
# if any run failed.
set -uo pipefail
sf=$1 out=$2 ranks=$3 train_args=$4 validate_args=$5
shift 5
py=/usr/bin/python3
mkdir -p "$out"
status=0
echo "| scheme | buckets (same as simulated) | iteration measured (ms) | simulated (ms) | error | per-bucket compression error: mean abs / worst bucket | bucket compression sum error |"
echo "|---|---|---|---|---|---|---|"
for scheme in "$@"; do
  dir=$out/$scheme
  trained=0
  if [[ ${REVALIDATE:-0} == 1 && -f $dir/result.json ]]; then
    trained=1
  else
    rm -rf "$dir"
    # shellcheck disable=SC2086 # the argument strings are word lists
    mpirun --allow-run-as-root --oversubscribe -np "$ranks" "$sf" train --scheme "$scheme" $train_args \
      --out "$dir" >"$out/$scheme.train.log" 2>&1 && trained=1
  fi
  # shellcheck disable=SC2086
  if [[ $trained == 0 ]] ||
     ! "$sf" validate "$dir/result.json" $validate_args --out "$dir/v" >"$out/$scheme.validate.log" 2>&1; then
    echo "| $scheme | failed: see $out/$scheme.*.log | | | | | |"
    status=1
    continue
  fi
  "$py" - "$dir/v/validation.json" "$scheme" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
metric = {m["name"]: m for m in v["metrics"]}
it = metric["iteration time, mean (ms)"]
summed = metric["bucket compression, sum (ms)"]["relative_error"]
buckets = v["buckets"]
pct = lambda e: "n/a" if e is None else f"{100 * e:+.1f}%"
per_bucket = "n/a (none measured)"
if v["worst_compression_bucket"] >= 0:
    w = buckets[v["worst_compression_bucket"]]
    worst = (w["simulated_compression_s"] - w["measured_compression_s"]) / w["measured_compression_s"]
    per_bucket = f"{100 * v['mean_abs_bucket_compression_error']:.1f}% / {pct(worst)}"
print(f"| {sys.argv[2]} | {len(buckets)} ({'yes' if v['same_buckets'] else 'no: ' + v['bucket_difference']}) | "
      f"{it['measured']:.1f} | {it['simulated']:.1f} | {pct(it['relative_error'])} | {per_bucket} | {pct(summed)} |")
PY
done
exit $status
