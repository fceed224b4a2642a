/* outbox.c - the agent's on-disk report buffer (outbox.h): durable writes (tmp, fsync, rename,
 * directory fsync), an in-memory index of pending files oldest first with their event counts,
 * and the rejected/ corner for reports the API refused for good. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/outbox.h"
#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"

#include "base/banned.h"

static int ob_fsync_dir(const char *dir, char *err, size_t errlen)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return fp_errf(FP_EIO, err, errlen, "open %s: %s", dir, strerror(errno));
	int rc = 0;
	if (fsync(fd) < 0)
		rc = fp_errf(FP_EIO, err, errlen, "fsync %s: %s", dir, strerror(errno));
	close(fd);
	return rc;
}

/* The directory part of path ("." when none) into out. */
static void ob_dirname(const char *path, char *out, size_t outlen)
{
	const char *slash = strrchr(path, '/');
	if (!slash) {
		snprintf(out, outlen, ".");
		return;
	}
	size_t n = (size_t)(slash - path);
	if (n == 0)
		n = 1; /* "/x" -> "/" */
	snprintf(out, outlen, "%.*s", (int)n, path);
}

int outbox_write_durable(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
	char tmp[4096], dir[4096];
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return fp_errf(FP_EIO, err, errlen, "path too long: %s", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return fp_errf(FP_EIO, err, errlen, "create %s: %s", tmp, strerror(errno));
	const char *p = data;
	size_t left = len;
	while (left) {
		ssize_t w = write(fd, p, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			int e = errno;
			close(fd);
			unlink(tmp);
			return fp_errf(FP_EIO, err, errlen, "write %s: %s", tmp, strerror(e));
		}
		p += w;
		left -= (size_t)w;
	}
	if (fsync(fd) < 0) {
		int e = errno;
		close(fd);
		unlink(tmp);
		return fp_errf(FP_EIO, err, errlen, "fsync %s: %s", tmp, strerror(e));
	}
	close(fd);
	if (rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		return fp_errf(FP_EIO, err, errlen, "rename %s: %s", tmp, strerror(e));
	}
	ob_dirname(path, dir, sizeof(dir));
	return ob_fsync_dir(dir, err, errlen);
}

static int ob_mkdir(const char *path, char *err, size_t errlen)
{
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return fp_errf(FP_EIO, err, errlen, "mkdir %s: %s", path, strerror(errno));
	struct stat st;
	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
		return fp_errf(FP_EIO, err, errlen, "%s is not a directory", path);
	return 0;
}

static char *ob_path(const char *dir, uint64_t seq, const char *ext)
{
	return xasprintf("%s/%020" PRIu64 "%s", dir, seq, ext);
}

/* Parses a pending file name "<20 digits>.json"; returns 0 and *seq or -1. */
static int ob_name_seq(const char *name, uint64_t *seq)
{
	if (strlen(name) != 25 || strcmp(name + 20, ".json") != 0)
		return -1;
	uint64_t v = 0;
	for (int i = 0; i < 20; i++) {
		if (name[i] < '0' || name[i] > '9')
			return -1;
		uint64_t d = (uint64_t)(name[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*seq = v;
	return 0;
}

static int ob_entry_cmp(const void *a, const void *b)
{
	const struct outbox_entry *x = a, *y = b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The number of events of a report body, or -1 with why in err when it is not a report. */
static long ob_count_events(const char *body, size_t len, char *err, size_t errlen)
{
	json_t *doc = NULL;
	if (jsonx_parse(body, len, &doc, err, errlen) < 0)
		return -1;
	json_t *ev = json_object_get(doc, "events");
	long n = -1;
	if (!json_is_object(doc) || !json_is_array(ev))
		fp_errf(FP_EINVAL, err, errlen, "not a report: no \"events\" array");
	else
		n = (long)json_array_size(ev);
	json_decref(doc);
	return n;
}

static int ob_move_rejected(struct outbox *ob, uint64_t seq, const char *answer, char *err,
			    size_t errlen)
{
	char *from = ob_path(ob->dir, seq, ".json");
	char *to = ob_path(ob->rejected_dir, seq, ".json");
	char *ans = ob_path(ob->rejected_dir, seq, ".answer");
	int rc = outbox_write_durable(ans, answer, strlen(answer), err, errlen);
	if (rc == 0 && rename(from, to) < 0)
		rc = fp_errf(FP_EIO, err, errlen, "rename %s to %s: %s", from, to, strerror(errno));
	if (rc == 0)
		rc = ob_fsync_dir(ob->rejected_dir, err, errlen);
	if (rc == 0)
		rc = ob_fsync_dir(ob->dir, err, errlen);
	free(from);
	free(to);
	free(ans);
	return rc;
}

int outbox_open(struct outbox *ob, const char *state_dir, size_t max_events, char *err,
		size_t errlen)
{
	memset(ob, 0, sizeof(*ob));
	if (max_events < 1 || max_events > 10000000)
		return fp_errf(FP_EINVAL, err, errlen, "max buffer %zu out of 1..10000000 events",
			       max_events);
	int rc = ob_mkdir(state_dir, err, errlen);
	if (rc < 0)
		return rc;
	ob->dir = xasprintf("%s/outbox", state_dir);
	ob->rejected_dir = xasprintf("%s/rejected", state_dir);
	ob->max_events = max_events;
	ob->next_seq = 1;
	if ((rc = ob_mkdir(ob->dir, err, errlen)) < 0 ||
	    (rc = ob_mkdir(ob->rejected_dir, err, errlen)) < 0)
		return rc;
	/* rejected/ names count too: a seq is never reused. */
	const char *dirs[2] = {ob->rejected_dir, ob->dir};
	for (int d = 0; d < 2; d++) {
		DIR *dh = opendir(dirs[d]);
		if (!dh)
			return fp_errf(FP_EIO, err, errlen, "opendir %s: %s", dirs[d],
				       strerror(errno));
		struct dirent *de;
		while ((de = readdir(dh)) != NULL) {
			size_t nl = strlen(de->d_name);
			uint64_t seq;
			if (d == 1 && nl > 4 && strcmp(de->d_name + nl - 4, ".tmp") == 0) {
				char *p = xasprintf("%s/%s", dirs[d], de->d_name);
				unlink(p);
				free(p);
				continue;
			}
			if (nl >= 20) {
				char head[26];
				snprintf(head, sizeof(head), "%.20s.json", de->d_name);
				if (ob_name_seq(head, &seq) == 0 && seq >= ob->next_seq)
					ob->next_seq = seq + 1;
			}
			if (d == 1 && ob_name_seq(de->d_name, &seq) == 0) {
				ALLOC_GROW(ob->pending, ob->npending + 1, ob->alloc);
				ob->pending[ob->npending].seq = seq;
				ob->pending[ob->npending].nevents = 0;
				ob->npending++;
			}
		}
		closedir(dh);
	}
	if (ob->npending > 1)
		qsort(ob->pending, ob->npending, sizeof(ob->pending[0]), ob_entry_cmp);
	/* Count each pending report's events; set aside what is not a report. */
	struct buf b;
	buf_init(&b, OUTBOX_MAX_REPORT);
	size_t keep = 0;
	for (size_t i = 0; i < ob->npending; i++) {
		char why[256];
		char *p = ob_path(ob->dir, ob->pending[i].seq, ".json");
		long n = -1;
		if (buf_read_file(&b, p, OUTBOX_MAX_REPORT, why, sizeof(why)) == 0)
			n = ob_count_events(b.data ? b.data : "", b.len, why, sizeof(why));
		free(p);
		if (n < 0) {
			char *ans = xasprintf("not sent: the file is not a readable report: %s\n",
					      why);
			rc = ob_move_rejected(ob, ob->pending[i].seq, ans, err, errlen);
			free(ans);
			if (rc < 0)
				break;
			continue;
		}
		ob->pending[keep].seq = ob->pending[i].seq;
		ob->pending[keep].nevents = (size_t)n;
		ob->nevents += (size_t)n;
		keep++;
	}
	buf_release(&b);
	ob->npending = rc < 0 ? ob->npending : keep;
	return rc;
}

void outbox_close(struct outbox *ob)
{
	if (!ob)
		return;
	free(ob->dir);
	free(ob->rejected_dir);
	free(ob->pending);
	memset(ob, 0, sizeof(*ob));
}

int outbox_full(const struct outbox *ob)
{
	return ob->nevents >= ob->max_events;
}

int outbox_put(struct outbox *ob, const char *body, size_t len, size_t nevents, uint64_t *seq,
	       char *err, size_t errlen)
{
	uint64_t s = ob->next_seq;
	char *p = ob_path(ob->dir, s, ".json");
	int rc = outbox_write_durable(p, body, len, err, errlen);
	free(p);
	if (rc < 0)
		return rc;
	ob->next_seq = s + 1;
	ALLOC_GROW(ob->pending, ob->npending + 1, ob->alloc);
	ob->pending[ob->npending].seq = s;
	ob->pending[ob->npending].nevents = nevents;
	ob->npending++;
	ob->nevents += nevents;
	if (seq)
		*seq = s;
	return 0;
}

int outbox_peek(struct outbox *ob, uint64_t *seq, struct buf *body, char *err, size_t errlen)
{
	if (ob->npending == 0)
		return FP_ENOTFOUND;
	char *p = ob_path(ob->dir, ob->pending[0].seq, ".json");
	int rc = buf_read_file(body, p, OUTBOX_MAX_REPORT, err, errlen);
	free(p);
	if (rc == 0)
		*seq = ob->pending[0].seq;
	return rc;
}

static long ob_find(const struct outbox *ob, uint64_t seq)
{
	for (size_t i = 0; i < ob->npending; i++)
		if (ob->pending[i].seq == seq)
			return (long)i;
	return -1;
}

static void ob_drop(struct outbox *ob, size_t i)
{
	ob->nevents -= ob->pending[i].nevents;
	memmove(&ob->pending[i], &ob->pending[i + 1],
		(ob->npending - i - 1) * sizeof(ob->pending[0]));
	ob->npending--;
}

int outbox_remove(struct outbox *ob, uint64_t seq, char *err, size_t errlen)
{
	long i = ob_find(ob, seq);
	if (i < 0)
		return fp_errf(FP_ENOTFOUND, err, errlen, "report %" PRIu64 " is not pending", seq);
	char *p = ob_path(ob->dir, seq, ".json");
	int rc = 0;
	if (unlink(p) < 0 && errno != ENOENT)
		rc = fp_errf(FP_EIO, err, errlen, "unlink %s: %s", p, strerror(errno));
	free(p);
	if (rc == 0)
		rc = ob_fsync_dir(ob->dir, err, errlen);
	if (rc == 0)
		ob_drop(ob, (size_t)i);
	return rc;
}

int outbox_reject(struct outbox *ob, uint64_t seq, long status, const char *answer, char *err,
		  size_t errlen)
{
	long i = ob_find(ob, seq);
	if (i < 0)
		return fp_errf(FP_ENOTFOUND, err, errlen, "report %" PRIu64 " is not pending", seq);
	char *ans = xasprintf("HTTP %ld\n%s\n", status, answer ? answer : "");
	int rc = ob_move_rejected(ob, seq, ans, err, errlen);
	free(ans);
	if (rc == 0)
		ob_drop(ob, (size_t)i);
	return rc;
}
