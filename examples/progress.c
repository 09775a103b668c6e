/*
 * progress.c - the progress line of the long-running tools (progress.h).
 */
#include <inttypes.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "progress.h"

/* Redraws at most five times a second: enough to see it move, little to print. */
#define PROGRESS_REDRAW_NS 200000000ull

void progress_init(struct progress *p, const char *prog, enum progress_mode mode, int quiet)
{
	memset(p, 0, sizeof *p);
	p->prog = prog;
	if (mode == PROGRESS_ON || (mode == PROGRESS_AUTO && !quiet && isatty(STDERR_FILENO)))
		p->f = stderr;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void progress_update(struct progress *p, const char *what, uint64_t done, uint64_t total)
{
	unsigned permille = total && done <= total ? (unsigned)(done * 1000 / total) : 1000;
	int len;
	uint64_t t;

	if (!p->f)
		return;
	/* Most items move nothing a reader would see: no clock, no output. */
	if (what == p->what && permille == p->permille && p->width)
		return;
	t = now_ns();
	/* A new stage is drawn at once; a line cleared for output waits its turn like a redraw. */
	if (what == p->what && t - p->last_ns < PROGRESS_REDRAW_NS)
		return;
	len = fprintf(p->f, "\r%s: %s %" PRIu64 "/%" PRIu64 " (%u%%)", p->prog, what, done, total,
	              permille / 10);
	/* Blank what a longer line drawn before left at the end. */
	if (len > 0 && (unsigned)len - 1 < p->width)
		fprintf(p->f, "%*s", (int)(p->width - ((unsigned)len - 1)), "");
	else if (len > 0)
		p->width = (unsigned)len - 1;
	fflush(p->f);
	p->what = what;
	p->permille = permille;
	p->last_ns = t;
}

void progress_clear(struct progress *p)
{
	if (!p->f || !p->width)
		return;
	/* Spaces, not a terminal's erase sequence: --progress may write to a file. */
	fprintf(p->f, "\r%*s\r", (int)p->width, "");
	fflush(p->f);
	p->width = 0;
}

void progress_end(struct progress *p)
{
	progress_clear(p);
	p->f = NULL;
}
