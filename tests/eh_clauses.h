/*
 * eh_clauses.h - a valid exception handling clause table for a method of
 * EH_CODE bytes whose funclets follow it (swu(5), EH section), shared by
 * check_swu_eh and fuzz_swu_decode: a catch and a filter on one try
 * inside a finally, a fault, a try inside the catch's funclet with its
 * own handler, and the duplicated clause CoreCLR's JIT reports for the
 * catch funclet pulled out of the finally's try (genReportEH's "D -> G").
 * Innermost first; every prefix is a valid table too.
 */
#ifndef SW_TESTS_EH_CLAUSES_H
#define SW_TESTS_EH_CLAUSES_H

#include <stackwalk.h>

#define EH_CODE 64

static const sw_eh_clause eh_nested[] = {
	{ SW_EH_CATCH, 0, 8, 20, 80, 112, 0, 0x02000001 },
	{ SW_EH_FILTER, 0, 8, 20, 128, 140, 120, 0 },
	{ SW_EH_FINALLY, 0, 4, 40, 144, 160, 0, 0 },
	{ SW_EH_FAULT, 0, 44, 60, 160, 176, 0, 0 },
	{ SW_EH_CATCH, 0, 84, 96, 176, 192, 0, 7 },
	{ SW_EH_FINALLY, SW_EH_DUPLICATED, 80, 112, 144, 160, 0, 0 },
};
#define EH_NESTED (sizeof eh_nested / sizeof eh_nested[0])

#endif /* SW_TESTS_EH_CLAUSES_H */
