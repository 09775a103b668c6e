# cross-toyjit.sh - sourced by cross-toyjit-i686.test and -arm64.test with
# $arch set: cross-build the library's core, the toy JIT and its plain-C
# test driver (tests/cross_toyjit.c) statically for that architecture, run
# it (i686 natively, or under qemu-i386 where the kernel cannot exec i386
# programs, as tests/i386-host.sh finds; arm64 under qemu-aarch64) and show
# its results.
#
# What to build comes from tests/cross-toyjit.env, which `make check`
# writes from the Makefile's source lists.  Where a cross compiler or qemu
# is missing the test is skipped (77), except under CI=true, where it fails:
# CI installs them (scripts/deps.sh), so there these tests always run.

: "${top_srcdir:=.}" "${top_builddir:=.}"
env_file="$top_builddir/tests/cross-toyjit.env"
[ -f "$env_file" ] || { echo "cross-toyjit: $env_file is missing (run make check)"; exit 99; }
. "$env_file"

missing() {
	if [ "${CI:-}" = true ]; then
		echo "cross-toyjit ($arch): $1; CI must run this test"
		exit 1
	fi
	echo "cross-toyjit ($arch): $1; skipped"
	exit 77
}

case "$arch" in
i686)
	cc=$CROSS_CC_I686
	backend=$CROSS_TOYJIT_X86
	run="" ;;
arm64)
	cc=$CROSS_CC_AARCH64
	backend=$CROSS_TOYJIT_ARM64
	run="$QEMU_AARCH64 -cpu max" ;;
*)
	echo "cross-toyjit: unknown arch '$arch'"
	exit 99 ;;
esac

command -v "$cc" >/dev/null 2>&1 || missing "no $cc"
if [ -n "$run" ]; then
	command -v "${run%% *}" >/dev/null 2>&1 || missing "no ${run%% *}"
fi

bin="$top_builddir/tests/cross-toyjit-$arch"
srcs=""
for f in $CROSS_CORE_SOURCES $CROSS_TOYJIT_SOURCES $backend; do
	srcs="$srcs $top_srcdir/$f"
done

echo "cross-toyjit ($arch): $cc -static ..."
# shellcheck disable=SC2086 # word splitting of the flag and file lists is meant
if ! "$cc" -static -std=gnu11 -O1 -g $CROSS_CFLAGS -DSW_BUILDING_LIBRARY \
	-I"$top_builddir" -I"$top_srcdir/include" $CROSS_INCLUDES \
	-I"$top_srcdir/unwindinfo" -I"$top_srcdir/frames" -I"$top_srcdir/examples/toyjit" \
	-o "$bin" $srcs -lpthread; then
	echo "cross-toyjit ($arch): the cross build failed"
	exit 1
fi

# i686: natively, or under qemu-i386 where the kernel cannot exec i386 programs.
if [ "$arch" = i686 ]; then
	: "${QEMU_I386:=qemu-i386}"
	i386=$(sh "$top_srcdir/tests/i386-host.sh" "$cc" "$QEMU_I386")
	case $i386 in
	native) ;;
	qemu:*) echo "cross-toyjit (i686): ${i386#qemu: }"; run=$QEMU_I386 ;;
	noexec:*) missing "${i386#noexec: }" ;;
	*) echo "cross-toyjit (i686): ${i386#error: }"; exit 99 ;;
	esac
fi

# shellcheck disable=SC2086
$run "$bin" >"$bin.out" 2>&1
status=$?
cat "$bin.out"
# A qemu-aarch64 that cannot start is a missing tool too (i686's runner was just tried).
if [ $status -ne 0 ] && [ "$arch" = arm64 ] && ! grep -q "passed, .* failed" "$bin.out"; then
	missing "$bin did not run (status $status)"
fi
exit $status
