/* progress.c - the progress line of progress.h. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "progress.h"

#define FIRST_DRAW_AFTER 1.0   /* seconds: inputs read faster never show a line */
#define REDRAW_EVERY 0.25
#define MIB (1024.0 * 1024.0)

static double now_seconds(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		return 0;
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* write() all of buf; a failing terminal just loses the display. */
static void put(int fd, const char *buf, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, buf, n);
		if (w <= 0)
			return;
		buf += w;
		n -= (size_t)w;
	}
}

void progress_init(struct progress *p, int fd, const char *path, uint64_t total, double now)
{
	memset(p, 0, sizeof(*p));
	p->fd = fd >= 0 && isatty(fd) ? fd : -1;
	p->total = total;
	p->next = now + FIRST_DRAW_AFTER;
	const char *base = path ? strrchr(path, '/') : NULL;
	base = base ? base + 1 : path ? path : "input";
	size_t n = strlen(base);
	if (n >= sizeof(p->label)) {
		/* Keep the end of a long name: it tells files apart. */
		base += n - (sizeof(p->label) - 4);
		snprintf(p->label, sizeof(p->label), "...%s", base);
	} else {
		memcpy(p->label, base, n + 1);
	}
	for (char *c = p->label; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';   /* a file name must not steer the terminal */
}

void progress_tick(struct progress *p, uint64_t done, double now)
{
	if (p->fd < 0 || now < p->next)
		return;
	p->next = now + REDRAW_EVERY;
	char line[160];
	int n;
	if (p->total) {
		uint64_t shown = done < p->total ? done : p->total;
		n = snprintf(line, sizeof(line), "\rcsdec: %s: %3u%% (%.1f of %.1f MiB)\033[K", p->label,
			     (unsigned)(shown * 100 / p->total), (double)shown / MIB, (double)p->total / MIB);
	} else {
		n = snprintf(line, sizeof(line), "\rcsdec: %s: %.1f MiB\033[K", p->label, (double)done / MIB);
	}
	if (n <= 0)
		return;
	put(p->fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
	p->shown = 1;
}

void progress_begin(struct progress *p, FILE *in, const char *path, int stdout_quiet)
{
	struct stat st;
	uint64_t total = 0;
	if (in && fstat(fileno(in), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
		total = (uint64_t)st.st_size;
	int fd = STDERR_FILENO;
	if (!stdout_quiet && isatty(STDOUT_FILENO))
		fd = -1;
	progress_init(p, fd, path, total, now_seconds());
}

void progress_update(struct progress *p, uint64_t done)
{
	if (p->fd >= 0)
		progress_tick(p, done, now_seconds());
}

void progress_end(struct progress *p)
{
	if (p->fd >= 0 && p->shown) {
		static const char erase[] = "\r\033[K";
		put(p->fd, erase, sizeof(erase) - 1);
	}
	p->shown = 0;
}
