#!/usr/bin/env bash
# tools/train/profile_kernels_ranks.sh: P profile-kernels processes at once
# (--processes P), the first one's profile kept with a provenance note
# saying how it was measured; a bad P exits 2 before anything runs, a bad
# option exits 2 with no profile written.
set -uo pipefail
source "${TEST_SRCDIR}/sparsefuse/tests/lib/common.sh"
script=tools/train/profile_kernels_ranks.sh
"$script" "$sf" "$tmp/k.json" 2 --sizes 2000 --kernels topk --repetitions 1 >"$tmp/out.log" 2>&1 ||
  fail "profile_kernels_ranks.sh: $(cat "$tmp/out.log")"
[[ -f $tmp/k.json.rank1.json ]] || fail "the second process's profile is missing"
cmp -s <(/usr/bin/python3 -c 'import json,sys; print(sorted((p["elements"], p["density"]) for p in json.load(open(sys.argv[1]))["compression"]["topk"]))' "$tmp/k.json") \
       <(/usr/bin/python3 -c 'import json,sys; print(sorted((p["elements"], p["density"]) for p in json.load(open(sys.argv[1]))["compression"]["topk"]))' "$tmp/k.json.rank1.json") ||
  fail "the two processes measured different points"
/usr/bin/python3 - "$tmp/k.json" <<'PY' || fail "the kept profile"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["format"] == "sparsefuse-profile/1", p["format"]
assert len(p["compression"]["topk"]) == 4, p["compression"]
note = p["provenance"]["note"]
assert note.startswith("measured as 2 `sparsefuse profile-kernels --sizes 2000 --kernels topk"), note
assert "every point timed by all of them together (--processes 2" in note, note
PY
err=$("$script" "$sf" "$tmp/x.json" two 2>&1); status=$?
[[ $status -eq 2 && $err == *'P: expected a positive integer, got "two"'* ]] || fail "bad P: exit $status: $err"
[[ ! -e $tmp/x.json ]] || fail "a bad P wrote a profile"
err=$("$script" "$sf" "$tmp/y.json" 2 --working-set -1 2>&1); status=$?
[[ $status -eq 2 ]] || fail "a bad profile-kernels option: exit $status, expected 2: $err"
[[ ! -e $tmp/y.json && ! -e $tmp/y.json.rank1.json ]] || fail "a bad option wrote a profile"
finish
