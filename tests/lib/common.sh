# Shared by the CLI sh_tests: the binary, a scratch directory, failure
# counting, and a JSON field reader.
cd "${TEST_SRCDIR}/sparsefuse" || exit 1
sf=$PWD/tools/cli/sparsefuse
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

finish() {
  if [[ $failures -ne 0 ]]; then echo "$failures check(s) failed"; exit 1; fi
  echo "all checks passed"
}

# field FILE EXPR: evaluates a Python expression over the JSON document r.
field() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($2)" "$1"; }
