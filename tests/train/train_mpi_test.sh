#!/usr/bin/env bash
# sparsefuse train on 2 ranks (mpirun): a small classifier trained with a
# dense scheme (wfbp), a sparse one (topk-layerwise, error feedback), the
# two that update inside the next forward (dear, bytescheduler) and HiPress's
# CaSync ring; every rank
# dumps its own and its averaged gradients (the averages applied), and an
# independent torch reference (check_grads.py) recomputes the averages. Then
# the results are validated against the simulator, and bad input exits 2.
set -uo pipefail
source "${TEST_SRCDIR}/sparsefuse/tests/lib/common.sh"
source "${TEST_SRCDIR}/sparsefuse/tests/lib/mpi_env.sh"
py=/usr/bin/python3
task="$PWD/tests/train/tasks.py"

train() {  # train NAME SCHEME [ARGS...]
  local name=$1 scheme=$2; shift 2
  timeout 300 mpirun --allow-run-as-root --oversubscribe -np 2 "$sf" train --model "$task:classifier" \
    --data "$task:shards" --batch 16 --scheme "$scheme" --warmup 1 --iterations 4 --profile-iterations 4 \
    --out "$tmp/$name" --dump-grads "$tmp/$name-grads" "$@" >"$tmp/$name.log" 2>&1
}

train dense wfbp || fail "train wfbp: $(cat "$tmp/dense.log")"
$py tests/train/check_grads.py "$tmp/dense-grads" 2 dense >"$tmp/check.log" 2>&1 ||
  fail "dense averages: $(cat "$tmp/check.log")"
grep -q "dense: 5 iterations x 6 tensors x 2 ranks" "$tmp/check.log" || fail "dense check: $(cat "$tmp/check.log")"
$py - "$tmp/dense/result.json" <<'PY' || fail "dense result.json"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["format"] == "sparsefuse-result/1", r["format"]
assert r["executor"]["name"] == "runtime-mpi (training)" and r["executor"]["ranks"] == 2, r["executor"]
assert r["scenario"]["model"] == {"trace": "trace.json"} and r["scenario"]["iterations"] == 4, r["scenario"]
# Training compresses right after each layer's backward (docs/simulator-model.md#calls-after-compute).
assert r["scenario"]["compression"]["calls"] == "after-compute", r["scenario"]["compression"]
assert r["plan"]["preset"] == "wfbp" if "preset" in r.get("plan", {}) else True
assert len(r["buckets"]) == 6 and all(b["collective"] == "allreduce" for b in r["buckets"]), r["buckets"]
assert all(b["duration_s"] > 0 for b in r["buckets"]), r["buckets"]
losses = r["training"]["loss_per_iteration"]
assert len(losses) == 5 and all(l > 0 for l in losses), losses
# Each rank trains on its own shard: their losses differ, and the recorded loss is their mean.
per_rank = r["training"]["loss_per_rank"]
assert len(per_rank) == 2 and all(len(l) == 5 for l in per_rank), per_rank
assert per_rank[0] != per_rank[1], per_rank
assert all(abs((a + b) / 2 - m) <= 1e-12 * abs(m) for a, b, m in zip(*per_rank, losses)), (per_rank, losses)
PY
[[ -f "$tmp/dense/trace.json" ]] || fail "no trace.json written by the profiling ranks"

# --profile interleaved: a second instance of the model profiled one iteration
# after each training iteration gives the trace result.json names (the plan
# still comes from trace.json); the training itself is untouched (the same
# losses as the run above), and validate runs on that trace.
train interleaved wfbp --profile interleaved || fail "train --profile interleaved: $(cat "$tmp/interleaved.log")"
$py - "$tmp/dense/result.json" "$tmp/interleaved" <<'PY' || fail "--profile interleaved: result.json and trace"
import json, os, sys
dense, out = json.load(open(sys.argv[1])), sys.argv[2]
r = json.load(open(os.path.join(out, "result.json")))
assert r["scenario"]["model"] == {"trace": "trace-interleaved.json"}, r["scenario"]["model"]
assert r["training"]["profile"] == "interleaved" and r["training"]["planned_with_trace"] == "trace.json", r["training"]
assert dense["training"]["profile"] == "before" and dense["scenario"]["model"] == {"trace": "trace.json"}
assert r["training"]["loss_per_iteration"] == dense["training"]["loss_per_iteration"], "the shadow changed the training"
t = json.load(open(os.path.join(out, "trace-interleaved.json")))
before = json.load(open(os.path.join(out, "trace.json")))
p = t["provenance"]
assert p["iterations"] == 4 and p["warmup_iterations"] == 1 and "--profile interleaved" in p["note"], p
assert [x["name"] for x in t["tensors"]] == [x["name"] for x in before["tensors"]], "the two traces list other tensors"
assert t["backward_ns"] > 0 and t["forward_ns"] > 0, t
# The flush probe in its hooks: 5 iterations of 6 hooks; iteration 0 learns them, engine iterations
# 1 and 3 and kernel ones 2 and 4, the first of each a warm-up. Each tensor is probed at its own size
# up to max_elements, in the order its hook fired; each tensor's medians are averaged over the 2 ranks
# (samples summed: 6 hooks x 1 measured iteration of each kind x 2 ranks), and the bookkeeping is the
# median over the tensors. After each iteration's step it writes every tensor's average back into
# its gradient, timed in the measured iterations 3 and 4 (4 samples over the 2 ranks).
def check_probe(f, trace):
    sizes = {x["name"]: x["elements"] for x in trace["tensors"]}
    assert (f["max_elements"], f["flushes"], f["kernels"]) == (4096, 12, 12), f
    assert "averaged over 2 ranks" in f["method"], f["method"]
    assert sorted(x["name"] for x in f["tensors"]) == sorted(sizes), f
    assert [x["name"] for x in f["tensors"]] == [x["name"] for x in trace["tensors"]], "not in backward order"
    assert all(x["elements"] == min(sizes[x["name"]], 4096) for x in f["tensors"]), f
    assert all(x["flush_us"] > 0 and x["kernel_us"] > 0 for x in f["tensors"]), f
    each = sorted(max(0.0, x["flush_us"] - x["kernel_us"]) for x in f["tensors"])
    assert abs(f["bookkeeping_us"] - (each[2] + each[3]) / 2) < 1e-9, f
    assert f["write_backs"] == 4 and f["write_back_us"] > 0, f
check_probe(t["runtime_flush"], t)
# The profile before training (1 + 4 iterations) runs one too.
check_probe(before["runtime_flush"], before)
PY
"$sf" validate "$tmp/interleaved/result.json" --set compression.profile=cpu-dev-2core >"$tmp/v.log" 2>&1 ||
  fail "validate an interleaved train result: $(cat "$tmp/v.log")"
grep -q "the same 6 collectives in the same order" "$tmp/v.log" || fail "validate interleaved: $(cat "$tmp/v.log")"
grep -q "optimizer: the trace's step and the runtime's write-back of the averages" "$tmp/v.log" ||
  fail "validate interleaved: no write-back named: $(cat "$tmp/v.log")"

train sparse topk-layerwise --set compression.density=0.1 || fail "train topk-layerwise: $(cat "$tmp/sparse.log")"
$py tests/train/check_grads.py "$tmp/sparse-grads" 2 topk 0.1 >"$tmp/check.log" 2>&1 ||
  fail "top-k averages: $(cat "$tmp/check.log")"
# The reference bites: the sparse run's averages are not the dense average.
$py tests/train/check_grads.py "$tmp/sparse-grads" 2 dense >/dev/null 2>&1 &&
  fail "the dense reference accepted sparse averages"
# Nor is a top-k reference at another density right.
$py tests/train/check_grads.py "$tmp/sparse-grads" 2 topk 0.2 >/dev/null 2>&1 &&
  fail "the top-k reference accepted the wrong density"

# DeAR and ByteScheduler apply iteration i's average stage by stage in
# iteration i + 1's forward: the same averages (the reference above), and on
# 2 ranks the same parameters at every forward as wfbp's step after backward
# (a sum of two floats has one rounding), so the same losses.
train dear dear || fail "train dear: $(cat "$tmp/dear.log")"
train bs bytescheduler --set scheme.partition_elements=1000 || fail "train bytescheduler: $(cat "$tmp/bs.log")"
for name in dear bs; do
  $py tests/train/check_grads.py "$tmp/$name-grads" 2 dense >"$tmp/check.log" 2>&1 ||
    fail "$name averages: $(cat "$tmp/check.log")"
  grep -q "dense: 5 iterations x 6 tensors x 2 ranks" "$tmp/check.log" || fail "$name check: $(cat "$tmp/check.log")"
  $py - "$tmp/dense/result.json" "$tmp/$name/result.json" <<'PY' || fail "$name losses differ from wfbp's"
import json, sys
dense, gated = (json.load(open(f))["training"]["loss_per_iteration"] for f in sys.argv[1:])
assert len(dense) == len(gated) == 5 and all(abs(a - b) <= 1e-6 * abs(a) for a, b in zip(dense, gated)), (dense, gated)
PY
done
$py - "$tmp/dear/result.json" "$tmp/bs/result.json" <<'PY' || fail "dear / bytescheduler result.json"
import json, sys
dear, bs = (json.load(open(f)) for f in sys.argv[1:])
assert [b["collective"] for b in dear["buckets"]].count("reduce_scatter") == len(dear["buckets"]) > 0, dear["buckets"]
# tasks.py's tensors (2,048, 64, 4,096, 64, 512, 8 elements) in partitions of at most 1,000: 3 + 1 + 5 + 1 + 1 + 1.
assert len(bs["buckets"]) == 12 and max(b["elements"] for b in bs["buckets"]) == 1000, bs["buckets"]
for r in (dear, bs):
    assert r["breakdown_s"]["optimizer"] > 0 and r["executor"]["name"] == "runtime-mpi (training)", r["breakdown_s"]
PY
# HiPress on a 1 Mb/s network: SeCoPa sends five of the six tensors through
# CaSync's ring (K = 2), whose averages check_grads.py recomputes.
train hipress hipress --set network.bandwidth_gbps=0.001 || fail "train hipress: $(cat "$tmp/hipress.log")"
$py tests/train/check_grads.py "$tmp/hipress-grads" 2 casync "$tmp/hipress" >"$tmp/check.log" 2>&1 ||
  fail "hipress averages: $(cat "$tmp/check.log")"
grep -q "casync: 5 iterations x 6 tensors x 2 ranks" "$tmp/check.log" || fail "hipress check: $(cat "$tmp/check.log")"
[[ "$(field "$tmp/hipress/result.json" "r['plan']['compressed_tensors'], r['plan']['secopa_partitions']")" == \
   "5 [2, 2, 2, 2, 2]" ]] || fail "hipress plan: $(field "$tmp/hipress/result.json" "r['plan']")"
$py tests/train/check_grads.py "$tmp/hipress-grads" 2 dense >/dev/null 2>&1 &&
  fail "the dense reference accepted CaSync's averages"

"$sf" validate "$tmp/dear/result.json" --set compression.profile=cpu-dev-2core >"$tmp/v.log" 2>&1 ||
  fail "validate a dear train result: $(cat "$tmp/v.log")"
grep -q "the same [0-9]* collectives in the same order" "$tmp/v.log" || fail "validate dear buckets: $(cat "$tmp/v.log")"

# The training run validated against the simulator on its own trace.
"$sf" validate "$tmp/sparse/result.json" --set compression.profile=cpu-dev-2core >"$tmp/v.log" 2>&1 ||
  fail "validate a train result: $(cat "$tmp/v.log")"
grep -q "the same 6 collectives in the same order" "$tmp/v.log" || fail "validate buckets: $(cat "$tmp/v.log")"

# Rank 1 stopped (SIGSTOP) mid-training: rank 0's collective times out after
# --timeout and names the stopped peer from its missing heartbeat
# (runtime/peer_watch.h, started by the C API's communicator); status 1, no
# result.json.
timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 "$sf" train --model "$task:classifier" \
  --data "$task:shards" --batch 16 --scheme wfbp --warmup 0 --iterations 1000000 --profile-iterations 1 \
  --timeout 2 --out "$tmp/stopped" >"$tmp/stopped.log" 2>&1 &
launcher=$!
victim=$(rank_pid sparsefuse_torch 1 "$launcher")  # rank 1's Python process
for _ in $(seq 1 120); do  # once it trains
  [[ -n $victim ]] && grep -q "^training " "$tmp/stopped.log" && break
  sleep 0.5
done
if [[ -z $victim ]]; then
  fail "stopped rank: rank 1 never started: $(cat "$tmp/stopped.log")"
  kill "$launcher"
else
  sleep 2
  kill -STOP "$victim"
  wait "$launcher"
  status=$?
  kill -KILL "$victim" 2>/dev/null
  [[ $status -eq 1 ]] || fail "stopped rank: status $status, expected 1: $(tail -20 "$tmp/stopped.log")"
  grep -Eq "sparsefuse train: rank 0: error: .* did not complete within 2 s .*Peers: rank 1 \(pid $victim\) is not running: no heartbeat for [0-9.]+ s \(stopped, or its machine froze\)" \
    "$tmp/stopped.log" || fail "stopped rank: no message naming rank 1: $(tail -20 "$tmp/stopped.log")"
  [[ ! -e "$tmp/stopped/result.json" ]] || fail "stopped rank: a result.json was written"
fi

# Bad input: exit 2, one message, nothing written.
expect2() {
  local pattern=$1; shift
  timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 "$sf" train --model "$task:classifier" \
    --data "$task:shards" --batch 16 --warmup 0 --iterations 1 --profile-iterations 1 "$@" >"$tmp/bad.log" 2>&1
  local status=$?
  [[ $status -eq 2 ]] || fail "train $* exited $status, expected 2: $(cat "$tmp/bad.log")"
  grep -qF -- "$pattern" "$tmp/bad.log" || fail "train $*: expected '$pattern' in: $(cat "$tmp/bad.log")"
}
expect2 "at /scheme: runtime-mpi cannot run preset \"oktopk\": Ok-Topk with exact_every = 0" --scheme oktopk \
  --set scheme.exact_every=0 --out "$tmp/bad1"
[[ -e "$tmp/bad1/result.json" ]] && fail "a refused run wrote result.json"
expect2 "--trace $tmp/none.json: no such file" --scheme wfbp --trace "$tmp/none.json" --out "$tmp/bad2"
expect2 "--iterations: expected an integer >= 1, got 0" --scheme wfbp --iterations 0 --out "$tmp/bad3"
expect2 "argument --profile: invalid choice: 'sideways' (choose from 'before', 'interleaved')" --scheme wfbp --profile sideways --out "$tmp/bad4"
# --set follows simulate's rules (the runtime applies it): the same message for the same mistake.
expect2 "--set iterations.x=1: \"iterations\" is not an object, cannot set \"x\" in it" --scheme wfbp \
  --set iterations.x=1 --out "$tmp/bad4"
expect2 "--set no-equals: expected KEY=VALUE" --scheme wfbp --set no-equals --out "$tmp/bad5"
finish
