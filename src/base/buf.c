/* buf.c - bounded growable buffer (see buf.h). */
#include "base/buf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/err.h"

#define BUF_DEFAULT_MAX (64u << 20)

void buf_init(struct buf *b, size_t max)
{
	b->data = NULL;
	b->len = b->alloc = 0;
	b->max = max ? max : BUF_DEFAULT_MAX;
}

void buf_release(struct buf *b)
{
	free(b->data);
	buf_init(b, b->max);
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = 0;
}

int buf_append(struct buf *b, const void *p, size_t n)
{
	if (n > b->max || b->len > b->max - n)
		return FP_ETOOBIG;
	size_t need = b->len + n + 1;
	if (need > b->alloc) {
		size_t a = b->alloc ? b->alloc : 64;
		while (a < need)
			a *= 2;
		b->data = xrealloc(b->data, a);
		b->alloc = a;
	}
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = 0;
	return 0;
}

int buf_puts(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return FP_EINVAL;
	if ((size_t)n < sizeof(tmp))
		return buf_append(b, tmp, (size_t)n);
	char *big = xmalloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	int rc = buf_append(b, big, (size_t)n);
	free(big);
	return rc;
}

char *buf_detach(struct buf *b, size_t *len)
{
	if (!b->data)
		buf_append(b, "", 0);
	char *d = b->data;
	if (len)
		*len = b->len;
	b->data = NULL;
	b->len = b->alloc = 0;
	return d;
}

int buf_read_file(struct buf *b, const char *path, size_t max, char *err, size_t errlen)
{
	buf_reset(b);
	if (max == 0)
		max = b->max;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fp_errf(FP_EIO, err, errlen, "open %s: %s", path, strerror(errno));
	char chunk[16384];
	int rc = 0;
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = fp_errf(FP_EIO, err, errlen, "read %s: %s", path, strerror(errno));
			break;
		}
		if (n == 0)
			break;
		if (b->len + (size_t)n > max || buf_append(b, chunk, (size_t)n) < 0) {
			rc = fp_errf(FP_ETOOBIG, err, errlen, "%s is larger than %zu bytes", path,
				     max);
			break;
		}
	}
	close(fd);
	return rc;
}

ssize_t buf_read_into(const char *path, char *out, size_t size)
{
	if (size == 0)
		return -1;
	out[0] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t len = 0;
	while (len < size - 1) {
		ssize_t n = read(fd, out + len, size - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			close(fd);
			out[0] = '\0';
			errno = e;
			return -1;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	out[len] = '\0';
	return (ssize_t)len;
}

int buf_write_file(const struct buf *b, const char *path, char *err, size_t errlen)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? xstrndup(path, slash == path ? 1 : (size_t)(slash - path))
			  : xstrdup(".");
	char *tmp = xasprintf("%s/.%s.tmp", dir, slash ? slash + 1 : path);
	int rc = 0;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = fp_errf(FP_EIO, err, errlen, "open %s: %s", tmp, strerror(errno));
		goto out;
	}
	for (size_t off = 0; off < b->len;) {
		ssize_t n = write(fd, b->data + off, b->len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = fp_errf(FP_EIO, err, errlen, "write %s: %s", tmp, strerror(errno));
			break;
		}
		off += (size_t)n;
	}
	if (rc == 0 && fsync(fd) != 0)
		rc = fp_errf(FP_EIO, err, errlen, "fsync %s: %s", tmp, strerror(errno));
	if (close(fd) != 0 && rc == 0)
		rc = fp_errf(FP_EIO, err, errlen, "close %s: %s", tmp, strerror(errno));
	if (rc == 0 && rename(tmp, path) != 0)
		rc = fp_errf(FP_EIO, err, errlen, "rename %s: %s", path, strerror(errno));
	if (rc < 0) {
		unlink(tmp);
		goto out;
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
out:
	free(dir);
	free(tmp);
	return rc;
}
