#!/usr/bin/env bash
# Fails listing every function over 80 lines in sim/, policy/, runtime/ and tools/cli/.
cd "${TEST_SRCDIR}/sparsefuse" || exit 1
exec /usr/bin/python3 tools/function_lengths --max 80 --exclude-tests sim policy runtime tools/cli
