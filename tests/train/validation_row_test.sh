#!/usr/bin/env bash
# tools/train/validation_row.py --by-size: the per-bucket compression error by
# kind of bucket, hand-computed on a made-up validation and run; a bucket
# with nothing compressed counts nowhere; differing sequences give n/a.
set -uo pipefail
source "${TEST_SRCDIR}/sparsefuse/tests/lib/common.sh"
row=tools/train/validation_row.py
/usr/bin/python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
# (collective, elements, dense_elements, measured us, simulated us)
buckets = [("allgather", 200000, 0, 100, 110),  # large sparse: 10 %
           ("allgather", 64, 0, 4, 2),           # small sparse: 50 %
           ("allgather", 128, 128, 2, 1),        # dense as pairs: 50 %
           ("allreduce", 1000, 1000, 0, 0),      # nothing compressed
           ("allgather", 500000, 0, 200, 140)]   # large sparse: 30 %
v = {"same_buckets": True, "buckets": [
    {"index": i, "collective": c, "measured_compression_s": m * 1e-6, "simulated_compression_s": s * 1e-6}
    for i, (c, n, dense, m, s) in enumerate(buckets)]}
r = {"buckets": [{"collective": c, "elements": n, "dense_elements": dense} for c, n, dense, m, s in buckets]}
json.dump(v, open(f"{d}/validation.json", "w"))
json.dump(r, open(f"{d}/result.json", "w"))
v["same_buckets"] = False
json.dump(v, open(f"{d}/differ.json", "w"))
PY
out=$(/usr/bin/python3 "$row" --by-size "$tmp/validation.json" "$tmp/result.json" x)
[[ $out == "| x | 20.0% (2) | 50.0% (1) | 50.0% (1) |" ]] || fail "by size: $out"
out=$(/usr/bin/python3 "$row" --by-size "$tmp/differ.json" "$tmp/result.json" x)
[[ $out == "| x | n/a (sequences differ) | n/a | n/a |" ]] || fail "differing sequences: $out"
out=$(/usr/bin/python3 "$row" --by-size-header scheme | head -1)
[[ $out == "| scheme | per-bucket compression mean abs error (buckets): sparse, >= 1e5 elements |"* ]] ||
  fail "header: $out"
/usr/bin/python3 "$row" --by-size "$tmp/validation.json" 2>/dev/null && fail "a missing argument was accepted"
finish
