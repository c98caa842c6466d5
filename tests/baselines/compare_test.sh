#!/usr/bin/env bash
# Every scheduling and compression baseline runs at 64
# and 1024 workers on BERT-large, GPT-2 large, ViT-L and ResNet-152 through
# `sparsefuse compare` (2 measured iterations each), and `sparsefuse presets`
# documents each of them.
set -uo pipefail
cd "${TEST_SRCDIR}/sparsefuse"
sf=tools/cli/sparsefuse
scenario=tests/baselines/scale.json
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
presets=dear,bytescheduler,hipress,espresso,cupcake,oktopk,spardl,gtopk,randomk-shared
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

listing=$("$sf" presets) || fail "sparsefuse presets exited $?"
for p in ${presets//,/ }; do
  line=$(grep -A1 "^$p " <<<"$listing")
  [[ -n "$line" ]] || fail "preset $p is not listed"
  grep -q "deviates:" <<<"$line" || fail "preset $p documents no simplification"
done

for model in bert-large gpt2-large vit-large resnet152; do
  for workers in 64 1024; do
    out="$tmp/$model-$workers"
    if ! "$sf" compare "$scenario" --schemes "ddp,$presets" --set model="$model" --set workers="$workers" \
         --out "$out" >"$out.log" 2>&1; then
      fail "compare $model at $workers workers: $(tail -3 "$out.log")"
      continue
    fi
    rows=$(tail -n +2 "$out/compare.csv" | wc -l)
    [[ $rows -eq 10 ]] || fail "$model/$workers: $rows rows in compare.csv, expected 10"
    # Every scheme: a positive, finite mean iteration time.
    bad=$(tail -n +2 "$out/compare.csv" | awk -F, '!($2 > 0 && $2 < 1e6) {print $1}')
    [[ -z "$bad" ]] || fail "$model/$workers: bad iteration time for $bad"
    echo "$model $workers: ok"
  done
done

if [[ $failures -gt 0 ]]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all baselines ran"
