#!/usr/bin/env bash
# Every seed model of sparsefuse_profile equals its analytic trace, tensor for tensor.
cd "${TEST_SRCDIR:?run under bazel test}/sparsefuse" || exit 1
exec /usr/bin/python3 tests/profile_model/check_inventories.py tools/profile_model traces
