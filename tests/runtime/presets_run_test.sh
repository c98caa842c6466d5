#!/usr/bin/env bash
# Every preset `sparsefuse presets` lists, under `mpirun -np 2` and `-np 4`
# on tiny4 with --check (tests/runtime/presets_table.sh): each runs with the
# check passing and its bucket sequence equal to `sparsefuse simulate`'s;
# none is refused. A few rows are also checked for what the preset's
# collectives must have carried, and ByteScheduler with partitions and a
# binding credit for its order and its timing against the simulator.
set -uo pipefail
source "${TEST_SRCDIR}/sparsefuse/tests/lib/common.sh"
source "${TEST_SRCDIR}/sparsefuse/tests/lib/mpi_env.sh"

cat >"$tmp/tiny4.json" <<JSON
{"model": {"trace": "$PWD/tests/data/tiny4.json"}, "workers": 2, "iterations": 3, "warmup_iterations": 1,
 "scheme": "wfbp", "compression": {"density": 0.1}}
JSON

bash tests/runtime/presets_table.sh "$sf" "$tmp/tiny4.json" "$tmp/rows" 2 4 >"$tmp/table.txt" 2>&1
status=$?
cat "$tmp/table.txt"
[[ $status -eq 0 ]] || fail "some preset failed, crashed or differed from the simulator (exit $status)"

source tests/lib/preset_rows.sh
for np in 2 4; do
  expect_every_preset "$tmp/table.txt" $np
  refused=$(awk -v np=$np '$2 == np && $3 == "refused" {print $1}' "$tmp/table.txt" | sort | tr '\n' ' ')
  [[ -z "$refused" ]] || fail "-np $np: refused presets: '$refused'"
  passed=$(awk -v np=$np '$2 == np && $3 == "passed" {print $1}' "$tmp/table.txt" | wc -l)
  [[ $passed -eq $(presets | wc -l) ]] || fail "-np $np: only $passed presets passed"
done

# What some collectives must have carried (the last iteration's buckets).
kinds() { field "$1" "' '.join(f\"{b['collective']}/{b['sent_elements']:g}\" for b in r['buckets'])"; }
for np in 2 4; do
  # DeAR: tiny4 (5,000 bytes) is one group, reduce-scattered in P blocks (padded to 1252 on 4 ranks).
  want=$([[ $np == 2 ]] && echo reduce_scatter/1250 || echo reduce_scatter/1252)
  [[ "$(kinds "$tmp/rows/dear-$np/result.json")" == "$want" ]] || fail "dear on $np ranks: $(kinds "$tmp/rows/dear-$np/result.json")"
  # Horovod's first cycle finds all of tiny4 ready: one fused allreduce of 1250 values.
  [[ "$(kinds "$tmp/rows/horovod-$np/result.json")" == "allreduce/1250" ]] ||
    fail "horovod on $np ranks: $(kinds "$tmp/rows/horovod-$np/result.json")"
  # RGMerge's negotiated merge: one top-k of 10% over the fused buffer, gathered.
  [[ "$(kinds "$tmp/rows/rgmerge-dynamic-$np/result.json")" == "allgather/125" ]] ||
    fail "rgmerge-dynamic on $np ranks: $(kinds "$tmp/rows/rgmerge-dynamic-$np/result.json")"
  # The sparse allreduces: one bucket over the whole model (1250 elements), the plan's algorithm,
  # k = 125 pairs per rank put in (Ok-Topk's threshold-reuse iterations select about k).
  for preset in gtopk spardl oktopk randomk-shared topk-dsa; do
    got=$(field "$tmp/rows/$preset-$np/result.json" "r['plan']['sparse_allreduce'], len(r['buckets']), r['buckets'][0]['elements']")
    want=$([[ $preset == randomk-shared ]] && echo shared-index-allreduce || echo $preset)
    [[ "$got" == "$want 1 1250" ]] || fail "$preset on $np ranks: plan/buckets $got"
  done
  for preset in gtopk spardl randomk-shared topk-dsa; do
    [[ "$(kinds "$tmp/rows/$preset-$np/result.json")" == "allreduce/125" ]] ||
      fail "$preset on $np ranks: $(kinds "$tmp/rows/$preset-$np/result.json")"
  done
done

# HiPress on a 1 Mb/s network, where SeCoPa compresses every tiny4 tensor
# into K = P partitions (2 ranks: 2, 4 ranks: 4): every bucket is a CaSync
# ring (runtime/sparse_allreduce.h), the check replays it on the gradients,
# the plan and bucket sequence are the simulator's, and each rank put K
# parts' pairs on the wire (a part of ceil(n/K) elements keeps max(1,
# floor(0.1 x part)): 250 elements: 2 x 12 = 4 x 6 = 24; 500: 2 x 25, 4 x 12).
for np in 2 4; do
  slow=(--set workers=$np --set scheme=hipress --set network.bandwidth_gbps=0.001)
  mpirun --allow-run-as-root --oversubscribe -np $np "$sf" run "$tmp/tiny4.json" "${slow[@]}" --check \
    --out "$tmp/hipress-$np" >"$tmp/hipress-$np.log" 2>&1 || fail "hipress on $np ranks: $(cat "$tmp/hipress-$np.log")"
  grep -q "^check           passed: .* all 4 iterations" "$tmp/hipress-$np.log" || fail "hipress on $np ranks: $(cat "$tmp/hipress-$np.log")"
  grep -q "^note        CaSync's ring re-encodes at every hop with an exact top-k, not dgc (the simulator charges dgc)" \
    "$tmp/hipress-$np.log" || fail "hipress on $np ranks: no note on the ring's encoder: $(cat "$tmp/hipress-$np.log")"
  [[ "$(field "$tmp/hipress-$np/result.json" "r['plan']['compressed_tensors'], r['plan']['secopa_partitions']")" == \
     "4 [$np, $np, $np, $np]" ]] || fail "hipress on $np ranks: plan $(field "$tmp/hipress-$np/result.json" "r['plan']")"
  last=$([[ $np == 2 ]] && echo 50 || echo 48)
  [[ "$(kinds "$tmp/hipress-$np/result.json")" == "allreduce/24 allreduce/24 allreduce/24 allreduce/$last" ]] ||
    fail "hipress on $np ranks: $(kinds "$tmp/hipress-$np/result.json")"
  "$sf" validate "$tmp/hipress-$np/result.json" --out "$tmp/hipress-$np-validation" >"$tmp/hipress-validate.log" 2>&1 ||
    fail "validate hipress: $(cat "$tmp/hipress-validate.log")"
  [[ "$(field "$tmp/hipress-$np-validation/validation.json" "r['same_buckets']")" == True ]] ||
    fail "hipress on $np ranks: buckets differ from the simulator's: $(cat "$tmp/hipress-validate.log")"
done

# Ok-Topk with error feedback, exact every 2nd iteration: the residual carries
# through reused-threshold iterations (1, 3, 5) and exact ones, under --check.
for np in 2 4; do
  mpirun --allow-run-as-root --oversubscribe -np $np "$sf" run "$tmp/tiny4.json" --set workers=$np --set scheme=oktopk \
    --set scheme.exact_every=2 --set scheme.error_feedback=tensor --set iterations=6 --check --out "$tmp/reuse-$np" \
    >"$tmp/reuse-$np.log" 2>&1 || fail "oktopk reuse on $np ranks: $(cat "$tmp/reuse-$np.log")"
  grep -q "^check           passed: .* all 7 iterations" "$tmp/reuse-$np.log" || fail "oktopk reuse on $np ranks: $(cat "$tmp/reuse-$np.log")"
  ! grep -q "^note " "$tmp/reuse-$np.log" || fail "a scheme that does not lag got the warm-up note: $(cat "$tmp/reuse-$np.log")"
done

# ByteScheduler: tiny3's three 250-element tensors cut into partitions of 50,
# one in flight (credit 50), each starting at a 2 ms negotiation tick, the
# compute replayed 40,000 times slower (backward 120 ms, a tensor every 40 ms).
# 15 collectives per iteration in the scheduler's order (the input side's
# first once posted), finishing in the next forward: the check passes on 2
# and 4 ranks, and on 2 ranks `validate` finds the simulator's order. A
# tensor's five partitions need about 12 ms of ticks, so the order holds
# while collectives run up to ~5x slower than on a quiet machine (with 3.3 ms
# ticks and 20 ms between tensors one CI run beside the other tests' ranks
# launched tensor 2 before tensor 1's last partition). The iteration-time
# error is printed, not checked: -0.3 % and -0.8 % on a quiet machine
# (2026-11-27), -12 to -15 % with both cores busy; runtime/README.md.
cat >"$tmp/tiny3bs.json" <<JSON
{"model": {"trace": "$PWD/tests/data/tiny3.json"}, "workers": 2, "iterations": 4, "warmup_iterations": 1,
 "scheme": {"preset": "bytescheduler", "partition_elements": 50, "credit_elements": 50, "cycle_time_us": 2000}}
JSON
for np in 2 4; do
  mpirun --allow-run-as-root --oversubscribe -np $np "$sf" run "$tmp/tiny3bs.json" --set workers=$np --time-scale 40000 \
    --check --out "$tmp/bs-$np" >"$tmp/bs-$np.log" 2>&1 || fail "bytescheduler on $np ranks: $(cat "$tmp/bs-$np.log")"
  grep -q "^check           passed: .* all 5 iterations" "$tmp/bs-$np.log" || fail "bytescheduler on $np ranks: $(cat "$tmp/bs-$np.log")"
  # One warm-up: the first measured iteration waits for the run's first (cold) collectives, and run says so.
  grep -q "^note        the first measured iteration waits .* use warmup_iterations >= 2" "$tmp/bs-$np.log" ||
    fail "bytescheduler with 1 warm-up: no note: $(cat "$tmp/bs-$np.log")"
  [[ "$(field "$tmp/bs-$np/result.json" "len(r['buckets']), sorted({b.get('first_element', 0) for b in r['buckets']})")" == \
     "15 [0, 50, 100, 150, 200]" ]] || fail "bytescheduler on $np ranks: $(field "$tmp/bs-$np/result.json" "r['buckets']")"
done
"$sf" validate "$tmp/bs-2/result.json" --out "$tmp/bs-2-validation" >"$tmp/bs-validate.log" 2>&1 ||
  fail "validate: $(cat "$tmp/bs-validate.log")"
[[ "$(field "$tmp/bs-2-validation/validation.json" "r['same_buckets']")" == True ]] ||
  fail "bytescheduler's order differs from the simulator's: $(cat "$tmp/bs-validate.log")"
error=$(field "$tmp/bs-2-validation/validation.json" "r['metrics'][0]['relative_error']")
echo "bytescheduler on 2 ranks: iteration time error against the simulator $error (not checked)"

finish
