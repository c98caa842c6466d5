#!/usr/bin/env bash
# Hand-checked cases of sparsefuse_profile's statistics, ordering, CUDA clock and synthetic batches.
cd "${TEST_SRCDIR:?run under bazel test}/sparsefuse" || exit 1
exec /usr/bin/python3 tests/profile_model/check_units.py tools/profile_model
