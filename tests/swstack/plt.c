/*
 * plt.c - a program whose first call of plt_lib_add (plt-lib.c, a shared
 * library) goes through its lazy PLT stub, PLT0 and the dynamic linker's
 * resolver; tests/swstack-plt.test stops it at every instruction of that
 * path.  The call sits two frames below main, so that a walk that stops
 * at the stub loses frames a test can see.
 */
int plt_lib_add(int a, int b);
int plt_outer(int n);
int plt_inner(int n);

__attribute__((noinline)) int plt_inner(int n)
{
	return plt_lib_add(n, 1) + 1;
}

__attribute__((noinline)) int plt_outer(int n)
{
	return plt_inner(n + 1) + 1;
}

int main(void)
{
	return plt_outer(0) == 4 ? 0 : 1;
}
