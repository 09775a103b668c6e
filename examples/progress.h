/*
 * progress.h - a progress line on standard error for work that takes
 * seconds (swimport, swverify on a large library), drawn as GNU tools
 * draw theirs: only when standard error is a terminal or the user asked
 * for it (--progress), one line rewritten in place with \r, redrawn at
 * most a few times a second, and cleared when the work ends, so that
 * nothing of it stays on the screen or mixes with the tool's output.
 */
#ifndef PROGRESS_H
#define PROGRESS_H

#include <stdint.h>
#include <stdio.h>

/* What the options asked: --progress, --no-progress, or neither. */
enum progress_mode { PROGRESS_AUTO, PROGRESS_ON, PROGRESS_OFF };

struct progress {
	FILE *f;                /* NULL: off */
	const char *prog;       /* the tool's name, the line's first word */
	const char *what;       /* the stage drawn last */
	unsigned width;         /* columns of the line drawn last: 0, none shown */
	unsigned permille;      /* of the stage, drawn last */
	uint64_t last_ns;       /* when it was drawn (CLOCK_MONOTONIC) */
};

/*
 * progress_init - on with PROGRESS_ON; with PROGRESS_AUTO when standard
 * error is a terminal and the tool was not asked to be quiet.
 */
void progress_init(struct progress *p, const char *prog, enum progress_mode mode, int quiet);

/*
 * progress_update - `done` of `total` items of stage `what` (a string
 * that lives as long as the stage).  Cheap enough to call for every item:
 * the clock is read only when the per-mille figure changes, and the line
 * is redrawn only when a stage starts or 200 ms have passed.
 */
void progress_update(struct progress *p, const char *what, uint64_t done, uint64_t total);

/*
 * progress_clear - blank the line, if one is shown, before the tool
 * prints something to the same terminal; the next update draws it again.
 */
void progress_clear(struct progress *p);

/* progress_end - clear the line for good; updates after it draw nothing. */
void progress_end(struct progress *p);

#endif /* PROGRESS_H */
