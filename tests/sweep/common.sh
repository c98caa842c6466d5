# Shared by the sweep sh_tests: paths, a scratch directory, failure counting.
cd "${TEST_SRCDIR}/sparsefuse" || exit 1
sf=$PWD/tools/cli/sparsefuse
scenario=$PWD/tests/sweep/bert-base.json
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

finish() {
  if [[ $failures -ne 0 ]]; then echo "$failures check(s) failed"; exit 1; fi
  echo "all checks passed"
}
