#!/bin/sh
# Build everything and run every test (make check), the same tests under
# ASan and UBSan and the concurrency stress under TSan, then the
# warning-free build with clang, cppcheck, and make distcheck.  Installs the Debian
# packages it needs when they are missing.
set -eu
cd "$(dirname "$0")"
. ./scripts/deps.sh
sw_install_deps
sw_build
(cd build && make -j"$(nproc)" check) || { tail -n 100 build/test-suite.log 2>/dev/null; exit 1; }
sw_asan_check
sw_tsan_stress
sw_clang_build
sw_cppcheck
# The heavy real-program tests (SW_SKIP_HEAVY) ran once, in the plain check.
(cd build && SW_SKIP_HEAVY=1 make -j"$(nproc)" distcheck)
echo "run-tests: all passed"
