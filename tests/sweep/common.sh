# Shared by the sweep sh_tests: tests/lib/common.sh and the sweep scenario.
source "${TEST_SRCDIR}/sparsefuse/tests/lib/common.sh"
scenario=$PWD/tests/sweep/bert-base.json
