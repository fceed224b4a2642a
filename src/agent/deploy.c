/* deploy.c - the disk writer of `fleetplane agent deploy` (deploy.h): the deploy document,
 * the disk choice, the streamed write with its sha256, the CIDATA seed (mount(2) on a block
 * device, mcopy on a regular file) and the report. */
#include <ctype.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/deploy.h"
#include "agent/probe.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/jsonx.h"

#include "base/banned.h"

#define DEPLOY_CHUNK ((size_t)1 << 20) /* bytes gathered before one pwrite */

/* ------------------------------------------------------------------ pure parts */

static int dp_is_hex64(const char *s)
{
	if (!s || strlen(s) != 64)
		return 0;
	for (size_t i = 0; i < 64; i++)
		if (!isxdigit((unsigned char)s[i]))
			return 0;
	return 1;
}

int deploy_doc_parse(const json_t *doc, struct deploy_doc *d, char *err, size_t errlen)
{
	memset(d, 0, sizeof(*d));
	if (!json_is_object(doc))
		return fp_errf(FP_EINVAL, err, errlen, "the deploy document is not an object");
	d->image_name = jsonx_str(doc, "image.name");
	d->image_url = jsonx_str(doc, "image.url");
	d->image_sha256 = jsonx_str(doc, "image.sha256");
	json_t *size = jsonx_path(doc, "image.sizeBytes");
	if (!d->image_name || !*d->image_name)
		return fp_errf(FP_EINVAL, err, errlen, "image.name: needs a string");
	if (!d->image_url || !*d->image_url)
		return fp_errf(FP_EINVAL, err, errlen, "image.url: needs a string");
	if (!dp_is_hex64(d->image_sha256))
		return fp_errf(FP_EINVAL, err, errlen, "image.sha256: needs 64 hex digits");
	for (size_t i = 0; i < 64; i++)
		d->sha256[i] = (char)tolower((unsigned char)d->image_sha256[i]);
	if (!json_is_integer(size) || json_integer_value(size) <= 0)
		return fp_errf(FP_EINVAL, err, errlen, "image.sizeBytes: needs an integer > 0");
	d->size_bytes = (uint64_t)json_integer_value(size);
	json_t *rd = json_object_get(doc, "rootDevice");
	if (rd && !json_is_null(rd)) {
		if (!json_is_string(rd) || json_string_value(rd)[0] != '/')
			return fp_errf(FP_EINVAL, err, errlen, "rootDevice: needs a path or null");
		d->root_device = json_string_value(rd);
	}
	d->hostname = jsonx_str(doc, "config.hostname");
	d->meta_data = jsonx_str(doc, "config.metaData");
	json_t *ud = jsonx_path(doc, "config.userData");
	if (!d->hostname || !*d->hostname || strlen(d->hostname) > 253 ||
	    strpbrk(d->hostname, "\r\n"))
		return fp_errf(FP_EINVAL, err, errlen, "config.hostname: needs a host name");
	if (!d->meta_data)
		return fp_errf(FP_EINVAL, err, errlen, "config.metaData: needs a string");
	if (strlen(d->meta_data) > DEPLOY_META_MAX)
		return fp_errf(FP_EINVAL, err, errlen, "config.metaData: over %zu bytes",
			       DEPLOY_META_MAX);
	if (ud && !json_is_null(ud)) {
		if (!json_is_string(ud))
			return fp_errf(FP_EINVAL, err, errlen,
				       "config.userData: needs a string or null");
		if (json_string_length(ud) > DEPLOY_USER_MAX)
			return fp_errf(FP_EINVAL, err, errlen, "config.userData: over %zu bytes",
				       DEPLOY_USER_MAX);
		d->user_data = json_string_value(ud);
	}
	return 0;
}

const struct inventory_disk *deploy_pick_disk(const struct inventory_disk *disks, size_t n,
					      uint64_t need)
{
	const struct inventory_disk *best = NULL;
	for (size_t i = 0; i < n; i++) {
		const struct inventory_disk *d = &disks[i];
		if (d->removable || d->size_bytes < need)
			continue;
		if (!best || d->size_bytes < best->size_bytes)
			best = d;
	}
	return best;
}

int deploy_fat_label(const unsigned char *bs, size_t n, char *label, size_t labellen)
{
	if (labellen)
		label[0] = '\0';
	if (n < 512 || bs[510] != 0x55 || bs[511] != 0xAA)
		return FP_ENOTFOUND;
	unsigned bytes_per_sec = bs[11] | (unsigned)bs[12] << 8;
	if (bytes_per_sec < 512 || bytes_per_sec > 4096 || (bytes_per_sec & (bytes_per_sec - 1)))
		return FP_ENOTFOUND; /* BPB_BytsPerSec: 512, 1024, 2048 or 4096 */
	unsigned fatsz16 = bs[22] | (unsigned)bs[23] << 8;
	size_t sig = fatsz16 == 0 ? 66 : 38, lab = fatsz16 == 0 ? 71 : 43;
	if (bs[sig] != 0x29)
		return FP_ENOTFOUND;
	size_t k = 11;
	while (k && (bs[lab + k - 1] == ' ' || bs[lab + k - 1] == '\0'))
		k--;
	if (k >= labellen)
		k = labellen ? labellen - 1 : 0;
	for (size_t i = 0; i < k; i++)
		label[i] = bs[lab + i] >= 0x20 && bs[lab + i] < 0x7f ? (char)bs[lab + i] : '?';
	if (labellen)
		label[k] = '\0';
	return 0;
}

static uint32_t dp_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int deploy_mbr_partitions(const unsigned char *mbr, size_t n, struct deploy_part *out)
{
	if (n < 512 || mbr[510] != 0x55 || mbr[511] != 0xAA)
		return FP_ENOTFOUND;
	int k = 0;
	for (int i = 0; i < 4; i++) {
		const unsigned char *e = mbr + 446 + 16 * i;
		if (e[4] == 0 || dp_le32(e + 12) == 0)
			continue;
		out[k].index = i + 1;
		out[k].type = e[4];
		out[k].start_lba = dp_le32(e + 8);
		out[k].sectors = dp_le32(e + 12);
		k++;
	}
	return k;
}

/* 1 when text has a line starting with "key:". */
static int dp_has_key(const char *text, const char *key)
{
	size_t kl = strlen(key);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, key, kl) == 0 && p[kl] == ':')
			return 1;
	return 0;
}

char *deploy_meta_data(const struct deploy_doc *doc, const char *node, const char *server,
		       const char *token)
{
	struct buf b;
	buf_init(&b, DEPLOY_META_MAX + 4096);
	const char *m = doc->meta_data ? doc->meta_data : "";
	buf_puts(&b, m);
	if (b.len && m[b.len - 1] != '\n')
		buf_puts(&b, "\n");
	if (!dp_has_key(m, "instance-id"))
		buf_printf(&b, "instance-id: %s\n", node);
	if (!dp_has_key(m, "local-hostname"))
		buf_printf(&b, "local-hostname: %s\n", doc->hostname);
	if (!dp_has_key(m, "fleetplane-node"))
		buf_printf(&b, "fleetplane-node: %s\n", node);
	if (!dp_has_key(m, "fleetplane-url"))
		buf_printf(&b, "fleetplane-url: %s\n", server);
	if (!dp_has_key(m, "fleetplane-token"))
		buf_printf(&b, "fleetplane-token: %s\n", token);
	size_t len;
	return buf_detach(&b, &len);
}

json_t *deploy_report_json(const char *node, const char *token, const struct deploy_result *res)
{
	return json_pack("{s:s,s:s,s:b,s:s,s:I,s:s,s:o}", "node", node, "token", token, "ok",
			 res->ok, "sha256", res->sha256, "bytes", (json_int_t)res->bytes, "disk",
			 res->disk, "message", jsonx_string_lossy(res->message));
}

/* ------------------------------------------------------------------ the write */

static FILE *dp_out(const struct deploy_opts *o)
{
	return o->out ? o->out : stdout;
}

struct dp_stream {
	int fd;
	uint64_t limit;   /* bytes allowed: the document's sizeBytes */
	uint64_t written; /* bytes given to pwrite successfully */
	uint64_t seen;    /* bytes received */
	crypto_hash_sha256_state sha;
	unsigned char *chunk;
	size_t fill;
	int werrno; /* errno of a failed pwrite */
	int over;   /* more bytes than limit arrived */
	FILE *out;  /* progress lines, one per tenth of the image */
	int tenth;  /* the last tenth printed */
};

static int dp_pwrite_all(int fd, const unsigned char *p, size_t n, uint64_t off)
{
	while (n) {
		ssize_t w = pwrite(fd, p, n, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? errno : EIO;
		p += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

static int dp_flush(struct dp_stream *s)
{
	if (!s->fill)
		return 0;
	int e = dp_pwrite_all(s->fd, s->chunk, s->fill, s->written);
	if (e) {
		s->werrno = e;
		return -1;
	}
	s->written += s->fill;
	s->fill = 0;
	return 0;
}

static size_t dp_write_cb(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct dp_stream *s = arg;
	size_t n = size * nmemb, done = 0;
	if (s->seen + n > s->limit) {
		s->over = 1;
		return 0; /* CURLE_WRITE_ERROR: the image is larger than announced */
	}
	s->seen += n;
	crypto_hash_sha256_update(&s->sha, (const unsigned char *)ptr, n);
	while (done < n) {
		size_t k = DEPLOY_CHUNK - s->fill;
		if (k > n - done)
			k = n - done;
		memcpy(s->chunk + s->fill, ptr + done, k);
		s->fill += k;
		done += k;
		if (s->fill == DEPLOY_CHUNK && dp_flush(s) < 0)
			return 0;
	}
	int tenth = (int)(s->seen * 10 / s->limit);
	if (tenth > s->tenth && tenth < 10) {
		s->tenth = tenth;
		fprintf(s->out, "deploy: %d0%% (%llu of %llu bytes)\n", tenth,
			(unsigned long long)s->seen, (unsigned long long)s->limit);
		fflush(s->out);
	}
	return n;
}

static void dp_hex(const unsigned char *h, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hex[h[i] >> 4];
		out[2 * i + 1] = hex[h[i] & 15];
	}
	out[2 * n] = '\0';
}

/* Zeroes the first DEPLOY_ZERO_BYTES (at most disk_size) of fd and syncs. Returns 0 or an
 * errno. */
static int dp_zero_head(int fd, uint64_t disk_size)
{
	size_t n = disk_size < DEPLOY_ZERO_BYTES ? (size_t)disk_size : DEPLOY_ZERO_BYTES;
	unsigned char *z = xcalloc(1, n ? n : 1);
	int e = dp_pwrite_all(fd, z, n, 0);
	free(z);
	if (!e && fsync(fd) < 0)
		e = errno;
	return e;
}

/* Streams url into fd from offset 0: at most doc->size_bytes bytes, then checks the size and
 * the sum. res gets sha256, bytes and (on failure) message. Returns 0 or -1; on -1 after any
 * byte was written the head of the disk is zeroed. */
static int dp_write_image(const struct deploy_opts *o, int fd, uint64_t disk_size, const char *url,
			  const struct deploy_doc *doc, struct deploy_result *res)
{
	struct dp_stream s;
	memset(&s, 0, sizeof(s));
	s.fd = fd;
	s.limit = doc->size_bytes;
	s.out = dp_out(o);
	s.chunk = xmalloc(DEPLOY_CHUNK);
	crypto_hash_sha256_init(&s.sha);
	char errbuf[CURL_ERROR_SIZE] = "";
	int rc = -1;
	CURL *h = curl_easy_init();
	if (!h) {
		snprintf(res->message, sizeof(res->message), "libcurl does not initialise");
		free(s.chunk);
		return -1;
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(h, CURLOPT_MAXREDIRS, 3L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_FAILONERROR, 1L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, BOOTCLIENT_CONNECT_TIMEOUT_MS);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1024L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, o->low_speed_s > 0 ? o->low_speed_s : 60L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "fleetplane-agent/1");
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, dp_write_cb);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
	CURLcode cc = curl_easy_perform(h);
	if (cc == CURLE_OK)
		dp_flush(&s);
	unsigned char sum[crypto_hash_sha256_BYTES];
	crypto_hash_sha256_final(&s.sha, sum);
	dp_hex(sum, sizeof(sum), res->sha256);
	res->bytes = s.seen;
	if (s.over)
		snprintf(res->message, sizeof(res->message),
			 "image %s sent more than its sizeBytes %llu", doc->image_name,
			 (unsigned long long)doc->size_bytes);
	else if (s.werrno)
		snprintf(res->message, sizeof(res->message), "write to %s at byte %llu: %s",
			 res->disk, (unsigned long long)s.written, strerror(s.werrno));
	else if (cc != CURLE_OK)
		snprintf(res->message, sizeof(res->message),
			 "download of %s failed after %llu bytes: %s", url,
			 (unsigned long long)s.seen, errbuf[0] ? errbuf : curl_easy_strerror(cc));
	else if (s.seen != doc->size_bytes)
		snprintf(res->message, sizeof(res->message),
			 "image %s is %llu bytes, the document says %llu", doc->image_name,
			 (unsigned long long)s.seen, (unsigned long long)doc->size_bytes);
	else if (strcmp(res->sha256, doc->sha256) != 0)
		snprintf(res->message, sizeof(res->message),
			 "sha256 mismatch for %s: expected %s, seen %s", doc->image_name,
			 doc->sha256, res->sha256);
	else if (fsync(fd) < 0)
		snprintf(res->message, sizeof(res->message), "fsync %s: %s", res->disk,
			 strerror(errno));
	else
		rc = 0;
	if (rc < 0 && (s.written || s.fill)) {
		int e = dp_zero_head(fd, disk_size);
		size_t ml = strlen(res->message);
		if (e)
			snprintf(res->message + ml, sizeof(res->message) - ml,
				 "; zeroing the first MiB failed too: %s", strerror(e));
		else
			snprintf(res->message + ml, sizeof(res->message) - ml,
				 "; the first MiB of %s was zeroed", res->disk);
	}
	curl_easy_cleanup(h);
	free(s.chunk);
	return rc;
}

/* ------------------------------------------------------------------ the seed */

static int dp_read_at(int fd, unsigned char *p, size_t n, uint64_t off)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = pread(fd, p + got, n - got, (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

/* Writes name with text into dir through mcopy -i image@@offset. Returns 0 or -1 with msg. */
static int dp_mcopy(const char *image, uint64_t offset, const char *tmpdir, const char *name,
		    const char *text, char *msg, size_t msglen)
{
	char src[PATH_MAX], dst[64], img[PATH_MAX + 32], err[256];
	snprintf(src, sizeof(src), "%s/%s", tmpdir, name);
	struct buf b;
	buf_init(&b, DEPLOY_USER_MAX + DEPLOY_META_MAX + 8192);
	buf_puts(&b, text);
	int rc = buf_write_file(&b, src, err, sizeof(err));
	buf_release(&b);
	if (rc < 0) {
		snprintf(msg, msglen, "%s", err);
		return -1;
	}
	snprintf(dst, sizeof(dst), "::%s", name);
	snprintf(img, sizeof(img), "%s@@%llu", image, (unsigned long long)offset);
	char *argv[] = {"mcopy", "-D", "o", "-i", img, src, dst, NULL};
	const char *path = getenv("PATH");
	char *penv = xasprintf("PATH=%s", path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
	char *envp[] = {penv, "MTOOLS_SKIP_CHECK=1", NULL};
	struct proc_opts po = {.envp = envp, .max_err = 4096};
	struct proc_result res;
	rc = proc_run(argv, 30000, 65536, &po, &res, err, sizeof(err));
	free(penv);
	unlink(src);
	if (rc < 0) {
		snprintf(msg, msglen, "mcopy: %s", err);
		proc_result_release(&res);
		return -1;
	}
	if (!res.exited || res.exit_status != 0) {
		snprintf(msg, msglen, "mcopy %s to %s failed (exit %d): %.200s", name, image,
			 res.exit_status, res.err.data ? res.err.data : "");
		proc_result_release(&res);
		return -1;
	}
	proc_result_release(&res);
	return 0;
}

/* The seed into a regular file: the CIDATA partition found through the MBR. */
static int dp_seed_file(int fd, const char *image, const char *meta, const char *user, char *msg,
			size_t msglen, char *where, size_t wherelen)
{
	unsigned char sec[512];
	struct deploy_part parts[4];
	if (dp_read_at(fd, sec, sizeof(sec), 0) < 0) {
		snprintf(msg, msglen, "cannot read the MBR of %s", image);
		return -1;
	}
	int np = deploy_mbr_partitions(sec, sizeof(sec), parts);
	if (np < 0) {
		snprintf(msg, msglen, "no CIDATA partition: %s has no MBR partition table", image);
		return -1;
	}
	for (int i = 0; i < np; i++) {
		char label[16];
		uint64_t off = parts[i].start_lba * 512;
		if (dp_read_at(fd, sec, sizeof(sec), off) < 0 ||
		    deploy_fat_label(sec, sizeof(sec), label, sizeof(label)) < 0 ||
		    strcasecmp(label, "CIDATA") != 0)
			continue;
		snprintf(where, wherelen, "%s partition %d (offset %llu)", image, parts[i].index,
			 (unsigned long long)off);
		char tmpdir[] = "/tmp/fleetplane-seed.XXXXXX";
		if (!mkdtemp(tmpdir)) {
			snprintf(msg, msglen, "mkdtemp: %s", strerror(errno));
			return -1;
		}
		int rc = dp_mcopy(image, off, tmpdir, "meta-data", meta, msg, msglen);
		if (rc == 0 && user)
			rc = dp_mcopy(image, off, tmpdir, "user-data", user, msg, msglen);
		rmdir(tmpdir);
		return rc;
	}
	snprintf(msg, msglen,
		 "no CIDATA partition: no FAT partition labelled CIDATA in the MBR of %s", image);
	return -1;
}

/* Writes name into the mounted dir atomically (tmp + fsync + rename + dir fsync). */
static int dp_write_seed_file(const char *dir, const char *name, const char *text, char *msg,
			      size_t msglen)
{
	char path[PATH_MAX], err[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	struct buf b;
	buf_init(&b, DEPLOY_USER_MAX + DEPLOY_META_MAX + 8192);
	buf_puts(&b, text);
	int rc = buf_write_file(&b, path, err, sizeof(err));
	buf_release(&b);
	if (rc < 0)
		snprintf(msg, msglen, "write %s on CIDATA: %s", name, err);
	return rc < 0 ? -1 : 0;
}

/* The seed into a block device: partitions from root/sys/block/<disk>/<part>/partition, each
 * opened as /dev/<part>, the CIDATA one mounted vfat. *try_mbr is set when the kernel showed
 * no partition within 5 s (a kernel without the MBR partition parser) or has no vfat
 * (mount: ENODEV): the caller then tries the MBR and mcopy. */
static int dp_seed_block(const struct deploy_opts *o, const char *disk, const char *meta,
			 const char *user, char *msg, size_t msglen, char *where, size_t wherelen,
			 int *try_mbr)
{
	*try_mbr = 0;
	char real[PATH_MAX];
	if (!realpath(disk, real)) {
		snprintf(msg, msglen, "realpath %s: %s", disk, strerror(errno));
		return -1;
	}
	const char *dname = strrchr(real, '/') ? strrchr(real, '/') + 1 : real;
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "/sys/block/%.200s", dname);
	/* After BLKRRPART the kernel adds the partitions; devtmpfs makes their nodes. Wait a
	 * little for them (at most 5 s). */
	for (int attempt = 0; attempt < 25; attempt++) {
		char sysdir[PATH_MAX];
		snprintf(sysdir, sizeof(sysdir), "%s%s",
			 strcmp(o->sysfs_root ? o->sysfs_root : "/", "/") == 0 ? "" : o->sysfs_root,
			 dir);
		size_t dlen = strlen(dname);
		DIR *dd = opendir(sysdir);
		int found_any = 0;
		if (dd) {
			struct dirent *e;
			while ((e = readdir(dd)) != NULL) {
				if (strncmp(e->d_name, dname, dlen) != 0 || !e->d_name[dlen])
					continue;
				char pf[PATH_MAX + 300];
				snprintf(pf, sizeof(pf), "%s/%s/partition", sysdir, e->d_name);
				struct stat st;
				if (stat(pf, &st) < 0)
					continue;
				found_any = 1;
				char dev[PATH_MAX];
				snprintf(dev, sizeof(dev), "/dev/%s", e->d_name);
				int pfd = open(dev, O_RDONLY | O_CLOEXEC);
				if (pfd < 0)
					continue;
				unsigned char sec[512];
				char label[16];
				int hit = dp_read_at(pfd, sec, sizeof(sec), 0) == 0 &&
					  deploy_fat_label(sec, sizeof(sec), label,
							   sizeof(label)) == 0 &&
					  strcasecmp(label, "CIDATA") == 0;
				close(pfd);
				if (!hit)
					continue;
				closedir(dd);
				snprintf(where, wherelen, "%s", dev);
				char mnt[] = "/tmp/fleetplane-cidata.XXXXXX";
				if (!mkdtemp(mnt)) {
					snprintf(msg, msglen, "mkdtemp: %s", strerror(errno));
					return -1;
				}
				if (mount(dev, mnt, "vfat", MS_NOSUID | MS_NODEV | MS_NOEXEC,
					  NULL) < 0) {
					*try_mbr = errno == ENODEV;
					snprintf(msg, msglen, "mount %.200s vfat: %s", dev,
						 strerror(errno));
					rmdir(mnt);
					return -1;
				}
				int rc = dp_write_seed_file(mnt, "meta-data", meta, msg, msglen);
				if (rc == 0 && user)
					rc = dp_write_seed_file(mnt, "user-data", user, msg,
								msglen);
				if (umount2(mnt, 0) < 0 && rc == 0) {
					snprintf(msg, msglen, "umount %s: %s", mnt,
						 strerror(errno));
					rc = -1;
				}
				rmdir(mnt);
				return rc;
			}
			closedir(dd);
		}
		if (found_any) {
			snprintf(msg, msglen,
				 "no CIDATA partition: no vfat partition labelled CIDATA on %s",
				 disk);
			return -1;
		}
		struct timespec ts = {0, 200 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	*try_mbr = 1;
	snprintf(msg, msglen, "no partition of %.200s appeared in %.200s within 5 s", disk, dir);
	return -1;
}

/* ------------------------------------------------------------------ the run */

/* POSTs the report. Returns 0 (2xx), FP_EIO (unreachable) or FP_EINVAL (refused). */
static int dp_report(const struct deploy_opts *o, struct deploy_result *res)
{
	json_t *body = deploy_report_json(o->node, o->token, res), *answer = NULL;
	char err[512];
	long status = 0;
	int rc = bootclient_request(&o->client, "POST", "/boot/deployed", body, &status, &answer,
				    err, sizeof(err));
	json_decref(body);
	res->report_status = status;
	if (rc == 0 && status >= 200 && status < 300) {
		res->reported = 1;
	} else if (rc == 0) {
		bootclient_describe(status, answer, err, sizeof(err));
		fprintf(stderr, "error: POST /boot/deployed refused: %s\n", err);
		rc = FP_EINVAL;
	} else {
		fprintf(stderr, "error: POST /boot/deployed: %s\n", err);
		if (rc != FP_EIO)
			rc = FP_EINVAL;
	}
	json_decref(answer);
	return rc;
}

/* Reports a failure (res->ok 0, message set) and returns fail_rc, or FP_EIO when the report
 * could not be delivered. */
static int dp_fail(const struct deploy_opts *o, struct deploy_result *res, int fail_rc)
{
	res->ok = 0;
	fprintf(stderr, "error: deploy failed: %s\n", res->message);
	if (o->dry_run)
		return fail_rc;
	int rc = dp_report(o, res);
	return rc == FP_EIO ? FP_EIO : fail_rc;
}

int deploy_run(const struct deploy_opts *o, struct deploy_result *res)
{
	memset(res, 0, sizeof(*res));
	FILE *out = dp_out(o);
	char err[512];
	if (sodium_init() < 0 || curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, "error: libsodium or libcurl does not initialise\n");
		return FP_EAGAIN;
	}
	char *qn = bootclient_escape(o->node), *qt = bootclient_escape(o->token);
	char *path = xasprintf("/boot/deploy?node=%s&token=%s", qn, qt);
	free(qn);
	free(qt);
	json_t *doc = NULL;
	long status = 0;
	int rc = bootclient_request(&o->client, "GET", path, NULL, &status, &doc, err, sizeof(err));
	free(path);
	if (rc < 0) {
		fprintf(stderr, "error: GET /boot/deploy: %s\n", err);
		return rc == FP_EIO ? FP_EIO : FP_EINVAL;
	}
	if (status != 200) {
		bootclient_describe(status, doc, err, sizeof(err));
		fprintf(stderr, "error: GET /boot/deploy refused: %s\n", err);
		json_decref(doc);
		return FP_EINVAL;
	}
	struct deploy_doc d;
	if (deploy_doc_parse(doc, &d, err, sizeof(err)) < 0) {
		snprintf(res->message, sizeof(res->message), "the deploy document is refused: %s",
			 err);
		rc = dp_fail(o, res, FP_EINVAL);
		goto out;
	}

	/* The disk: --root-device, else the document's rootDevice, else the contract's rule. */
	struct inventory_disk *disks = NULL;
	const char *disk = o->root_device ? o->root_device : d.root_device;
	if (!disk) {
		disks = xcalloc(INVENTORY_MAX_DISKS, sizeof(*disks));
		size_t skipped = 0;
		int trunc = 0;
		size_t nd = inventory_read_disks(o->sysfs_root ? o->sysfs_root : "/", disks,
						 INVENTORY_MAX_DISKS, &skipped, &trunc);
		const struct inventory_disk *pick = deploy_pick_disk(disks, nd, d.size_bytes);
		if (!pick) {
			free(disks);
			snprintf(res->message, sizeof(res->message),
				 "no non-removable disk of at least %llu bytes among %zu disks",
				 (unsigned long long)d.size_bytes, nd);
			rc = dp_fail(o, res, FP_ETOOBIG);
			goto out;
		}
		snprintf(res->disk, sizeof(res->disk), "%s", pick->path);
		free(disks);
	} else {
		snprintf(res->disk, sizeof(res->disk), "%s", disk);
	}

	struct stat st;
	int is_block = 0;
	int st_rc = stat(res->disk, &st);
	if (st_rc < 0 || !(S_ISBLK(st.st_mode) || S_ISREG(st.st_mode))) {
		snprintf(res->message, sizeof(res->message), "disk %s: %s", res->disk,
			 st_rc < 0 ? strerror(errno) : "not a block device or regular file");
		rc = dp_fail(o, res, FP_EINVAL);
		goto out;
	}
	is_block = S_ISBLK(st.st_mode);
	int fd = open(res->disk, (o->dry_run ? O_RDONLY : O_RDWR) | O_CLOEXEC |
					 (is_block && !o->dry_run ? O_EXCL : 0));
	if (fd < 0) {
		snprintf(res->message, sizeof(res->message), "open %s: %s", res->disk,
			 strerror(errno));
		rc = dp_fail(o, res, FP_EAGAIN);
		goto out;
	}
	uint64_t disk_size = (uint64_t)st.st_size;
	if (is_block && ioctl(fd, BLKGETSIZE64, &disk_size) < 0) {
		snprintf(res->message, sizeof(res->message), "BLKGETSIZE64 %s: %s", res->disk,
			 strerror(errno));
		close(fd);
		rc = dp_fail(o, res, FP_EAGAIN);
		goto out;
	}
	if (d.size_bytes > disk_size) {
		snprintf(
			res->message, sizeof(res->message),
			"image %s is %llu bytes, larger than disk %s (%llu bytes); nothing written",
			d.image_name, (unsigned long long)d.size_bytes, res->disk,
			(unsigned long long)disk_size);
		close(fd);
		rc = dp_fail(o, res, FP_ETOOBIG);
		goto out;
	}
	char *url = d.image_url[0] == '/' ? xasprintf("%s%s", o->client.server, d.image_url)
					  : xstrdup(d.image_url);
	if (bootclient_url_check(url, err, sizeof(err)) < 0) {
		snprintf(res->message, sizeof(res->message), "image.url %.200s: %s", url, err);
		free(url);
		close(fd);
		rc = dp_fail(o, res, FP_EINVAL);
		goto out;
	}
	char *meta = deploy_meta_data(&d, o->node, o->client.server, o->token);
	if (o->dry_run) {
		fprintf(out,
			"deploy: dry run: would write %s (%llu bytes, sha256 %s) from %s to %s "
			"(%s, %llu bytes), then meta-data (%zu bytes)%s%s into its CIDATA "
			"partition; nothing written, nothing reported\n",
			d.image_name, (unsigned long long)d.size_bytes, d.sha256, url, res->disk,
			is_block ? "block device" : "regular file", (unsigned long long)disk_size,
			strlen(meta), d.user_data ? " and user-data" : "",
			d.user_data ? "" : " (no user-data)");
		res->ok = 1;
		snprintf(res->message, sizeof(res->message), "dry run");
		rc = 0;
		goto done;
	}
	fprintf(out, "deploy: writing %s (%llu bytes) to %s\n", d.image_name,
		(unsigned long long)d.size_bytes, res->disk);
	fflush(out);
	if (dp_write_image(o, fd, disk_size, url, &d, res) < 0) {
		rc = dp_fail(o, res, FP_EAGAIN);
		goto done;
	}
	if (is_block) {
		/* Re-read the partition table on a non-exclusive descriptor (partprobe does the
		 * same); EBUSY right after the write is retried. */
		close(fd);
		fd = open(res->disk, O_RDONLY | O_CLOEXEC);
		int e = 0;
		for (int i = 0; fd >= 0 && i < 10; i++) {
			if (ioctl(fd, BLKRRPART) == 0) {
				e = 0;
				break;
			}
			e = errno;
			if (e != EBUSY)
				break;
			struct timespec ts = {0, 200 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
		if (e && e != EINVAL)
			fprintf(stderr, "warning: BLKRRPART %s: %s\n", res->disk, strerror(e));
	}
	char where[PATH_MAX + 64] = "";
	char msg[512] = "";
	int try_mbr = 0;
	int seeded = is_block ? dp_seed_block(o, res->disk, meta, d.user_data, msg, sizeof(msg),
					      where, sizeof(where), &try_mbr)
			      : dp_seed_file(fd, res->disk, meta, d.user_data, msg, sizeof(msg),
					     where, sizeof(where));
	if (seeded < 0 && try_mbr) {
		/* The kernel cannot show or mount the partition: the MBR and mtools on the
		 * disk itself, as for a regular file. */
		char m2[512];
		fprintf(stderr, "warning: %s; trying the MBR and mcopy\n", msg);
		seeded = dp_seed_file(fd, res->disk, meta, d.user_data, m2, sizeof(m2), where,
				      sizeof(where));
		size_t ml = strlen(msg);
		if (seeded < 0)
			snprintf(msg + ml, sizeof(msg) - ml, "; then %.200s", m2);
	}
	if (seeded < 0) {
		snprintf(res->message, sizeof(res->message), "image written and verified; %s", msg);
		rc = dp_fail(o, res, FP_ENOTFOUND);
		goto done;
	}
	res->ok = 1;
	snprintf(res->message, sizeof(res->message),
		 "wrote %.100s (%llu bytes, sha256 %s) to %.255s; seed meta-data%s on %.400s",
		 d.image_name, (unsigned long long)res->bytes, res->sha256, res->disk,
		 d.user_data ? " and user-data" : "", where);
	fprintf(out, "deploy: %s\n", res->message);
	rc = dp_report(o, res);
done:
	free(meta);
	free(url);
	if (fd >= 0)
		close(fd);
out:
	json_decref(doc);
	return rc;
}
