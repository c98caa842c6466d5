#!/usr/bin/env bash
# tools/function_lengths on a hand-made file whose function lengths are known.
set -uo pipefail
cd "${TEST_SRCDIR}/sparsefuse" || exit 1
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
mkdir -p "$tmp/src"
cat > "$tmp/src/sample.cc" <<'CC'
namespace a {
namespace {
int three(int x) {
  return x;
}
}  // namespace
struct S {
  S(int v) : v_{v}, w_(2) {
    if (v) { w_ = 3; }
    auto f = [](int y) { return y + 1; };
    w_ = f(w_);
  }
  int get() const override { return v_; }
  int v_, w_;
};
const char* text = "not { a function ( ) {";
int table[] = {1, 2, 3};
int S_long(int n)
{
  // a comment with { braces }
  int s = 0;
  for (int i = 0; i < n; ++i) {
    s += i;
  }
  return s;
}
}  // namespace a
CC
out=$(/usr/bin/python3 tools/function_lengths --top 10 "$tmp/src")
echo "$out"
failures=0
expect() { grep -qF -- "$1" <<<"$out" || { echo "FAIL: missing '$1'"; failures=$((failures + 1)); }; }
expect "    5  S  $tmp/src/sample.cc:8"
expect "    9  S_long  $tmp/src/sample.cc:18"
expect "    3  three  $tmp/src/sample.cc:3"
expect "    1  get  $tmp/src/sample.cc:13"
[[ $(grep -c "^ *[0-9].*sample.cc" <<<"$out") -eq 4 ]] || { echo "FAIL: expected exactly 4 functions"; failures=$((failures + 1)); }
/usr/bin/python3 tools/function_lengths --max 8 "$tmp/src" >/dev/null && { echo "FAIL: --max 8 passed"; failures=$((failures + 1)); }
/usr/bin/python3 tools/function_lengths --max 9 "$tmp/src" >/dev/null || { echo "FAIL: --max 9 failed"; failures=$((failures + 1)); }
[[ $failures -eq 0 ]] && echo "all checks passed"
exit $failures
