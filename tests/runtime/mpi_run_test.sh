#!/usr/bin/env bash
# `mpirun -np P sparsefuse run` on tiny4 (four tensors of 250, 250, 250, 500
# elements): for P = 2 and 4 and a dense and three sparse presets, --check
# passes (every rank's averaged gradient equals the exact recomputed one),
# result.json is written, and its bucket sequence is the simulator's for the
# same scenario (one policy, two executors). Unsupported schemes, a wrong
# worker count and a hung peer end the run with a clear error.
set -uo pipefail
source "${TEST_SRCDIR}/sparsefuse/tests/lib/common.sh"
source "${TEST_SRCDIR}/sparsefuse/tests/lib/mpi_env.sh"
mpi=(timeout 120 mpirun --allow-run-as-root --oversubscribe)

cat >"$tmp/tiny4.json" <<JSON
{"model": {"trace": "$PWD/tests/data/tiny4.json"}, "workers": 2, "iterations": 3, "warmup_iterations": 1,
 "scheme": "wfbp", "compression": {"density": 0.1}}
JSON

# The bucket sequence as "first:tensors:collective:elements ...".
sequence() { field "$1" "' '.join(f\"{b['first_tensor']}:{b['tensors']}:{b['collective']}:{b['elements']}\" for b in r['buckets'])"; }

for np in 2 4; do
  for preset in wfbp topk-layerwise fgbuff ssfusion; do
    out=$tmp/$preset-$np
    set_args=(--set workers=$np --set scheme=$preset)
    "${mpi[@]}" -np $np "$sf" run "$tmp/tiny4.json" "${set_args[@]}" --check --out "$out" >"$out.log" 2>&1
    status=$?
    [[ $status -eq 0 ]] || { fail "$preset on $np ranks exited $status: $(cat "$out.log")"; continue; }
    grep -q "check           passed" "$out.log" || fail "$preset on $np ranks: no check line: $(cat "$out.log")"
    [[ $(grep -c "^wrote " "$out.log") -eq 1 ]] || fail "$preset on $np ranks: only rank 0 should write"
    [[ -f "$out/result.json" ]] || { fail "$preset on $np ranks: no result.json"; continue; }
    [[ $(field "$out/result.json" "r['executor']['name'], r['executor']['ranks'], r['scenario']['workers']") == "runtime-mpi $np $np" ]] ||
      fail "$preset on $np ranks: executor/scenario fields wrong"
    "$sf" simulate "$tmp/tiny4.json" "${set_args[@]}" --out "$out-sim" >/dev/null 2>&1 || fail "simulate $preset failed"
    [[ "$(sequence "$out/result.json")" == "$(sequence "$out-sim/result.json")" ]] ||
      fail "$preset on $np ranks: buckets $(sequence "$out/result.json") differ from the simulator's $(sequence "$out-sim/result.json")"
  done
  # What each preset must have sent: wfbp one allreduce per tensor; top-k
  # exactly 10% of each tensor, counts exchanged; fgbuff's equal slices.
  [[ "$(sequence "$tmp/wfbp-$np/result.json")" == "0:1:allreduce:250 1:1:allreduce:250 2:1:allreduce:250 3:1:allreduce:500" ]] ||
    fail "wfbp on $np ranks: buckets $(sequence "$tmp/wfbp-$np/result.json")"
  [[ "$(field "$tmp/topk-layerwise-$np/result.json" "[(b['sent_elements'], b['alignment']) for b in r['buckets']]")" == \
     "[(25.0, 'exchange-counts'), (25.0, 'exchange-counts'), (25.0, 'exchange-counts'), (50.0, 'exchange-counts')]" ]] ||
    fail "topk-layerwise on $np ranks: sent $(field "$tmp/topk-layerwise-$np/result.json" "[b['sent_elements'] for b in r['buckets']]")"
  [[ "$(field "$tmp/fgbuff-$np/result.json" "{b['alignment'] for b in r['buckets']}")" == "{'equal-slices'}" ]] ||
    fail "fgbuff on $np ranks: expected equal-slices buckets"
done

# A scheme the runtime cannot execute: exit 2, one message naming it and why, nothing written.
"${mpi[@]}" -np 2 "$sf" run "$tmp/tiny4.json" --set scheme=oktopk --set scheme.exact_every=0 --out "$tmp/refused" \
  >"$tmp/refused.log" 2>&1
status=$?
[[ $status -eq 2 ]] || fail "oktopk with exact_every = 0 exited $status, expected 2: $(cat "$tmp/refused.log")"
[[ $(grep -c 'at /scheme: runtime-mpi cannot run preset "oktopk": Ok-Topk with exact_every = 0 never computes the threshold' "$tmp/refused.log") -eq 1 ]] ||
  fail "oktopk: expected exactly one message: $(cat "$tmp/refused.log")"
[[ ! -e "$tmp/refused" ]] || fail "a refused run created its output directory"

# The worker count must be the rank count.
"${mpi[@]}" -np 2 "$sf" run "$tmp/tiny4.json" --set workers=3 >"$tmp/workers.log" 2>&1
[[ $? -eq 2 ]] || fail "workers=3 on 2 ranks did not exit 2"
grep -q "tiny4.json: at /workers: expected 2 (the number of ranks this run was started with), got 3" "$tmp/workers.log" ||
  fail "workers message: $(cat "$tmp/workers.log")"

# A hung peer: stop rank 1 mid-run; rank 0's collectives time out and the
# whole job ends with status 1 and a message, not a hang.
"${mpi[@]}" -np 2 "$sf" run "$tmp/tiny4.json" --set iterations=1000000 --time-scale 100 --timeout 2 \
  >"$tmp/hang.log" 2>&1 &
launcher=$!
# Wait (up to 60 s on a loaded machine) until mpirun has started both ranks, then let them run a little.
victim=""
for _ in $(seq 1 120); do
  mpirun_pid=$(pgrep -P "$launcher" | head -1)
  if [[ -n "$mpirun_pid" && $(pgrep -P "$mpirun_pid" | wc -l) -ge 2 ]]; then
    victim=$(pgrep -P "$mpirun_pid" | sort -n | tail -1)
    break
  fi
  sleep 0.5
done
sleep 2
if [[ -n "$victim" ]]; then
  kill -STOP "$victim"
  wait "$launcher"
  status=$?
  [[ $status -eq 1 ]] || fail "a hung peer gave status $status, expected 1: $(cat "$tmp/hang.log")"
  grep -q "did not complete within 2 s" "$tmp/hang.log" || fail "hung peer message: $(cat "$tmp/hang.log")"
  kill -KILL "$victim" 2>/dev/null
else
  fail "could not find the ranks of the hung-peer run: $(cat "$tmp/hang.log")"
  kill "$launcher"
fi

finish
