#!/usr/bin/env bash
# `mpirun -np 2 sparsefuse run` against faults: a rank killed (SIGKILL) or
# stopped (SIGSTOP) mid-run, a rank much slower than the other (within and
# beyond --timeout), ranks given different schemes or scenarios, and a full
# disk when rank 0 writes result.json, a rank whose payload is shorter than
# the count it announced. Each ends within --timeout (plus
# mpirun's teardown) with a message naming the rank and what happened and a
# non-zero status, or completes where it should, and never leaves a
# result.json that looks complete but is not.
set -uo pipefail
source "${TEST_SRCDIR}/sparsefuse/tests/lib/common.sh"
source "${TEST_SRCDIR}/sparsefuse/tests/lib/mpi_env.sh"
shim=$PWD/tests/lib/libfault_fs.so
mpi_shim=$PWD/tests/lib/libfault_mpi.so
mpi=(timeout 120 mpirun --allow-run-as-root --oversubscribe)

cat >"$tmp/tiny4.json" <<JSON
{"model": {"trace": "$PWD/tests/data/tiny4.json"}, "workers": 2, "iterations": 3, "warmup_iterations": 1,
 "scheme": "ssfusion", "compression": {"density": 0.1}}
JSON
long=(--set iterations=1000000 --time-scale 100)

# expect LOG STATUS WANT PATTERN DESCRIPTION: status and message (grep -E).
expect() {
  [[ $2 -eq $3 ]] || fail "$5: status $2, expected $3: $(tail -20 "$1")"
  grep -Eq "$4" "$1" || fail "$5: no line matching '$4': $(tail -20 "$1")"
}

# A signal to rank 1 two seconds into a long run.
signal_rank1() {
  local signal=$1 name=$2
  shift 2
  "${mpi[@]}" -np 2 "$sf" run "$tmp/tiny4.json" "${long[@]}" --timeout 2 --out "$tmp/$name" "$@" >"$tmp/$name.log" 2>&1 &
  local launcher=$! victim
  victim=$(rank_pid "sparsefuse run" 1 "$launcher")
  [[ -n "$victim" ]] || { fail "$name: rank 1 never started: $(cat "$tmp/$name.log")"; kill "$launcher"; return; }
  sleep 2
  kill "-$signal" "$victim"
  wait "$launcher"
  status=$?
  kill -KILL "$victim" 2>/dev/null
  [[ ! -e "$tmp/$name/result.json" ]] || fail "$name: a result.json was written"
}

# Rank 1 killed: mpirun names the rank and the signal and ends the job.
signal_rank1 KILL killed
[[ $status -ne 0 && $status -ne 124 ]] || fail "rank 1 killed: status $status (124: the job hung until timeout(1) ended it)"
expect "$tmp/killed.log" 0 0 "process rank 1 with PID [0-9]+ on node .* exited on signal 9 \(Killed\)" "rank 1 killed"

# Rank 1 stopped: rank 0's collective times out after --timeout, names the
# stopped peer from its missing heartbeat (runtime/peer_watch.h) and ends the
# job with status 1.
signal_rank1 STOP stopped
expect "$tmp/stopped.log" $status 1 \
  "sparsefuse run: rank 0: error: .* did not complete within 2 s \(.*\): a peer died, hangs.*Peers: rank 1 \(pid [0-9]+\) is not running: no heartbeat for [0-9.]+ s \(stopped, or its machine froze\); its last job \(#[0-9]+, " \
  "rank 1 stopped"

# Rank 1 a thousand times slower than rank 0 (0.4 s of backward per
# iteration against 0.4 ms): the run completes, rank 0 waiting for it.
"${mpi[@]}" -np 1 "$sf" run "$tmp/tiny4.json" --time-scale 100 --timeout 30 --out "$tmp/slow" : \
  -np 1 "$sf" run "$tmp/tiny4.json" --time-scale 100000 --timeout 30 --out "$tmp/slow" >"$tmp/slow.log" 2>&1
expect "$tmp/slow.log" $? 0 "^wrote $tmp/slow/result.json" "a slow rank within --timeout"
# Beyond --timeout (4 s of backward per iteration, 1 s allowed): rank 0 says so.
"${mpi[@]}" -np 1 "$sf" run "$tmp/tiny4.json" --time-scale 100 --timeout 1 --out "$tmp/slower" : \
  -np 1 "$sf" run "$tmp/tiny4.json" --time-scale 1000000 --timeout 1 --out "$tmp/slower" >"$tmp/slower.log" 2>&1
expect "$tmp/slower.log" $? 1 \
  "sparsefuse run: rank 0: error: .* did not complete within 1 s.*Peers: rank 1 \(pid [0-9]+\) is alive (at job #[0-9]+ while this rank waits at job #[0-9]+|in the same job)" \
  "a slow rank beyond --timeout"
[[ ! -e "$tmp/slower/result.json" ]] || fail "a slow rank beyond --timeout: a result.json was written"

# Ranks given different schemes, or different scenario files: refused at
# start-up (exit 2) naming the rank, before any collective of the run.
"${mpi[@]}" -np 1 "$sf" run "$tmp/tiny4.json" --out "$tmp/schemes" : \
  -np 1 "$sf" run "$tmp/tiny4.json" --set scheme=wfbp --out "$tmp/schemes" >"$tmp/schemes.log" 2>&1
expect "$tmp/schemes.log" $? 2 \
  "sparsefuse: error: mpirun: the ranks were given different runs: rank 1 \(fingerprint [0-9a-f]{16}\) differs from rank 0 \([0-9a-f]{16}\)" \
  "different schemes"
[[ ! -e "$tmp/schemes" ]] || fail "different schemes: the output directory was created"
sed 's/"iterations": 3/"iterations": 4/' "$tmp/tiny4.json" >"$tmp/tiny4-other.json"
"${mpi[@]}" -np 1 "$sf" run "$tmp/tiny4.json" : -np 1 "$sf" run "$tmp/tiny4-other.json" >"$tmp/scenarios.log" 2>&1
expect "$tmp/scenarios.log" $? 2 "the ranks were given different runs: rank 1 .* differs from rank 0" "different scenarios"

# Rank 1 sends one pair fewer than the count it announced (its first
# allgather's values, through libfault_mpi.so): every rank sees its block
# disagree with its checksum; the run ends with status 1 naming rank 1, and
# writes nothing.
LD_PRELOAD=$mpi_shim FAULT_MPI_SHORT_RANK=1 \
  "${mpi[@]}" -x LD_PRELOAD -x FAULT_MPI_SHORT_RANK -np 2 "$sf" run "$tmp/tiny4.json" --timeout 10 --out "$tmp/short" \
  >"$tmp/short.log" 2>&1
expect "$tmp/short.log" $? 1 \
  "sparsefuse run: rank [01]: error: rank 1's pairs in flush #[0-9]+ of iteration 0 \(allgather of tensors \[[0-9]+, [0-9]+\)\) are not the [0-9]+ it announced \(checksum [0-9a-f]{16}\): its count and its payload disagree" \
  "a short payload"
[[ ! -e "$tmp/short/result.json" ]] || fail "a short payload: a result.json was written"

# The disk full when rank 0 writes result.json: status 1, the rank, the file
# and the reason; no result.json and no temporary left.
LD_PRELOAD=$shim FAULT_FS_MATCH="$tmp/full/" FAULT_FS_OPS=write \
  "${mpi[@]}" -x LD_PRELOAD -x FAULT_FS_MATCH -x FAULT_FS_OPS -np 2 "$sf" run "$tmp/tiny4.json" --out "$tmp/full" \
  >"$tmp/full.log" 2>&1
expect "$tmp/full.log" $? 1 \
  "sparsefuse run: rank 0: error: cannot write $tmp/full/result.json \(via result.json.tmp.[0-9]+\): No space left on device; nothing was written there" \
  "a full disk"
[[ -z $(ls -A "$tmp/full" 2>/dev/null) ]] || fail "a full disk: files left: $(ls -A "$tmp/full")"

finish
