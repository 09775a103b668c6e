#!/bin/sh
# i386-host.sh CC QEMU - can this host's kernel exec i386 programs?  The one
# answer every test that runs i686 programs goes by: the shell tests run
# this script, the C tests too (tests/i386_host.c).
#
# It builds a static i386 program that exits 0 with CC (the i686 cross
# compiler) and execs it.  Where the kernel has no IA-32 emulation (a PVM
# guest's, or one built without CONFIG_IA32_EMULATION) exec fails with
# ENOEXEC: the shell reports "Exec format error", status 126.  Then the
# program is run under QEMU (qemu-i386, from Debian's qemu-user), as the
# tests run aarch64 programs under qemu-aarch64.  It prints one line:
#
#   native          the kernel ran it: i686 programs run natively
#   qemu: WHY       the kernel refused it, QEMU ran it: i686 programs run
#                   under QEMU, which writes their cores itself; ptrace
#                   sees qemu, not the program, so live tests cannot run
#   noexec: WHY     the kernel refused it, and QEMU is missing or failed
#   error: WHY      the probe could not be built or failed otherwise
#
# and exits 0 (2 for a usage error).  A kernel that hands i386 programs to
# qemu-i386 through binfmt_misc runs them, but not natively: "qemu" too.

if [ $# -ne 2 ]; then
	echo "usage: i386-host.sh CC QEMU" >&2
	exit 2
fi
cc=$1 qemu=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/i386-host.XXXXXX") || { echo "error: mktemp failed"; exit 0; }
trap 'rm -rf "$dir"' 0 1 2 15

command -v "$cc" >/dev/null 2>&1 || { echo "error: no $cc"; exit 0; }
printf 'int main(void) { return 0; }\n' >"$dir/probe.c"
if ! "$cc" -static -o "$dir/probe" "$dir/probe.c" >"$dir/build.log" 2>&1; then
	echo "error: $cc cannot build a static program: $(head -c 300 "$dir/build.log" | tr '\n' ' ')"
	exit 0
fi

# Run it under qemu: "qemu: WHY" if that works, "noexec: WHY" if not.
under_qemu() {
	if ! command -v "$qemu" >/dev/null 2>&1; then
		echo "noexec: $1, and there is no $qemu"
	elif "$qemu" "$dir/probe" >"$dir/qemu.log" 2>&1; then
		echo "qemu: $1: i686 programs run under $qemu"
	else
		echo "noexec: $1, and $qemu cannot run it either: $(head -c 300 "$dir/qemu.log" | tr '\n' ' ')"
	fi
}

out=$(LC_ALL=C sh -c 'exec "$0"' "$dir/probe" 2>&1)
status=$?
if [ $status -eq 0 ]; then
	for f in /proc/sys/fs/binfmt_misc/*; do
		[ -f "$f" ] && grep -q '^enabled' "$f" 2>/dev/null &&
			grep -q '^interpreter .*qemu-i386' "$f" 2>/dev/null &&
			{ under_qemu "the kernel hands i386 programs to qemu-i386 ($f)"; exit 0; }
	done
	echo native
elif [ $status -eq 126 ] && echo "$out" | grep -q 'Exec format error'; then
	under_qemu "the kernel cannot exec i386 programs (ENOEXEC: Exec format error)"
else
	echo "error: the i386 probe exited with status $status: $(echo "$out" | head -c 300 | tr '\n' ' ')"
fi
exit 0
