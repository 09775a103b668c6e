# Shared set-up for run-demo.sh, run-tests.sh and .ci/run (sourced, POSIX sh).
# Builds happen out of tree, in build/ (gcc) and build-clang/, so the
# source tree stays clean and both can be configured at once.

# Debian packages the build, the tests and the benchmarks need.
SW_PACKAGES="build-essential autoconf automake libtool pkg-config check \
libcapstone-dev libelf-dev libdw-dev libunwind-dev clang cppcheck valgrind gdb gdb-multiarch \
gcc-i686-linux-gnu libc6-dev-i386-cross gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user"

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
		-I include -I lib -I unwindinfo -I frames \
		lib frames unwindinfo examples
}
