#!/usr/bin/env bash
# `mpirun -np 2 sparsefuse profile-collectives` writes a calibrated collective
# table: every size from 1 KiB to 64 KiB for allreduce, allgather and
# reduce-scatter at 2 ranks, positive times, provenance. (Times are not
# checked for growing with size: on a shared 2-core machine they need not.)
# The simulator then runs on it as network.model="calibrated" and charges a
# bucket the measured time. Bad input ends the job with status 2 and one
# message naming the option, before anything is measured or written.
set -uo pipefail
source "${TEST_SRCDIR}/sparsefuse/tests/lib/common.sh"
source "${TEST_SRCDIR}/sparsefuse/tests/lib/mpi_env.sh"
mpi=(timeout 120 mpirun --allow-run-as-root --oversubscribe)

profile=$tmp/out/collectives-2.json
"${mpi[@]}" -np 2 "$sf" profile-collectives --max-bytes 65536 --warmup 2 --iterations 5 --out "$profile" \
  >"$tmp/profile.log" 2>&1
status=$?
[[ $status -eq 0 ]] || fail "profile-collectives exited $status: $(cat "$tmp/profile.log")"
[[ -f "$profile" ]] || { fail "no profile written: $(cat "$tmp/profile.log")"; finish; }
[[ $(grep -c "^wrote $profile" "$tmp/profile.log") -eq 1 ]] || fail "only rank 0 should write: $(cat "$tmp/profile.log")"
# The table: 3 collectives x 7 sizes, one row each.
[[ $(grep -cE "^ +[0-9]+ +[0-9]+ +(float|pair) +(allreduce|allgather|reduce_scatter) +[0-9.]+ " "$tmp/profile.log") -eq 21 ]] ||
  fail "expected 21 table rows: $(cat "$tmp/profile.log")"

sizes="[1024, 2048, 4096, 8192, 16384, 32768, 65536]"
for c in allreduce allgather reduce_scatter; do
  [[ "$(field "$profile" "[m['bytes'] for m in r['collectives']['$c']]")" == "$sizes" ]] ||
    fail "$c sizes: $(field "$profile" "r['collectives']['$c']")"
  [[ "$(field "$profile" "all(m['ranks'] == 2 and m['time_us'] > 0 for m in r['collectives']['$c'])")" == "True" ]] ||
    fail "$c: ranks or times: $(field "$profile" "r['collectives']['$c']")"
done
[[ "$(field "$profile" "sorted(r['collectives'])")" == "['allgather', 'allreduce', 'reduce_scatter']" ]] ||
  fail "collectives: $(field "$profile" "sorted(r['collectives'])")"
[[ "$(field "$profile" "r['format'], r['provenance']['kind'], r['provenance']['tool'], r['provenance']['transport'], r['provenance']['ranks']")" == \
   "sparsefuse-profile/1 measured sparsefuse profile-collectives mpi 2" ]] ||
  fail "format/provenance: $(field "$profile" "r['format'], r['provenance']")"
[[ "$(field "$profile" "r['provenance']['mpi_library'].startswith('Open MPI')")" == "True" ]] ||
  fail "mpi_library: $(field "$profile" "r['provenance']['mpi_library']")"

# The simulator reads it as a calibrated network; wfbp's first bucket (250
# floats = 1000 B, below the smallest size) costs the measured 1 KiB allreduce.
cat >"$tmp/tiny4.json" <<JSON
{"model": {"trace": "$PWD/tests/data/tiny4.json"}, "workers": 2, "iterations": 3, "warmup_iterations": 1,
 "scheme": "wfbp", "compression": {"density": 0.1}}
JSON
for scheme in wfbp topk-layerwise; do
  "$sf" simulate "$tmp/tiny4.json" --set workers=2 --set scheme=$scheme --set network.model=calibrated \
    --set network.profile="$profile" --out "$tmp/sim-$scheme" >"$tmp/sim-$scheme.log" 2>&1 ||
    { fail "simulate $scheme on the profile exited $?: $(cat "$tmp/sim-$scheme.log")"; continue; }
  [[ "$(field "$tmp/sim-$scheme/result.json" "r['network']['model']")" == "calibrated" ]] ||
    fail "$scheme: network $(field "$tmp/sim-$scheme/result.json" "r['network']")"
done
measured=$(field "$profile" "r['collectives']['allreduce'][0]['time_us'] * 1e-6")
[[ "$(field "$tmp/sim-wfbp/result.json" "abs(r['buckets'][0]['duration_s'] - $measured) <= 1e-9")" == "True" ]] ||
  fail "wfbp bucket 0 took $(field "$tmp/sim-wfbp/result.json" "r['buckets'][0]['duration_s']") s, measured $measured s"

# Bad input: exit 2, one message naming the option, nothing written.
"${mpi[@]}" -np 2 "$sf" profile-collectives --min-bytes 4096 --max-bytes 1024 --out "$tmp/bad.json" >"$tmp/bad.log" 2>&1
status=$?
[[ $status -eq 2 ]] || fail "min > max exited $status, expected 2: $(cat "$tmp/bad.log")"
[[ $(grep -c "error: --min-bytes: expected at most --max-bytes (1024), got 4096" "$tmp/bad.log") -eq 1 ]] ||
  fail "min > max: expected exactly one message: $(cat "$tmp/bad.log")"
[[ ! -e "$tmp/bad.json" ]] || fail "a refused run wrote its profile"
touch "$tmp/a-file"
"${mpi[@]}" -np 2 "$sf" profile-collectives --out "$tmp/a-file/p.json" >"$tmp/unwritable.log" 2>&1
status=$?
[[ $status -eq 2 ]] || fail "unwritable --out exited $status, expected 2: $(cat "$tmp/unwritable.log")"
grep -q "error: --out: cannot write $tmp/a-file/p.json: $tmp/a-file is not a directory" "$tmp/unwritable.log" ||
  fail "unwritable --out message: $(cat "$tmp/unwritable.log")"
grep -q "allreduce" "$tmp/unwritable.log" && fail "unwritable --out: measured before refusing: $(cat "$tmp/unwritable.log")"

finish
