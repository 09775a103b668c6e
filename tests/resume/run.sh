#!/bin/sh
# run.sh ARCH - sw_context_resume on real i686 or aarch64 code; the
# tests/resume-ARCH.test scripts call it (the host's own run is the
# tests/resume/resume-test program).
#
# tests/resume/resume_test.c is cross-built statically with the part of the
# library it needs (lib/base, lib/arch and lib/target's portable core, as
# `make check` lists them in tests/resume.env) and run under qemu-user:
# aarch64 under qemu-aarch64, i686 natively or under qemu-i386 where the
# kernel cannot exec i386 programs (tests/i386-host.sh).  It prints
# "<arch> resume: N passed, M failed" and exits 0 only when nothing failed.
#
# Skips (77) only where a cross compiler or qemu is missing; under CI=true
# that fails instead (CI installs them).  Its files stay in
# tests/resume-ARCH.d/.

arch=$1
: "${top_srcdir:=.}" "${top_builddir:=.}"
env_file="$top_builddir/tests/resume.env"
[ -f "$env_file" ] || { echo "resume-$arch: $env_file is missing (run make check)"; exit 99; }
. "$env_file"

missing() {
	if [ "${CI:-}" = true ]; then
		echo "resume-$arch: $1; CI must run this test"
		exit 1
	fi
	echo "resume-$arch: $1; skipped"
	exit 77
}

case "$arch" in
i686) cc=$CROSS_CC_I686 run= ;;
aarch64) cc=$CROSS_CC_AARCH64 run="$QEMU_AARCH64 -cpu max" ;;
*) echo "resume: unknown arch '$arch'"; exit 99 ;;
esac
command -v "$cc" >/dev/null 2>&1 || missing "no $cc"

work="$top_builddir/tests/resume-$arch.d"
rm -rf "$work" && mkdir -p "$work" || exit 99
bin="$work/resume-test"
srcs=""
for f in $RESUME_SOURCES tests/resume/resume_test.c; do
	srcs="$srcs $top_srcdir/$f"
done

echo "resume-$arch: $cc -static ..."
# shellcheck disable=SC2086 # word splitting of the flag and file lists is meant
if ! "$cc" -static -std=gnu11 -O1 -g $RESUME_CFLAGS -DSW_BUILDING_LIBRARY \
	-I"$top_builddir" -I"$top_srcdir/include" -I"$top_srcdir/lib/base" \
	-I"$top_srcdir/lib/arch" -I"$top_srcdir/lib/target" -o "$bin" $srcs; then
	echo "resume-$arch: the cross build failed"
	exit 1
fi

if [ "$arch" = i686 ]; then
	i386=$(sh "$top_srcdir/tests/i386-host.sh" "$cc" "$QEMU_I386")
	case $i386 in
	native) ;;
	qemu:*) echo "resume-i686: ${i386#qemu: }"; run=$QEMU_I386 ;;
	noexec:*) missing "${i386#noexec: }" ;;
	*) echo "resume-i686: ${i386#error: }"; exit 99 ;;
	esac
else
	command -v "$QEMU_AARCH64" >/dev/null 2>&1 || missing "no $QEMU_AARCH64"
fi

# shellcheck disable=SC2086
$run "$bin" >"$work/out" 2>&1
status=$?
cat "$work/out"
if [ $status -ne 0 ] && ! grep -q "resume: .* passed, .* failed" "$work/out"; then
	echo "resume-$arch: $bin ended with status $status before its summary"
	exit 1
fi
[ $status -eq 0 ] && rm -rf "$work"
exit $status
