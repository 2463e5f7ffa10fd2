/* progress.h - a one-line progress display on stderr while the tool reads a
 * long input: "csdec: cstrace.bin: 42% (120.0 of 286.1 MiB)". Drawn only on
 * a terminal, first after a second (short inputs never show it), then at
 * most four times a second, and erased at the end, so piped or redirected
 * runs and the normal output never see it. */
#ifndef CSD_PROGRESS_H
#define CSD_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

struct progress {
	int fd;             /* terminal the line goes to; -1: no display */
	char label[48];     /* file name shown (its last path component) */
	uint64_t total;     /* bytes in the input; 0: not known */
	double next;        /* monotonic time of the next redraw */
	int shown;          /* a line is on the terminal now */
};

/* Start the display for reading `in` (named `path`) when stderr is a
 * terminal. If stdout is the same kind of terminal, the display would
 * interleave with the output, so it is drawn only if the caller says stdout
 * stays quiet until the end (`stdout_quiet`). */
void progress_begin(struct progress *p, FILE *in, const char *path, int stdout_quiet);

/* `done` bytes of the input have been read. Cheap when nothing is drawn. */
void progress_update(struct progress *p, uint64_t done);

/* Erase the line, if one is shown. */
void progress_end(struct progress *p);

/* The parts progress_begin / progress_update use, with the terminal and
 * the clock (seconds) given: for tests. progress_init turns the display
 * off when fd is not a terminal. */
void progress_init(struct progress *p, int fd, const char *path, uint64_t total, double now);
void progress_tick(struct progress *p, uint64_t done, double now);

#endif
