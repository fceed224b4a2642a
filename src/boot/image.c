/* image.c - the image store (see image.h). */
#include "boot/image.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/timefmt.h"
#include "core/codec.h"

#include "base/banned.h"

#define META_MAX (16 * 1024)

static int path_join(char *out, size_t outlen, const char *a, const char *b, const char *c)
{
	int n = snprintf(out, outlen, "%s/%s%s%s", a, b, c ? "/" : "", c ? c : "");
	return n < 0 || (size_t)n >= outlen ? FP_ETOOBIG : 0;
}

static void sha_hex(const unsigned char d[crypto_hash_sha256_BYTES], char out[IMAGE_SHA256_HEX + 1])
{
	sodium_bin2hex(out, IMAGE_SHA256_HEX + 1, d, crypto_hash_sha256_BYTES);
}

/* Removes dir/<sub> and the two files an image directory may hold. */
static void rm_image_dir(const char *path)
{
	char p[4096];
	if (snprintf(p, sizeof(p), "%s/image", path) < (int)sizeof(p))
		unlink(p);
	if (snprintf(p, sizeof(p), "%s/meta.json", path) < (int)sizeof(p))
		unlink(p);
	rmdir(path);
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t w = write(fd, buf, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Copies src into tmpdir/image hashing it; writes tmpdir/meta.json. */
static int copy_in(const char *tmpdir, const char *name, const char *src, int64_t now_ms,
		   struct image_info *info, char *err, size_t errlen)
{
	char dst[4096];
	if (path_join(dst, sizeof(dst), tmpdir, "image", NULL) < 0)
		return fp_errf(FP_EINVAL, err, errlen, "image dir path too long");
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return fp_errf(errno == ENOENT ? FP_ENOTFOUND : FP_EIO, err, errlen, "%s: %s", src,
			       strerror(errno));
	struct stat st;
	if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(in);
		return fp_errf(FP_EINVAL, err, errlen, "%s: not a regular file", src);
	}
	int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (out < 0) {
		int e = errno;
		close(in);
		return fp_errf(FP_EIO, err, errlen, "%s: %s", dst, strerror(e));
	}
	crypto_hash_sha256_state h;
	crypto_hash_sha256_init(&h);
	char *buf = xmalloc(1 << 20);
	int64_t total = 0;
	int rc = 0;
	for (;;) {
		ssize_t r = read(in, buf, 1 << 20);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = fp_errf(FP_EIO, err, errlen, "reading %s: %s", src, strerror(errno));
			break;
		}
		if (r == 0)
			break;
		crypto_hash_sha256_update(&h, (unsigned char *)buf, (size_t)r);
		if (write_all(out, buf, (size_t)r) < 0) {
			rc = fp_errf(FP_EIO, err, errlen, "writing %s: %s", dst, strerror(errno));
			break;
		}
		total += r;
	}
	free(buf);
	close(in);
	if (rc == 0 && fsync(out) < 0)
		rc = fp_errf(FP_EIO, err, errlen, "fsync %s: %s", dst, strerror(errno));
	if (close(out) < 0 && rc == 0)
		rc = fp_errf(FP_EIO, err, errlen, "close %s: %s", dst, strerror(errno));
	if (rc < 0)
		return rc;
	unsigned char d[crypto_hash_sha256_BYTES];
	crypto_hash_sha256_final(&h, d);
	memset(info, 0, sizeof(*info));
	snprintf(info->name, sizeof(info->name), "%s", name);
	sha_hex(d, info->sha256);
	info->size = total;
	info->added_ms = now_ms;
	char ts[FP_TIME_LEN];
	fp_time_format(now_ms, ts);
	json_t *meta = json_pack("{s:s,s:s,s:I,s:s}", "name", name, "sha256", info->sha256,
				 "sizeBytes", (json_int_t)total, "addedAt", ts);
	char *text = json_dumps(meta, JSON_SORT_KEYS | JSON_INDENT(2));
	json_decref(meta);
	if (path_join(dst, sizeof(dst), tmpdir, "meta.json", NULL) < 0) {
		free(text);
		return fp_errf(FP_EINVAL, err, errlen, "image dir path too long");
	}
	int mf = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (mf < 0 || write_all(mf, text, strlen(text)) < 0 || write_all(mf, "\n", 1) < 0 ||
	    fsync(mf) < 0)
		rc = fp_errf(FP_EIO, err, errlen, "writing %s: %s", dst, strerror(errno));
	if (mf >= 0)
		close(mf);
	free(text);
	return rc;
}

int image_add(const char *dir, const char *name, const char *src, int replace, int64_t now_ms,
	      struct image_info *out, char *err, size_t errlen)
{
	int rc = image_name_validate(name, err, errlen);
	if (rc < 0)
		return rc;
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return fp_errf(FP_EIO, err, errlen, "creating %s: %s", dir, strerror(errno));
	char final[4096], tmp[4096], old[4096];
	char tname[128], oname[128];
	unsigned r = randombytes_random();
	snprintf(tname, sizeof(tname), ".tmp-%s-%d-%08x", name, (int)getpid(), r);
	snprintf(oname, sizeof(oname), ".old-%s-%d-%08x", name, (int)getpid(), r);
	if (path_join(final, sizeof(final), dir, name, NULL) < 0 ||
	    path_join(tmp, sizeof(tmp), dir, tname, NULL) < 0 ||
	    path_join(old, sizeof(old), dir, oname, NULL) < 0)
		return fp_errf(FP_EINVAL, err, errlen, "image dir path too long");
	struct stat st;
	if (!replace && stat(final, &st) == 0)
		return fp_errf(FP_EEXIST, err, errlen,
			       "image %s already exists (rm it first, or add with --replace)",
			       name);
	if (mkdir(tmp, 0755) < 0)
		return fp_errf(FP_EIO, err, errlen, "creating %s: %s", tmp, strerror(errno));
	struct image_info info;
	if ((rc = copy_in(tmp, name, src, now_ms, &info, err, errlen)) < 0) {
		rm_image_dir(tmp);
		return rc;
	}
	int had_old = 0;
	if (replace && rename(final, old) == 0)
		had_old = 1;
	if (rename(tmp, final) < 0) {
		int e = errno;
		if (had_old)
			rename(old, final);
		rm_image_dir(tmp);
		if (e == ENOTEMPTY || e == EEXIST)
			return fp_errf(FP_EEXIST, err, errlen, "image %s was added meanwhile",
				       name);
		return fp_errf(FP_EIO, err, errlen, "renaming into %s: %s", final, strerror(e));
	}
	if (had_old)
		rm_image_dir(old);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	if (out)
		*out = info;
	return 0;
}

static int read_meta(const char *dir, const char *name, struct image_info *out, char *err,
		     size_t errlen)
{
	char p[4096];
	if (path_join(p, sizeof(p), dir, name, "meta.json") < 0)
		return fp_errf(FP_EINVAL, err, errlen, "image dir path too long");
	FILE *f = fopen(p, "re");
	if (!f)
		return fp_errf(errno == ENOENT || errno == ENOTDIR ? FP_ENOTFOUND : FP_EIO, err,
			       errlen,
			       errno == ENOENT || errno == ENOTDIR ? "image %s not found"
								   : "image %s: cannot read",
			       name);
	char *buf = xmalloc(META_MAX + 1);
	size_t len = fread(buf, 1, META_MAX, f);
	fclose(f);
	buf[len] = 0;
	json_error_t je;
	json_t *doc = json_loads(buf, 0, &je);
	free(buf);
	const char *sha = jsonx_str(doc, "sha256");
	json_t *size = json_object_get(doc, "sizeBytes");
	const char *at = jsonx_str(doc, "addedAt");
	int64_t at_ms = 0;
	if (!doc || !sha || strlen(sha) != IMAGE_SHA256_HEX ||
	    strspn(sha, "0123456789abcdef") != IMAGE_SHA256_HEX || !json_is_integer(size) ||
	    json_integer_value(size) < 0 || (at && fp_time_parse(at, &at_ms) < 0)) {
		json_decref(doc);
		return fp_errf(FP_EPARSE, err, errlen, "image %s: %s is not a valid record", name,
			       p);
	}
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", name);
	snprintf(out->sha256, sizeof(out->sha256), "%s", sha);
	out->size = json_integer_value(size);
	out->added_ms = at_ms;
	json_decref(doc);
	return 0;
}

int image_get(const char *dir, const char *name, struct image_info *out, char *err, size_t errlen)
{
	int rc = image_name_validate(name, err, errlen);
	if (rc < 0)
		return rc;
	return read_meta(dir, name, out, err, errlen);
}

int image_open(const char *dir, const char *name, int *fd, struct image_info *out, char *err,
	       size_t errlen)
{
	*fd = -1;
	int rc = image_get(dir, name, out, err, errlen);
	if (rc < 0)
		return rc;
	char p[4096];
	if (path_join(p, sizeof(p), dir, name, "image") < 0)
		return fp_errf(FP_EINVAL, err, errlen, "image dir path too long");
	int f = open(p, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return fp_errf(errno == ENOENT ? FP_ENOTFOUND : FP_EIO, err, errlen, "image %s: %s",
			       name, strerror(errno));
	struct stat st;
	if (fstat(f, &st) < 0) {
		int e = errno;
		close(f);
		return fp_errf(FP_EIO, err, errlen, "image %s: %s", name, strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(f);
		return fp_errf(FP_EIO, err, errlen, "image %s: %s is not a regular file", name, p);
	}
	if (st.st_size != out->size) {
		close(f);
		return fp_errf(FP_EIO, err, errlen,
			       "image %s: size on disk %lld differs from the recorded %lld", name,
			       (long long)st.st_size, (long long)out->size);
	}
	*fd = f;
	return 0;
}

static int cmp_info(const void *a, const void *b)
{
	return strcmp(((const struct image_info *)a)->name, ((const struct image_info *)b)->name);
}

int image_list(const char *dir, struct image_info **out, size_t *n, char *err, size_t errlen)
{
	*out = NULL;
	*n = 0;
	DIR *d = opendir(dir);
	if (!d) {
		if (errno == ENOENT)
			return 0;
		return fp_errf(FP_EIO, err, errlen, "%s: %s", dir, strerror(errno));
	}
	size_t cap = 0;
	struct dirent *e;
	while ((e = readdir(d)) && *n < IMAGE_MAX_COUNT) {
		if (image_name_validate(e->d_name, NULL, 0) < 0)
			continue; /* ".", "..", .tmp-*, .old-* */
		struct image_info info;
		if (read_meta(dir, e->d_name, &info, NULL, 0) < 0)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			*out = xrealloc(*out, cap * sizeof(**out));
		}
		(*out)[(*n)++] = info;
	}
	closedir(d);
	if (*n)
		qsort(*out, *n, sizeof(**out), cmp_info);
	return 0;
}

int image_remove(const char *dir, const char *name, char *err, size_t errlen)
{
	struct image_info info;
	int rc = image_get(dir, name, &info, err, errlen);
	if (rc < 0 && rc != FP_EPARSE)
		return rc;
	char p[4096], gone[4096], gname[128];
	snprintf(gname, sizeof(gname), ".old-%s-%d-%08x", name, (int)getpid(),
		 randombytes_random());
	if (path_join(p, sizeof(p), dir, name, NULL) < 0 ||
	    path_join(gone, sizeof(gone), dir, gname, NULL) < 0)
		return fp_errf(FP_EINVAL, err, errlen, "image dir path too long");
	if (rename(p, gone) < 0)
		return fp_errf(errno == ENOENT ? FP_ENOTFOUND : FP_EIO, err, errlen,
			       "removing image %s: %s", name, strerror(errno));
	rm_image_dir(gone);
	return 0;
}
