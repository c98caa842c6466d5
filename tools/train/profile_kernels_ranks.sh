#!/usr/bin/env bash
# Measures the compression kernels as P processes at once, every point timed
# by all of them together (`profile-kernels --processes P`: a barrier before
# each), so that each kernel meets the load it meets in a P-rank run on this
# machine, where the ranks compress the same tensor at about the same time.
# Keeps the first process's profile as OUT (the others go to OUT.rankR.json,
# kept for comparison) with a provenance note saying how it was measured.
# Run it right before the training runs it is meant to simulate: on a shared
# VM the same kernels ran 20-50 % apart a day apart, and a profile from
# another machine says nothing about this one.
#
#   tools/train/profile_kernels_ranks.sh SPARSEFUSE OUT P [profile-kernels options]
#
# e.g. tools/train/profile_kernels_ranks.sh bazel-bin/tools/cli/sparsefuse /tmp/k.json 2 --max-elements 10000000
# then validate with --set compression.profile=/tmp/k.json. Exit status:
# profile-kernels' (2 for a bad option), 2 for a bad P.
set -uo pipefail
if (($# < 3)); then
  echo "usage: $0 SPARSEFUSE OUT P [profile-kernels options]" >&2
  exit 2
fi
sf=$1 out=$2 ranks=$3
shift 3
if ! [[ $ranks =~ ^[1-9][0-9]*$ ]]; then
  echo "$0: P: expected a positive integer, got \"$ranks\"" >&2
  exit 2
fi
"$sf" profile-kernels --processes "$ranks" "$@" --out "$out" >"$out.log" 2>&1
status=$?
if ((status != 0)); then
  echo "profile-kernels failed (exit $status): see $out.log" >&2
  tail -3 "$out.log" >&2
  exit $status
fi
note="measured as $ranks \`sparsefuse profile-kernels $*\` processes at once, every point timed by all of them together (--processes $ranks; tools/train/profile_kernels_ranks.sh); this file is the first process's; $(date -u '+%Y-%m-%d %H:%M UTC')"
/usr/bin/python3 - "$out" "$note" <<'PY'
import json, os, sys
path, note = sys.argv[1], sys.argv[2]
with open(path) as f:
    profile = json.load(f)
profile["provenance"]["note"] = note
with open(path + ".tmp", "w") as f:
    json.dump(profile, f, indent=2)
    f.write("\n")
os.replace(path + ".tmp", path)
PY
echo "wrote $out ($note)"
