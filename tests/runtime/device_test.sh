#!/usr/bin/env bash
# `sparsefuse run --device`: a value other than cpu/cuda exits 2 naming the
# option (and --payloads other than device/host); where no CUDA device is usable, --device cuda exits 2 with the
# reason (one rank and two), and the gpu-tagged test binaries print SKIPPED
# and exit 77 (never a pass). With a usable device this test only checks the
# bad value (the gpu tests themselves then run under tools/test).
set -uo pipefail
source "${TEST_SRCDIR}/sparsefuse/tests/lib/common.sh"
source "${TEST_SRCDIR}/sparsefuse/tests/lib/mpi_env.sh"
cat >"$tmp/tiny4.json" <<JSON
{"model": {"trace": "$PWD/tests/data/tiny4.json"}, "workers": 1, "iterations": 1, "warmup_iterations": 0,
 "scheme": "wfbp"}
JSON

"$sf" run "$tmp/tiny4.json" --device tpu >"$tmp/tpu.log" 2>&1
[[ $? -eq 2 ]] && grep -q 'error: --device: expected cpu or cuda, got "tpu"' "$tmp/tpu.log" || fail "--device tpu: $(cat "$tmp/tpu.log")"
"$sf" run "$tmp/tiny4.json" --payloads gpu >"$tmp/payloads.log" 2>&1
[[ $? -eq 2 ]] && grep -q 'error: --payloads: expected device or host, got "gpu"' "$tmp/payloads.log" ||
  fail "--payloads gpu: $(cat "$tmp/payloads.log")"
# On the CPU the payloads are in host memory whatever --payloads says, and the run says so.
"$sf" run "$tmp/tiny4.json" --payloads host >"$tmp/host.log" 2>&1
[[ $? -eq 0 ]] && grep -q '^executor .*, payloads host$' "$tmp/host.log" || fail "--payloads host on the CPU: $(cat "$tmp/host.log")"

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  finish
fi
"$sf" run "$tmp/tiny4.json" --device cuda >"$tmp/cuda.log" 2>&1
[[ $? -eq 2 ]] && grep -q 'error: --device: expected a usable CUDA device for cuda, found none (' "$tmp/cuda.log" ||
  fail "--device cuda without a GPU: $(cat "$tmp/cuda.log")"
timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 "$sf" run "$tmp/tiny4.json" --set workers=2 --device cuda \
  >"$tmp/cuda2.log" 2>&1
[[ $? -eq 2 ]] && [[ $(grep -c 'error: --device: expected a usable CUDA device' "$tmp/cuda2.log") -eq 1 ]] ||
  fail "--device cuda on 2 ranks without a GPU: expected exit 2 and one message: $(cat "$tmp/cuda2.log")"
for t in runtime/cuda_runtime_test kernels/cuda_test; do
  "$PWD/$t" >"$tmp/gpu.log" 2>&1
  status=$?
  [[ $status -eq 77 ]] && grep -q '^SKIPPED: no usable CUDA device' "$tmp/gpu.log" ||
    fail "$t without a device: exit $status: $(cat "$tmp/gpu.log")"
done
finish
