/*
 * nocfi-ping.c - the part of tests/swstack/nocfi.c built as code with
 * neither CFI nor a frame pointer (-Os -fomit-frame-pointer
 * -fno-asynchronous-unwind-tables -fno-unwind-tables): a recursion that
 * keeps a value on its stack across each call, so every level has a frame
 * that only its instructions describe.
 */
int nocfi_stop(int n);
void nocfi_keep(volatile int *p);

int ping(int n)
{
	volatile int r;

	if (n == 0)
		return nocfi_stop(n) + 1;
	r = ping(n - 1);
	nocfi_keep(&r);
	return r + n;
}
