#!/bin/sh
# Bazel entry point: runs check_traces.py on the files in the runfiles tree.
set -eu
root="${TEST_SRCDIR:?run under bazel test}/sparsefuse"
exec /usr/bin/python3 "$root/tests/traces/check_traces.py" --root "$root"
