/*
 * i386_host.c - how the C tests run i686 programs (i386_host.h): they ask
 * tests/i386-host.sh, as the shell tests do.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "i386_host.h"

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return v && *v ? v : dflt;
}

const char *i386_qemu(void)
{
	return env_or("QEMU_I386", "qemu-i386");
}

enum i386_host i386_host(const char **why)
{
	static const struct { const char *word; enum i386_host answer; } verdicts[] = {
		{ "native", I386_NATIVE }, { "qemu: ", I386_QEMU }, { "noexec: ", I386_NOEXEC },
	};
	static int asked;
	static enum i386_host answer = I386_ERROR;
	static char line[1024];

	if (!asked) {
		char cmd[1024];
		FILE *p;

		asked = 1;
		snprintf(cmd, sizeof cmd, "sh '%s/tests/i386-host.sh' i686-linux-gnu-gcc '%s'",
		         env_or("top_srcdir", "."), i386_qemu());
		p = popen(cmd, "r");
		if (!p || !fgets(line, sizeof line, p))
			snprintf(line, sizeof line, "error: tests/i386-host.sh gave no answer");
		if (p)
			pclose(p);
		line[strcspn(line, "\n")] = '\0';
		for (size_t i = 0; i < sizeof verdicts / sizeof verdicts[0]; i++) {
			size_t n = strlen(verdicts[i].word);

			if (strncmp(line, verdicts[i].word, n) == 0 &&
			    (line[n] == '\0' || verdicts[i].answer != I386_NATIVE)) {
				answer = verdicts[i].answer;
				memmove(line, line + n, strlen(line + n) + 1);
				break;
			}
		}
		if (answer == I386_ERROR && strncmp(line, "error: ", 7) == 0)
			memmove(line, line + 7, strlen(line + 7) + 1);
	}
	if (why)
		*why = line;
	return answer;
}
