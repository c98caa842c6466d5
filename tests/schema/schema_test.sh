#!/usr/bin/env bash
# Every shipped scenario, trace, compression profile and calibrated network table, and the
# result.json / sweep.json files the CLI writes here, validate against docs/schema/.
set -uo pipefail
root="${TEST_SRCDIR:?run under bazel test}/sparsefuse"
cd "$root" || exit 1
sf=tools/cli/sparsefuse
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

args=()
for f in scenarios/*.json scenarios/*/*.json; do args+=("scenario=$f"); done
for f in traces/*.json traces/measured/*.json tests/data/tiny3.json tests/data/tiny3-flush-probe.json tests/data/tiny3-modules.json tests/data/tiny4.json tests/data/fwd3.json tests/data/pair.json tests/data/mixed40.json; do args+=("trace=$f"); done
for f in profiles/cpu-dev-2core.json profiles/cpu-dev-2core-2procs.json profiles/cpu-xeon-2core-2procs-ws128m.json profiles/cpu-xeon-2core-2procs-cold.json profiles/cpu-xeon-2core-2procs-after.json profiles/cpu-xeon-2core-2procs-fresh.json profiles/cpu-xeon-2core-2procs-rows.json profiles/cpu-xeon-2core-2procs-sync.json profiles/cpu-xeon-2core-2procs-code.json profiles/cpu-xeon-2core-2procs-ef.json profiles/h100-80gb-hbm3.json profiles/h200-141gb-hbm3e.json profiles/h200-host-cpu-4procs.json tests/data/profile-unit.json tests/data/profile-unit-all.json tests/data/profile-unit-pack.json tests/data/profile-unit-cold.json tests/data/profile-unit-after-compute.json tests/data/profile-unit-bookkeeping.json tests/data/profile-unit-request.json tests/data/profile-unit-gpu-bookkeeping.json tests/data/profile-unit-adtopk-rows.json tests/data/profile-unit-adtopk-own.json; do
  args+=("compression-profile=$f")
done
for f in profiles/mpi-dev-2core-2ranks.json profiles/mpi-dev-2core-2ranks-ws128m.json tests/data/collectives-8ranks.json; do
  args+=("calibrated-network=$f")
done
# Every shipped JSON file is classified above (or is a bad-input fixture): a new one must be added.
for f in scenarios/*.json scenarios/*/*.json traces/*.json traces/measured/*.json profiles/*.json tests/data/*.json; do
  case "$f" in tests/data/bad_*) continue ;; esac
  [[ " ${args[*]} " == *"=$f "* ]] || fail "$f is shipped but not validated against a schema"
done

# Results the CLI writes: simulate, compare (a sparse scheme with buckets), a sweep, a topology.
"$sf" simulate tests/plot/small.json --out "$tmp/simulate" >/dev/null 2>&1 || fail "simulate"
"$sf" compare tests/plot/small.json --schemes horovod,ssfusion,oktopk --out "$tmp/compare" >/dev/null 2>&1 ||
  fail "compare"
"$sf" simulate tests/plot/small.json --set 'topology={"preset": "dgx-h200-ib400"}' --out "$tmp/topology" \
  >/dev/null 2>&1 || fail "simulate on a topology"
"$sf" sweep tests/plot/small.json --grid workers=4,8 --grid compression.density=0.01,0.1 --set scheme=ssfusion \
  --out "$tmp/sweep" -j 2 >/dev/null 2>&1 || fail "sweep"
found=0
while IFS= read -r f; do args+=("result=$f"); found=$((found + 1)); done < <(find "$tmp" -name result.json | sort)
((found >= 9)) || fail "expected at least 9 result.json files, found $found"
[[ -f "$tmp/sweep/sweep.json" ]] && args+=("sweep=$tmp/sweep/sweep.json") || fail "no sweep.json"

/usr/bin/python3 tests/schema/validate.py docs/schema "${args[@]}" || fail "schema validation"

# The schemas reject what the readers reject (a schema that accepts anything passes the above).
echo '{"model": "bert-base", "workers": 8, "scheme": "horovod", "netwrok": {}}' > "$tmp/typo.json"
echo '{"model": "bert-base", "workers": 8, "scheme": "horovod", "topology": {"fabric": {"kind": "torus"}}}' \
  > "$tmp/torus.json"
for f in typo torus; do
  "$sf" simulate "$tmp/$f.json" >/dev/null 2>&1 && fail "the CLI accepted $f.json"
  /usr/bin/python3 tests/schema/validate.py docs/schema "scenario=$tmp/$f.json" >/dev/null &&
    fail "the scenario schema accepted $f.json, which the CLI rejects"
done

if ((failures)); then echo "$failures check(s) failed"; exit 1; fi
echo "all schema checks passed"
