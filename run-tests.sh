#!/bin/sh
# Build everything and run every test (make check), the same tests under
# ASan and UBSan and the concurrency stress under TSan, then the
# warning-free build with clang, cppcheck, and make distcheck.  Installs the Debian
# packages it needs when they are missing.  Each stage prints how long it
# took, so that CI's time budget can be followed stage by stage.
set -eu
cd "$(dirname "$0")"
. ./scripts/deps.sh
sw_stage_start=$(date +%s)
sw_stage_done() {
	now=$(date +%s)
	echo "run-tests: $1 took $((now - sw_stage_start)) s"
	sw_stage_start=$now
}
sw_install_deps
sw_build
sw_stage_done "install and build"
(cd build && make -j"$(nproc)" check) || { sw_show_failures build; exit 1; }
sw_stage_done "make check"
sw_asan_check
sw_stage_done "ASan and UBSan check"
sw_tsan_stress
sw_stage_done "TSan stress"
sw_clang_build
sw_stage_done "clang build"
sw_cppcheck
sw_stage_done "cppcheck"
# The heavy real-program tests (SW_SKIP_HEAVY) ran once, in the plain check.
(cd build && SW_SKIP_HEAVY=1 make -j"$(nproc)" distcheck)
sw_stage_done "distcheck"
echo "run-tests: all passed"
