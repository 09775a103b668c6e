#!/bin/sh
# run-test.sh TEST [ARG...] - how make check runs every test (LOG_COMPILER).
#
# The ASan+UBSan check and make distcheck run the suite again, under
# SW_SKIP_HEAVY=1.  A test named in tests/heavy.list then exits 77 with a
# line saying so: it ran once, in the plain make check, and running it
# again proves nothing new (a real program under gdb or qemu, a cross
# build the sanitizers do not reach, a check of the source tree), while
# it would double CI's time.  Anything else runs, and the unit tests'
# randomized loops and address sweeps take a tenth of their rounds there
# (tests/rounds.h).
test=$1
if [ "${SW_SKIP_HEAVY:-}" = 1 ]; then
	name=${test##*/}
	name=${name%.test}
	if grep -qx "$name" "${top_srcdir:-.}/tests/heavy.list"; then
		echo "$name: in tests/heavy.list: run by the plain make check only"
		exit 77
	fi
fi
exec "$@"
