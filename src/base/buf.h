/* buf.h - a growable byte buffer with a hard maximum (curl struct dynbuf), so hostile input
 * cannot grow memory without bound. Always NUL-terminated after a successful append. */
#ifndef FP_BASE_BUF_H
#define FP_BASE_BUF_H

#include <stddef.h>
#include <sys/types.h>

struct buf {
	char *data; /* owned; NUL-terminated; NULL until the first append */
	size_t len;
	size_t alloc;
	size_t max; /* appends past max fail with FP_ETOOBIG; 0 means 64 MiB */
};

void buf_init(struct buf *b, size_t max);
void buf_release(struct buf *b);
void buf_reset(struct buf *b);
/* Returns 0 or FP_ETOOBIG (buffer unchanged). */
int buf_append(struct buf *b, const void *p, size_t n);
int buf_puts(struct buf *b, const char *s);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Replaces b's contents with the whole file at path, at most max bytes (0 = b->max). Returns 0,
 * FP_EIO ("open PATH: why" / "read PATH: why" in err) or FP_ETOOBIG ("PATH is larger than MAX
 * bytes"); b then holds what was read so far. Retries EINTR; the file is opened O_CLOEXEC. */
int buf_read_file(struct buf *b, const char *path, size_t max, char *err, size_t errlen);
/* Reads at most size - 1 bytes of path into out (size > 0) and NUL-terminates them: the
 * fixed-size read of small kernel files (/proc/self/stat, /proc/PID/cgroup) that needs no heap.
 * Returns the length (a longer file is cut at size - 1), or -1 with errno when path cannot be
 * opened or read (out is then ""). Retries EINTR; opens O_CLOEXEC. */
ssize_t buf_read_into(const char *path, char *out, size_t size);
/* Writes b's contents (b unchanged) to path whole or not at all: a temporary file
 * "<dir>/.<name>.tmp" of mode 0644 in path's directory, written, fsync'd, renamed over path
 * (rename(2) is atomic), then the directory fsync'd. A reader sees the old file or the new one,
 * never a part. Returns 0 or FP_EIO with err naming the step and path (the temporary file is
 * removed). */
int buf_write_file(const struct buf *b, const char *path, char *err, size_t errlen);
/* buf_detach hands the data to the caller (never NULL) and re-initialises b. */
char *buf_detach(struct buf *b, size_t *len);

#endif
