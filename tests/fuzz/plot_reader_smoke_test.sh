#!/usr/bin/env bash
# The results directories that once broke the plot package's reader, then 300
# mutated ones: only InputProblem may come out (plot_reader_fuzz.py).
set -euo pipefail
cd "${TEST_SRCDIR}/sparsefuse"
SPARSEFUSE_FUZZ_FINDINGS="$TEST_TMPDIR" /usr/bin/python3 tests/fuzz/plot_reader_fuzz.py --runs 300 \
  $(for d in tests/fuzz/regressions/plot_reader/*/; do echo --replay "$d"; done) \
  tests/fuzz/seeds/result/*.json tests/fuzz/seeds/plot_reader/*.json
