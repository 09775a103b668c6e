/*
 * personality.cpp - C++ functions whose frames have work for the
 * personality routine (check_dispatch): a destructor to run, a catch.
 * g++ gives them a CIE with 'P' and an LSDA.  What they call is in
 * plain.c, out of the compiler's sight, so it may throw.
 */
extern "C" void pers_callee(int *counter);

struct pers_guard {
	int *counter;
	~pers_guard() { ++*counter; }
};

extern "C" int pers_with_cleanup(int *counter)
{
	pers_guard g{ counter };

	pers_callee(counter);
	return *counter;
}

extern "C" int pers_with_catch(int *counter)
{
	try {
		pers_callee(counter);
	} catch (int e) {
		return e;
	}
	return 0;
}
