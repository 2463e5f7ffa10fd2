/*
 * test_progress.c - the tool's progress line (tools/progress.c, compiled in
 * here) on a pseudo-terminal with a clock the test drives: nothing on a
 * pipe, nothing during the first second, at most one redraw per quarter
 * second, the exact line text, and erasing at the end.
 */
#define _XOPEN_SOURCE 700 /* posix_openpt and friends */
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "check.h"
#include "../tools/progress.c"

#define MIB_BYTES (1024u * 1024u)

static int master = -1, slave = -1;

/* What the terminal received since the last call (waits briefly). */
static const char *drain(void)
{
	static char buf[4096];
	size_t n = 0;
	struct pollfd pfd = { .fd = master, .events = POLLIN };
	while (n + 1 < sizeof(buf) && poll(&pfd, 1, 50) > 0 && (pfd.revents & POLLIN)) {
		ssize_t got = read(master, buf + n, sizeof(buf) - 1 - n);
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	buf[n] = 0;
	return buf;
}

static int open_pty(void)
{
	master = posix_openpt(O_RDWR | O_NOCTTY);
	if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0)
		return -1;
	const char *name = ptsname(master);
	slave = name ? open(name, O_RDWR | O_NOCTTY) : -1;
	if (slave < 0)
		return -1;
	/* Bytes as written: no output processing on the terminal side. */
	struct termios t;
	if (tcgetattr(slave, &t) == 0) {
		t.c_oflag &= ~(tcflag_t)OPOST;
		tcsetattr(slave, TCSANOW, &t);
	}
	return 0;
}

int main(void)
{
	struct progress p;

	/* A pipe is not a terminal: no display at all. */
	int fds[2];
	CHECK_EQ(pipe(fds), 0);
	progress_init(&p, fds[1], "trace.bin", 10, 0.0);
	CHECK_EQ(p.fd, -1);
	progress_tick(&p, 5, 5.0);
	progress_end(&p);
	close(fds[1]);
	char c;
	CHECK_EQ(read(fds[0], &c, 1), 0);
	close(fds[0]);

	if (open_pty() != 0) {
		fprintf(stderr, "test_progress: no pseudo-terminal available\n");
		CHECK(0);
		return check_done("test_progress");
	}
	CHECK(isatty(slave));

	/* 4 MiB from t = 100 s: the first second stays silent. */
	progress_init(&p, slave, "/some/dir/cstrace.bin", 4 * MIB_BYTES, 100.0);
	CHECK_EQ(p.fd, slave);
	progress_tick(&p, MIB_BYTES / 2, 100.5);
	progress_tick(&p, MIB_BYTES / 2, 100.99);
	CHECK_STR(drain(), "");
	progress_tick(&p, MIB_BYTES, 101.0);
	CHECK_STR(drain(), "\rcsdec: cstrace.bin:  25% (1.0 of 4.0 MiB)\033[K");
	/* Then at most every 0.25 s. */
	progress_tick(&p, 2 * MIB_BYTES, 101.2);
	CHECK_STR(drain(), "");
	progress_tick(&p, 3 * MIB_BYTES, 101.25);
	CHECK_STR(drain(), "\rcsdec: cstrace.bin:  75% (3.0 of 4.0 MiB)\033[K");
	/* More than the size (the file grew) shows as 100%. */
	progress_tick(&p, 5 * MIB_BYTES, 102.0);
	CHECK_STR(drain(), "\rcsdec: cstrace.bin: 100% (4.0 of 4.0 MiB)\033[K");
	progress_end(&p);
	CHECK_STR(drain(), "\r\033[K");
	progress_end(&p);
	CHECK_STR(drain(), "");

	/* Size unknown (a pipe as input): bytes only. */
	progress_init(&p, slave, "-", 0, 0.0);
	progress_tick(&p, 3 * MIB_BYTES / 2, 2.0);
	CHECK_STR(drain(), "\rcsdec: -: 1.5 MiB\033[K");
	progress_end(&p);
	CHECK_STR(drain(), "\r\033[K");

	/* A short input that ends within the first second leaves nothing. */
	progress_init(&p, slave, "x", 100, 0.0);
	progress_tick(&p, 100, 0.3);
	progress_end(&p);
	CHECK_STR(drain(), "");

	/* Long names keep their end; control characters cannot reach the terminal. */
	progress_init(&p, slave, "/d/a-very-long-capture-file-name-from-some-lab-machine-0042.bin", 0, 0.0);
	CHECK_EQ(strlen(p.label), sizeof(p.label) - 1);
	CHECK(strncmp(p.label, "...", 3) == 0);
	CHECK(strstr(p.label, "machine-0042.bin") != NULL);
	progress_init(&p, slave, "evil\033]0;title\007.bin", 0, 0.0);
	CHECK_STR(p.label, "evil?]0;title?.bin");

	close(slave);
	close(master);
	return check_done("test_progress");
}
