#!/usr/bin/env bash
# GPU replays of the measured traces, and their validation against the simulator.
#
#   there: tools/device/replay.sh run SPARSEFUSE GPU OUTDIR [PRESET...]
#   here:  tools/device/replay.sh table SPARSEFUSE OUTDIR PROFILE [VALIDATED]
#
# run: for each measured trace of this GPU (traces/measured/MODEL-GPU-*.json,
# MODEL from REPLAY_MODELS, default "bert-base resnet152"), `sparsefuse run
# --device cuda` on one rank (NCCL on one GPU, CudaCompressor) replays
# REPLAY_WARMUP (2) + REPLAY_ITERATIONS (5) iterations of each preset, payloads
# REPLAY_PAYLOADS (device: on the GPU where the scheme allows; host: staged
# through host memory), and writes OUTDIR/MODEL/PRESET/result.json (and run.log). One rank: the collectives are NCCL's one-GPU copies, so what
# the comparison tests is the compression the GPU does in the runtime.
# table: `sparsefuse validate` of each such result with the GPU's measured
# compression profile (PROFILE, a file or name), one markdown row each
# (tools/train/validation_row.py); each validation (v/ and validate.log) goes
# under VALIDATED/MODEL/PRESET/, by default beside its result (pass another
# folder to keep committed runs untouched). A trace found in OUTDIR/traces/
# is used before traces/measured/'s. Exit status 1 if any run or validation failed.
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
verb=${1:-}
if [[ $verb == run && $# -ge 4 ]]; then
  sf=$2 gpu=$3 out=$4
  shift 4
  presets=${*:-wfbp topk-layerwise adtopk fgbuff ssfusion dear}
  status=0
  for model in ${REPLAY_MODELS:-bert-base resnet152}; do
    for trace in "$here"/traces/measured/"$model-$gpu"-*.json; do
      [[ -f $trace ]] || { echo "no measured $gpu trace of $model"; status=1; continue; }
      for preset in $presets; do
        dir=$out/$model/$preset
        mkdir -p "$dir"
        printf '{"model": {"trace": "%s"}, "workers": 1, "warmup_iterations": %d, "iterations": %d, "seed": 1, "scheme": "%s"}\n' \
          "$trace" "${REPLAY_WARMUP:-2}" "${REPLAY_ITERATIONS:-5}" "$preset" >"$dir/scenario.json"
        if "$sf" run "$dir/scenario.json" --device "${REPLAY_DEVICE:-cuda}" --payloads "${REPLAY_PAYLOADS:-device}" \
             --out "$dir" >"$dir/run.log" 2>&1; then
          echo "$model $preset: $(grep -m1 '^iteration time' "$dir/run.log")"
        else
          echo "$model $preset: failed"; tail -n 3 "$dir/run.log"; status=1
        fi
      done
    done
  done
  exit $status
elif [[ $verb == table && ($# -eq 4 || $# -eq 5) ]]; then
  sf=$2 out=$3 profile=$4 validated=${5:-$3}
  [[ -f $profile ]] && profile=$(realpath "$profile")  # validate reads it relative to the result
  status=0
  /usr/bin/python3 "$here/tools/train/validation_row.py" --header "model / preset"
  for result in "$out"/*/*/result.json; do
    label="$(basename "$(dirname "$(dirname "$result")")") / $(basename "$(dirname "$result")")"
    dir=$validated/${label/ \/ //}
    mkdir -p "$dir"
    # The recorded scenario names a trace path on the GPU machine: point it at this checkout's copy,
    # OUTDIR/traces/ (a trace kept with its runs only) before traces/measured/.
    trace=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["scenario"]["model"]["trace"])' "$result")
    trace=$(basename "$trace")
    if [[ -f $out/traces/$trace ]]; then trace=$(realpath "$out/traces/$trace"); else trace=$here/traces/measured/$trace; fi
    if "$sf" validate "$result" --set "model.trace=\"$trace\"" \
         --set "compression.profile=\"$profile\"" --out "$dir/v" >"$dir/validate.log" 2>&1; then
      /usr/bin/python3 "$here/tools/train/validation_row.py" "$dir/v/validation.json" "$label"
    else
      echo "| $label | failed: see $dir/validate.log | | | | | | |"; status=1
    fi
  done
  exit $status
fi
echo "usage: tools/device/replay.sh run SPARSEFUSE GPU OUTDIR [PRESET...] | table SPARSEFUSE OUTDIR PROFILE [VALIDATED]" >&2
exit 2
