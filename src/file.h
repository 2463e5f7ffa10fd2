/* file.h - opening the files a decode reads (internal). */
#ifndef CSD_FILE_H
#define CSD_FILE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Open `path` for reading if it is a regular file. Special files are never
 * opened in a way that waits (a FIFO's open blocks until a writer comes) and
 * never read: /dev/zero or a pipe would feed the decoder without end.
 * Returns the descriptor (close-on-exec, blocking reads), or -1 with errno
 * set to the OS reason, or -1 with errno 0 and *what naming the kind of
 * file ("a directory", "a FIFO", ...) when it is not regular.
 */
int csdi_open_regular(const char *path, const char **what);

/* Read exactly n bytes at file offset off (retrying short reads and
 * EINTR): 0, or -1 when the file ends first or a read fails. */
int csdi_pread_exact(int fd, void *buf, size_t n, uint64_t off);

/* "a FIFO" etc. for a st_mode that is not a regular file. */
const char *csdi_file_kind(unsigned mode);

#endif
