# Shared set-up for run-demo.sh, run-tests.sh and .ci/run (sourced, POSIX sh).
# Builds happen out of tree, in build/ (gcc) and build-clang/, so the
# source tree stays clean and both can be configured at once.

# Debian packages the build, the tests and the benchmarks need.  qemu-user
# gives qemu-aarch64, and qemu-i386 for the i686 tests where the kernel
# cannot exec i386 programs (tests/i386-host.sh).
SW_PACKAGES="build-essential autoconf automake libtool pkg-config check \
libcapstone-dev libelf-dev libdw-dev libunwind-dev clang cppcheck valgrind gdb gdb-multiarch \
gcc-i686-linux-gnu libc6-dev-i386-cross gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user \
libclang-rt-14-dev python3"
# perf record / inject --jit / report: tests/perf-jit.test
SW_PACKAGES="$SW_PACKAGES linux-perf"
# Outside authorities and inputs for the real-program tests and benchmarks:
# eu-stack (elfutils), lli and libLLVM (llvm), libc's separate debug files,
# Rust programs to name, go tool pprof to read profiles back.
SW_PACKAGES="$SW_PACKAGES elfutils llvm libc6-dbg rustc golang-go protobuf-compiler"
# Libraries for names (demangling, MiniDebugInfo, debuginfod) and pprof.
SW_PACKAGES="$SW_PACKAGES libiberty-dev liblzma-dev libdebuginfod-dev \
libprotobuf-c-dev protobuf-c-compiler zlib1g-dev"
# swprof's flame graph checked: well-formed (xmllint), its script run (node).
SW_PACKAGES="$SW_PACKAGES libxml2-utils nodejs"

sw_install_deps() {
	missing=""
	for p in $SW_PACKAGES; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
			missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	echo "installing Debian packages:$missing"
	if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
}

sw_configure_flags() {
	if [ "${CI:-}" = true ]; then echo --enable-werror; fi
}

# Configure (warnings as errors under CI) and build everything in build/.
sw_build() {
	[ -x configure ] || { mkdir -p m4 && autoreconf -fi; }
	mkdir -p build
	(cd build && { [ -f Makefile ] || ../configure -q $(sw_configure_flags); } &&
		make -j"$(nproc)")
}

# The same tree built with clang -Werror (library, tools and tests; not run).
sw_clang_build() {
	rm -rf build-clang && mkdir build-clang
	(cd build-clang && CC=clang ../configure -q --enable-werror &&
		make -j"$(nproc)" && make -j"$(nproc)" check TESTS=)
}

# Static analysis; any finding fails the run.
sw_cppcheck() {
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability \
		--inline-suppr --suppress=missingIncludeSystem \
		-I include -I lib/base -I lib/arch -I unwindinfo -I frames -I lib/codemap \
		-I lib/walk -I lib/synth -I lib/jit -I lib/target -I lib/native \
		lib frames unwindinfo examples
}

# After a failed make check in directory $1: each failing test's own log
# (test-suite.log lists every SKIP too, and its tail rarely holds the
# failure), printed last, where a truncated CI excerpt still shows it.
sw_show_failures() {
	grep -E '^(FAIL|ERROR): ' "$1/test-suite.log" 2>/dev/null | while read -r _ t; do
		echo "=== $1/$t.log (last 60 lines)"
		tail -n 60 "$1/$t.log" 2>/dev/null
	done
	grep -E '^# (TOTAL|PASS|SKIP|FAIL|ERROR):' "$1/test-suite.log" 2>/dev/null
}

# The whole make check again in build-asan/, built with ASan and UBSan
# (--enable-sanitizers): any report fails the test that made it.  The
# cross-built toy-JIT tests are static binaries for other targets and are
# built without sanitizers there too (they take SW_CFLAGS only).  Sanitized
# code runs 2-4 times slower: Check's per-test timeouts are stretched; core
# dumps stay enabled for the core-file tests (ASan disables them by default),
# and their victim program, a target the tests attach to and dump rather
# than code under test, is built plain: ASan's shadow mappings would fill
# its cores.  The tests in tests/heavy.list (skipped under
# SW_SKIP_HEAVY=1 by tests/run-test.sh) run once, in the plain check: CI
# stays within its time on 2 cores.
sw_asan_check() {
	mkdir -p build-asan
	(cd build-asan && { [ -f Makefile ] || ../configure -q --enable-sanitizers $(sw_configure_flags); } &&
		make -j"$(nproc)" &&
		rm -f tests/targets/victim tests/targets/victim-victim.o &&
		make tests/targets/victim CFLAGS="-g -O2" LDFLAGS= &&
		SW_SKIP_HEAVY=1 ASAN_OPTIONS=detect_leaks=1:disable_coredump=0 CK_TIMEOUT_MULTIPLIER=4 \
			make -j"$(nproc)" check) ||
		{ sw_show_failures build-asan; return 1; }
}

# The concurrency stress alone under ThreadSanitizer (--enable-tsan) in
# build-tsan/: any race report fails it.
sw_tsan_stress() {
	mkdir -p build-tsan
	(cd build-tsan && { [ -f Makefile ] || ../configure -q --enable-tsan $(sw_configure_flags); } &&
		make -j"$(nproc)" tests/check_stress tests/check_codetable &&
		TSAN_OPTIONS="halt_on_error=1 exitcode=66" STRESS_SECONDS=4 ./tests/check_stress &&
		TSAN_OPTIONS="halt_on_error=1 exitcode=66" CK_FORK=no ./tests/check_codetable)
}
