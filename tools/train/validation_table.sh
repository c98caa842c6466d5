#!/usr/bin/env bash
# Trains a model under each scheme on P ranks (`sparsefuse train`, which
# profiles the model on every rank first), simulates each run with
# `sparsefuse validate` on the trace it profiled, and prints one markdown row
# per scheme: bucket count and whether the sequence equals the simulator's,
# iteration time measured and simulated, the error, and the per-bucket and
# summed compression errors; then the per-bucket compression error by kind of
# bucket (sparse >= 1e5 elements, smaller, sent dense as pairs). The README's
# validation table comes from here.
#
#   tools/train/validation_table.sh SPARSEFUSE OUTDIR P "TRAIN ARGS" "VALIDATE ARGS" SCHEME...
#
# e.g. tools/train/validation_table.sh bazel-bin/tools/cli/sparsefuse /tmp/acc 2 \
#        "--model resnet50-cifar100 --batch 1 --warmup 1 --iterations 10 --profile-iterations 10 --profile interleaved" \
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
validated=()
"$py" "$(dirname "$0")/validation_row.py" --header scheme
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
    echo "| $scheme | failed: see $out/$scheme.*.log | | | | | | |"
    status=1
    continue
  fi
  "$py" "$(dirname "$0")/validation_row.py" "$dir/v/validation.json" "$scheme"
  validated+=("$scheme")
done
# The per-bucket compression error by kind of bucket, for the schemes validated.
if ((${#validated[@]})); then
  echo
  "$py" "$(dirname "$0")/validation_row.py" --by-size-header scheme
  for scheme in "${validated[@]}"; do
    "$py" "$(dirname "$0")/validation_row.py" --by-size "$out/$scheme/v/validation.json" "$scheme"
  done
fi
exit $status
