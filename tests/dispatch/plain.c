/*
 * plain.c - C functions without a personality routine (check_dispatch):
 * gcc gives them a CIE without 'P'.
 */
void pers_callee(int *counter);
int plain_function(int *counter);

void pers_callee(int *counter)
{
	__asm__ volatile("" : : "r"(counter) : "memory");
	++*counter;
}

int plain_function(int *counter)
{
	pers_callee(counter);
	return *counter + 1;
}
