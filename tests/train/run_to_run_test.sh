#!/usr/bin/env bash
# tools/train/run_to_run.py: the run-to-run spread of per-bucket compression
# times, against figures computed by hand; bad inputs exit 2 naming the file
# and the field; --json holds the printed figures.
set -uo pipefail
source "${TEST_SRCDIR}/sparsefuse/tests/lib/common.sh"
tool=tools/train/run_to_run.py

# Fixtures: run directories holding result.json. Times are in ms (x 1e-3 s);
# only their ratios matter.
/usr/bin/python3 - "$tmp" <<'PY'
import json, os, sys
d = sys.argv[1]
def bucket(first, elements, dense, ms, collective="allgather"):
    return {"first_tensor": first, "tensors": 1, "elements": elements, "dense_elements": dense,
            "collective": collective, "compression_s": ms * 1e-3, "duration_s": 0.01}
def write(name, buckets):
    os.makedirs(f"{d}/{name}", exist_ok=True)
    json.dump({"format": "sparsefuse-result/1", "buckets": buckets}, open(f"{d}/{name}/result.json", "w"))
# Three runs, three buckets: 0 sent dense as pairs, 1 >= 1e5 elements (sparse),
# 2 < 1e5 elements, not measured in run b (left out everywhere).
three = {"a": (2, 4, 3), "b": (5, 2, 0), "c": (10, 4, 7)}
for run, (t0, t1, t2) in three.items():
    write(run, [bucket(0, 100, 100, t0), bucket(1, 200000, 0, t1), bucket(2, 5000, 100, t2)])
# Two runs: bucket 0 all-gathers 2e5 dense elements, which validation.cc's
# compression_kind counts as "sent dense as pairs" whatever its size.
for run, (t0, t1) in {"p": (2, 4), "q": (5, 2)}.items():
    write(run, [bucket(0, 200000, 200000, t0), bucket(1, 5000, 0, t1)])
# Dense allreduce: nothing compressed.
for run in ("d1", "d2"):
    write(run, [bucket(0, 1000, 1000, 0, "allreduce"), bucket(1, 300000, 300000, 0, "allreduce")])
# Bad inputs, each a copy of run c with one change.
c = json.load(open(f"{d}/c/result.json"))["buckets"]
write("differ", [c[0], dict(c[1], elements=100000), c[2]])
write("shorter", c[:2])
write("nocomp", [c[0], {k: v for k, v in c[1].items() if k != "compression_s"}, c[2]])
write("badcomp", [c[0], dict(c[1], compression_s="fast"), c[2]])
os.makedirs(f"{d}/invalid", exist_ok=True)
open(f"{d}/invalid/result.json", "w").write('{"buckets": [')
PY

# Hand computation, three runs (a, b, c), buckets 0 and 1 kept (bucket 2 is 0 in run b).
# Pair (x predicting y): |x_i - y_i| / y_i.
#   bucket 0 (a, b, c = 2, 5, 10): a>b 3/5=.6  b>a 3/2=1.5  a>c 8/10=.8  c>a 8/2=4  b>c 5/10=.5  c>b 5/5=1
#            sum 8.4 / 6 = 1.4 -> 140.0%
#   bucket 1 (a, b, c = 4, 2, 4):  a>b 2/2=1   b>a 2/4=.5   a>c 0       c>a 0      b>c 2/4=.5   c>b 2/2=1
#            sum 3 / 6 = .5 -> 50.0%
#   pairs, mean over the two buckets: a>b .8  b>a 1  a>c .4  c>a 2  b>c .5  c>b 1
#            mean 5.7 / 6 = .95 -> 95.0%, min 40.0%, max 200.0%
# Leave-one-out (the mean of the other two predicting run k):
#   bucket 0: a: (5+10)/2=7.5, 5.5/2=2.75  b: (2+10)/2=6, 1/5=.2  c: (2+5)/2=3.5, 6.5/10=.65  mean 3.6/3=1.2 -> 120.0%
#   bucket 1: a: (2+4)/2=3, 1/4=.25        b: (4+4)/2=4, 2/2=1    c: (4+2)/2=3, 1/4=.25      mean 1.5/3=.5 -> 50.0%
#   runs: a (2.75+.25)/2=1.5  b (.2+1)/2=.6  c (.65+.25)/2=.45: mean 2.55/3=.85 -> 85.0%, min 45.0%, max 150.0%
out=$(/usr/bin/python3 "$tool" "$tmp/a" "$tmp/b" "$tmp/c/result.json" --json "$tmp/three.json" 2>&1)
rc=$?
[[ $rc -eq 0 ]] || fail "three runs: exit $rc: $out"
line() { grep -F -- "$1" <<<"$out"; }
[[ $(line "buckets ") == *"2 of 3 with a measured compression in every run"* ]] || fail "three runs, buckets: $out"
[[ $(line "run-vs-run ") == *"mean |difference| 95.0% (pairs: 40.0%-200.0%)"* ]] || fail "three runs, run-vs-run: $out"
[[ $(line "leave-one-out ") == *"mean |difference| 85.0% (runs: 45.0%-150.0%)"* ]] || fail "three runs, leave-one-out: $out"
[[ $(line ">= 1e5 elements") == *"(1): run-vs-run 50.0%, leave-one-out 50.0%"* ]] || fail "three runs, >= 1e5: $out"
[[ $(line "< 1e5 elements") == *"(0): none"* ]] || fail "three runs, < 1e5 (bucket 2 left out): $out"
[[ $(line "sent dense as pairs") == *"(1): run-vs-run 140.0%, leave-one-out 120.0%"* ]] || fail "three runs, pairs: $out"
[[ $(line "runs ") == *"3 ($tmp/a/result.json, $tmp/b/result.json, $tmp/c/result.json)"* ]] || fail "three runs, paths: $out"

# --json: the same figures, as fractions; no temporary file left behind.
/usr/bin/python3 - "$tmp/three.json" <<'PY' || fail "--json figures"
import json, sys
j = json.load(open(sys.argv[1]))
near = lambda x, y: abs(x - y) < 1e-9
r, l = j["run_vs_run"], j["leave_one_out"]
kinds = {k["kind"]: k for k in j["by_kind"]}
checks = [j["compressed_buckets"] == 2, j["buckets"] == 3, len(j["runs"]) == 3,
          near(r["mean"], .95), near(r["min"], .4), near(r["max"], 2.0), len(r["pairs"]) == 6,
          near(l["mean"], .85), near(l["min"], .45), near(l["max"], 1.5), len(l["runs"]) == 3,
          near(kinds[">= 1e5 elements"]["run_vs_run"], .5), near(kinds[">= 1e5 elements"]["leave_one_out"], .5),
          kinds["< 1e5 elements"]["buckets"] == 0 and kinds["< 1e5 elements"]["run_vs_run"] is None,
          near(kinds["sent dense as pairs"]["run_vs_run"], 1.4),
          near(kinds["sent dense as pairs"]["leave_one_out"], 1.2)]
if not all(checks):
    print("FAIL: --json checks", checks, j)
    sys.exit(1)
PY
leftover=$(find "$tmp" -maxdepth 1 -name '.run_to_run.*')
[[ -z $leftover ]] || fail "--json left a temporary file: $leftover"

# Two runs (p, q): bucket 0 p>q |2-5|/5=.6, q>p 3/2=1.5; bucket 1 p>q |4-2|/2=1, q>p 2/4=.5.
#   pairs: p>q (.6+1)/2=.8, q>p (1.5+.5)/2=1: mean .9 -> 90.0% (80.0%-100.0%)
#   sent dense as pairs (bucket 0, 2e5 elements): (.6+1.5)/2=1.05 -> 105.0%; < 1e5 (bucket 1): (1+.5)/2=.75 -> 75.0%
out=$(/usr/bin/python3 "$tool" "$tmp/p" "$tmp/q" 2>&1)
rc=$?
[[ $rc -eq 0 ]] || fail "two runs: exit $rc: $out"
[[ $(line "run-vs-run ") == *"mean |difference| 90.0% (pairs: 80.0%-100.0%)"* ]] || fail "two runs, run-vs-run: $out"
[[ $(line "leave-one-out ") == *"needs 3 runs"* ]] || fail "two runs, leave-one-out: $out"
[[ $(line "sent dense as pairs") == *"(1): run-vs-run 105.0%, leave-one-out needs 3 runs"* ]] || fail "two runs, pairs: $out"
[[ $(line "< 1e5 elements") == *"(1): run-vs-run 75.0%"* ]] || fail "two runs, < 1e5: $out"
[[ $(line ">= 1e5 elements") == *"(0): none"* ]] || fail "two runs, >= 1e5: $out"

# Nothing compressed: says so, exit 0.
out=$(/usr/bin/python3 "$tool" "$tmp/d1" "$tmp/d2" 2>&1)
rc=$?
[[ $rc -eq 0 && $out == *"no bucket has a measured compression in every run"* ]] || fail "no bucket: exit $rc: $out"

# bad NAME WANT... ARGS: exit status 2, every WANT in the message, no traceback.
bad() {
  local name=$1; shift
  local -a wants=()
  while [[ $1 != -- ]]; do wants+=("$1"); shift; done
  shift
  local err rc
  err=$(/usr/bin/python3 "$tool" "$@" 2>&1 >/dev/null)
  rc=$?
  [[ $rc -eq 2 ]] || fail "$name: exit $rc, expected 2: $err"
  [[ $err != *Traceback* ]] || fail "$name: a traceback: $err"
  for w in "${wants[@]}"; do [[ $err == *"$w"* ]] || fail "$name: no '$w' in: $err"; done
}
bad "differing sequence" "$tmp/differ/result.json" "bucket 1" elements -- "$tmp/a" "$tmp/b" "$tmp/differ"
bad "fewer buckets" "$tmp/shorter/result.json" "bucket 2" buckets -- "$tmp/a" "$tmp/shorter"
bad "missing file" "$tmp/nowhere/result.json" "cannot read" -- "$tmp/a" "$tmp/nowhere/result.json"
bad "no compression_s" "$tmp/nocomp/result.json" "buckets[1].compression_s" missing "number" -- "$tmp/a" "$tmp/nocomp"
bad "compression_s not a number" "$tmp/badcomp/result.json" "buckets[1].compression_s" "number" -- "$tmp/a" "$tmp/badcomp"
bad "invalid JSON" "$tmp/invalid/result.json" "not valid JSON" -- "$tmp/a" "$tmp/invalid"
bad "one run" "usage" "at least 2 runs" -- "$tmp/a"
bad "unwritable --json" "$tmp/no/dir/out.json" "cannot write" -- "$tmp/a" "$tmp/b" --json "$tmp/no/dir/out.json"
[[ ! -e $tmp/no ]] || fail "unwritable --json created something"
finish
