/*
 * rounds.h - how many rounds a randomized check runs.
 *
 * The plain make check runs each at its full count.  The ASan+UBSan check
 * and make distcheck run the suite again under SW_SKIP_HEAVY=1
 * (tests/run-test.sh), where a tenth of the rounds keeps CI within its
 * time on 2 cores: under the sanitizers these loops ran 17 to 38 times
 * slower than plain (each round allocates, and every allocation is
 * poisoned and checked), and a bad read shows in the first rounds as
 * well as in the last.  The fuzz targets (tests/fuzz/) go further still.
 */
#ifndef SW_TEST_ROUNDS_H
#define SW_TEST_ROUNDS_H

#include <stdlib.h>
#include <string.h>

/* Is this the fast run (the sanitized check, distcheck)? */
static inline int test_fast(void)
{
	const char *fast = getenv("SW_SKIP_HEAVY");

	return fast && strcmp(fast, "1") == 0;
}

/* `full` rounds, or a tenth of them (at least one) in the fast run. */
static inline unsigned test_rounds(unsigned full)
{
	if (test_fast())
		return full >= 10 ? full / 10 : 1;
	return full;
}

/*
 * The step of a sweep over every address: 1, or 7 in the fast run (an odd
 * step, so that the addresses checked fall at every offset of the
 * instructions).
 */
static inline unsigned test_stride(void)
{
	return test_fast() ? 7 : 1;
}

#endif /* SW_TEST_ROUNDS_H */
