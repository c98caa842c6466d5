#!/usr/bin/env bash
# Settings are never dropped or ignored in silence: a scenario's scheme knobs
# survive `compare --schemes` and `--set scheme=` (or are reported when the
# chosen preset lacks them), a comparison can hold two variants of one preset,
# contradictory network settings exit 2, inert ones print a note.
set -uo pipefail
source tests/lib/common.sh

cat > "$tmp/knobs.json" <<'JSON'
{"model": "bert-base", "workers": 8, "iterations": 2, "warmup_iterations": 0,
 "scheme": {"preset": "ssfusion", "density": 0.001}}
JSON

# simulate and compare agree on the scenario's own scheme.
"$sf" simulate "$tmp/knobs.json" --out "$tmp/sim" >/dev/null || fail "simulate"
"$sf" compare "$tmp/knobs.json" --schemes 'ssfusion,ssfusion{"density":0.01},horovod' --out "$tmp/cmp" \
  >"$tmp/cmp.log" 2>"$tmp/cmp.err" || fail "compare with variants: $(cat "$tmp/cmp.err")"
sim_mean=$(field "$tmp/sim/result.json" 'r["iteration_time_s"]["mean"]')
cmp_mean=$(field "$tmp/cmp/ssfusion/result.json" 'r["iteration_time_s"]["mean"]')
[[ "$sim_mean" == "$cmp_mean" ]] || fail "compare dropped the scenario's density: $cmp_mean vs simulate $sim_mean"
[[ $(field "$tmp/cmp/ssfusion/result.json" 'r["scenario"]["scheme"]["density"]') == 0.001 ]] ||
  fail "ssfusion did not keep density 0.001"
variant="$tmp/cmp/ssfusion_density=0.01_/result.json"
[[ -f "$variant" ]] || fail "no result for the variant: $(ls "$tmp/cmp")"
[[ $(field "$variant" 'r["scenario"]["scheme"]["density"]') == 0.01 ]] || fail "the variant's own knob lost"
[[ "$(field "$variant" 'r["iteration_time_s"]["mean"]')" != "$cmp_mean" ]] || fail "the two variants gave one result"
grep -q '^ssfusion{density=0.01} ' "$tmp/cmp.log" || fail "variant not labelled: $(cat "$tmp/cmp.log")"
grep -q '^ssfusion{density=0.01},' "$tmp/cmp/compare.csv" || fail "variant not labelled in compare.csv"
grep -q 'note: horovod: has no knob "density"' "$tmp/cmp.err" || fail "dropped knob not reported: $(cat "$tmp/cmp.err")"
grep -q 'note: ssfusion: keeps the scenario.s scheme knob density = 0.001' "$tmp/cmp.err" || fail "kept knob not reported"

# --set scheme= keeps knobs too.
"$sf" simulate "$tmp/knobs.json" --set scheme=adtopk --out "$tmp/adtopk" >/dev/null 2>&1 || fail "simulate adtopk"
[[ $(field "$tmp/adtopk/result.json" 'r["scenario"]["scheme"]["density"]') == 0.001 ]] || fail "--set scheme dropped density"

# A malformed variant is bad input on the option that carried it.
err=$("$sf" compare "$tmp/knobs.json" --schemes 'ssfusion{density}' 2>&1 >/dev/null); status=$?
[[ $status -eq 2 && "$err" == *'--set scheme=ssfusion{density}'*'expected NAME or NAME{'* ]] ||
  fail "malformed variant: status $status: $err"

# The flat model with a topology is a contradiction; the flat model's keys
# with the NCCL model are inert and say so.
err=$("$sf" simulate "$tmp/knobs.json" --set 'topology={"preset":"ib-56g"}' --set network.model=flat 2>&1 >/dev/null)
status=$?
[[ $status -eq 2 && "$err" == *'at /network/model: the flat network model ignores the topology "ib-56g"'* ]] ||
  fail "flat + topology: status $status: $err"
err=$("$sf" simulate "$tmp/knobs.json" --set 'topology={"preset":"ib-56g"}' --set network.allreduce=tree \
  2>&1 >/dev/null) || fail "inert setting must not fail: $err"
[[ "$err" == *'note: '*'network.allreduce is read by the flat model only; the nccl model ignores it'* ]] ||
  fail "inert network.allreduce not reported: $err"
err=$("$sf" simulate "$tmp/knobs.json" 2>&1 >/dev/null)
[[ -z "$err" ]] || fail "a plain scenario printed notes: $err"

# "compute_cv": "trace" takes the measured spread of a measured trace, and is
# refused for a trace that has none.
echo '{"model": "measured/vgg16-cpu-b1", "workers": 2, "iterations": 2, "scheme": "wfbp",
 "variability": {"compute_cv": "trace"}}' > "$tmp/cv.json"
"$sf" simulate "$tmp/cv.json" --out "$tmp/cv" >/dev/null || fail "compute_cv trace"
[[ $(field "$tmp/cv/result.json" 'r["scenario"]["variability"]["compute_cv"] > 0') == True ]] || fail "measured cv not used"
err=$("$sf" simulate "$tmp/cv.json" --set model=bert-base 2>&1 >/dev/null); status=$?
[[ $status -eq 2 && "$err" == *'at /variability/compute_cv: "trace" needs a measured trace'* ]] ||
  fail "compute_cv trace on an analytic trace: $status: $err"

finish
