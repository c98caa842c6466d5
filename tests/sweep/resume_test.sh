#!/usr/bin/env bash
# Acceptance: a sweep killed with SIGKILL mid-run and then rerun with the same
# arguments produces a results.csv byte-identical to an uninterrupted sweep's,
# re-simulating only the points that were not finished.
set -uo pipefail
source "${TEST_SRCDIR}/sparsefuse/tests/sweep/common.sh"

seeds=$(seq -s, 1 20)
# 2 schemes x 3 worker counts x 20 seeds = 120 points: a few seconds at -j 2.
args=(sweep "$scenario" --schemes wfbp,horovod --grid workers=256,512,1024 --grid "seed=$seeds"
      --set iterations=30 -j 2)
total=120

"$sf" "${args[@]}" --out "$tmp/whole" >"$tmp/whole.out" 2>"$tmp/whole.err" || fail "uninterrupted sweep failed: $(cat "$tmp/whole.err")"
grep -q "$total simulated" "$tmp/whole.out" || fail "uninterrupted sweep: $(cat "$tmp/whole.out")"
[[ $(wc -l <"$tmp/whole/results.csv") -eq $((total + 1)) ]] || fail "results.csv should have $((total + 1)) lines"
grep -q ',ok$' "$tmp/whole/results.csv" || fail "no ok rows"
if grep -v ',ok$' "$tmp/whole/results.csv" | tail -n +2 | grep -q .; then fail "rows not ok"; fi
# Not a TTY: progress is one line per ~10 %, so logs stay short.
[[ $(wc -l <"$tmp/whole.err") -le 11 ]] || fail "progress printed $(wc -l <"$tmp/whole.err") lines"

count_points() { find "$tmp/killed/points" -name result.json 2>/dev/null | wc -l; }
"$sf" "${args[@]}" --out "$tmp/killed" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 3000); do
  [[ $(count_points) -ge 3 ]] && break
  sleep 0.01
done
kill -9 "$pid"
wait "$pid" 2>/dev/null
done_before=$(count_points)
echo "killed after $done_before of $total points"
[[ $done_before -ge 3 ]] || fail "no points finished before the kill"
[[ $done_before -lt $total ]] || fail "the sweep finished before it was killed; enlarge the grid"
[[ ! -e "$tmp/killed/results.csv" ]] || fail "a killed sweep left a results.csv"

"$sf" "${args[@]}" --out "$tmp/killed" >"$tmp/resumed.out" 2>"$tmp/resumed.err" || fail "resumed sweep failed: $(cat "$tmp/resumed.err")"
grep -q "$((total - done_before)) simulated, $done_before already done, 0 failed" "$tmp/resumed.out" ||
  fail "resumed sweep should simulate only the rest: $(cat "$tmp/resumed.out")"
cmp "$tmp/whole/results.csv" "$tmp/killed/results.csv" || fail "resumed results.csv differs from the uninterrupted one"
cmp "$tmp/whole/sweep.json" "$tmp/killed/sweep.json" || fail "sweep.json differs"
leftovers=$(find "$tmp/killed/points" -type f ! -name result.json | wc -l)
[[ $leftovers -eq 0 ]] || fail "temporary files left behind: $(find "$tmp/killed/points" -type f ! -name result.json)"

# A third run has nothing to do and rewrites the same results.csv.
"$sf" "${args[@]}" --out "$tmp/killed" >"$tmp/third.out" 2>/dev/null || fail "third run failed"
grep -q "0 simulated, $total already done" "$tmp/third.out" || fail "third run: $(cat "$tmp/third.out")"
cmp "$tmp/whole/results.csv" "$tmp/killed/results.csv" || fail "third run changed results.csv"

finish
