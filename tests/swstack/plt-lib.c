/*
 * plt-lib.c - the shared library tests/swstack-plt.test calls into, so
 * that the program's call goes through a lazy PLT stub.
 */
int plt_lib_add(int a, int b);

int plt_lib_add(int a, int b)
{
	return a + b;
}
