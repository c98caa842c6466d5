#!/usr/bin/env bash
# tools/train/validation_row.py --by-size: the row of the per-bucket
# compression error by kind of bucket, from what `sparsefuse validate` wrote
# (the arithmetic is tested in //sim:validation_test); a kind without a
# measured bucket says none; differing sequences give n/a.
set -uo pipefail
source "${TEST_SRCDIR}/sparsefuse/tests/lib/common.sh"
row=tools/train/validation_row.py
/usr/bin/python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
v = {"same_buckets": True, "compression_error_by_kind": [
    {"kind": ">= 1e5 elements", "mean_abs_error": 0.2, "buckets": 2},
    {"kind": "< 1e5 elements", "mean_abs_error": 0.5, "buckets": 1},
    {"kind": "sent dense as pairs", "mean_abs_error": None, "buckets": 0}]}
json.dump(v, open(f"{d}/validation.json", "w"))
v["same_buckets"] = False
json.dump(v, open(f"{d}/differ.json", "w"))
PY
out=$(/usr/bin/python3 "$row" --by-size "$tmp/validation.json" x)
[[ $out == "| x | 20.0% (2) | 50.0% (1) | none |" ]] || fail "by size: $out"
out=$(/usr/bin/python3 "$row" --by-size "$tmp/differ.json" x)
[[ $out == "| x | n/a (sequences differ) | n/a | n/a |" ]] || fail "differing sequences: $out"
out=$(/usr/bin/python3 "$row" --by-size-header scheme | head -1)
[[ $out == "| scheme | per-bucket compression mean abs error (buckets): >= 1e5 elements |"* ]] || fail "header: $out"
/usr/bin/python3 "$row" --by-size "$tmp/validation.json" 2>/dev/null && fail "a missing argument was accepted"
finish
