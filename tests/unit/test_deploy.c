/* layers: base core agent */
/* test_deploy.c - `fleetplane agent deploy` and the /boot calls (agent/deploy.h,
 * agent/bootclient.h) against a fake fleetplane in this process (libmicrohttpd on 127.0.0.1,
 * ephemeral port) that serves a /boot/deploy document and an 8 MiB image and records the
 * /boot/deployed and /boot/inspect bodies. The disk is a regular file, so the image's CIDATA
 * partition is found through its MBR and the seed is written (and read back here) with mtools;
 * the tests that need mtools are skipped when mformat is not in PATH.
 *
 * The image: an MBR with one partition (type 0x0c, LBA 2048, 8192 sectors = 4 MiB at 1 MiB)
 * formatted FAT12 with label CIDATA by mformat, the rest a byte pattern. */
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <pthread.h>
#include <setjmp.h>
#include <sodium.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "check.h"

#include "agent/bootclient.h"
#include "agent/deploy.h"
#include "agent/probe.h"
#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/proc.h"

#include "base/banned.h"

#define IMG_SIZE ((size_t)8 << 20)
#define PART_OFF ((uint64_t)1 << 20)
#define MIB ((size_t)1 << 20)

static struct {
	struct MHD_Daemon *d;
	unsigned port;
	pthread_mutex_t mu;
	unsigned char *image;
	size_t image_len; /* bytes served (may differ from the document's sizeBytes) */
	char *doc;        /* the /boot/deploy answer */
	int image_gets;
	int deploy_gets;
	char deploy_query[256];
	char *deployed; /* the last /boot/deployed body */
	char *inspect;  /* the last /boot/inspect body */
	int have_mtools;
	char sha[65];
	char dir[256];
} fake = {.mu = PTHREAD_MUTEX_INITIALIZER};

struct fake_conn {
	char *body;
	size_t len;
};

static enum MHD_Result fake_reply(struct MHD_Connection *conn, unsigned status, const char *ctype,
				  const void *data, size_t len, int copy)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)data,
								 copy ? MHD_RESPMEM_MUST_COPY
								      : MHD_RESPMEM_PERSISTENT);
	MHD_add_response_header(r, "Content-Type", ctype);
	enum MHD_Result ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result fake_handler(void *cls, struct MHD_Connection *conn, const char *url,
				    const char *method, const char *version, const char *upload,
				    size_t *upload_size, void **con_cls)
{
	struct fake_conn *fc = *con_cls;
	if (!fc) {
		*con_cls = xcalloc(1, sizeof(*fc));
		return MHD_YES;
	}
	if (*upload_size) {
		fc->body = xrealloc(fc->body, fc->len + *upload_size + 1);
		memcpy(fc->body + fc->len, upload, *upload_size);
		fc->len += *upload_size;
		fc->body[fc->len] = '\0';
		*upload_size = 0;
		return MHD_YES;
	}
	static const char forbidden[] = "{\"error\":\"token of an older attempt\"}";
	static const char ok[] = "{\"ok\":true}";
	static const char accepted[] = "{\"accepted\":true}";
	enum MHD_Result ret;
	pthread_mutex_lock(&fake.mu);
	if (!strcmp(method, "GET") && !strcmp(url, "/boot/deploy")) {
		const char *node = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "node");
		const char *tok = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "token");
		fake.deploy_gets++;
		snprintf(fake.deploy_query, sizeof(fake.deploy_query), "node=%s token=%s",
			 node ? node : "", tok ? tok : "");
		if (tok && !strcmp(tok, "broken"))
			ret = fake_reply(conn, 200, "application/json", "{nope", 5, 0);
		else if (tok && !strcmp(tok, "old"))
			ret = fake_reply(conn, 403, "application/json", forbidden,
					 strlen(forbidden), 0);
		else
			ret = fake_reply(conn, 200, "application/json", fake.doc, strlen(fake.doc),
					 1);
	} else if (!strcmp(method, "GET") && !strcmp(url, "/boot/files/os.img")) {
		fake.image_gets++;
		ret = fake_reply(conn, 200, "application/octet-stream", fake.image, fake.image_len,
				 0);
	} else if (!strcmp(method, "POST") && !strcmp(url, "/boot/deployed")) {
		free(fake.deployed);
		fake.deployed = xstrdup(fc->body ? fc->body : "");
		ret = fake_reply(conn, 200, "application/json", ok, strlen(ok), 0);
	} else if (!strcmp(method, "POST") && !strcmp(url, "/boot/inspect")) {
		free(fake.inspect);
		fake.inspect = xstrdup(fc->body ? fc->body : "");
		if (fc->body && strstr(fc->body, "\"token\":\"old\""))
			ret = fake_reply(conn, 403, "application/json", forbidden,
					 strlen(forbidden), 0);
		else
			ret = fake_reply(conn, 200, "application/json", accepted, strlen(accepted),
					 0);
	} else {
		ret = fake_reply(conn, 404, "text/plain", "no route\n", 9, 0);
	}
	pthread_mutex_unlock(&fake.mu);
	return ret;
}

static void fake_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			   enum MHD_RequestTerminationCode toe)
{
	struct fake_conn *fc = *con_cls;
	if (fc)
		free(fc->body);
	free(fc);
	*con_cls = NULL;
}

/* Runs argv with MTOOLS_SKIP_CHECK=1; returns its stdout (malloc'd) or NULL on failure. */
static char *run_mtools(char *const argv[])
{
	const char *path = getenv("PATH");
	char *penv = xasprintf("PATH=%s", path ? path : "/usr/bin:/bin");
	char *envp[] = {penv, "MTOOLS_SKIP_CHECK=1", NULL};
	struct proc_opts po = {.envp = envp};
	struct proc_result res;
	char err[256];
	int rc = proc_run(argv, 20000, 1 << 20, &po, &res, err, sizeof(err));
	free(penv);
	char *out = NULL;
	size_t len;
	if (rc == 0 && res.exited && res.exit_status == 0)
		out = buf_detach(&res.out, &len);
	proc_result_release(&res);
	return out;
}

static void sha_hex(const unsigned char *p, size_t n, char *out)
{
	unsigned char h[crypto_hash_sha256_BYTES];
	crypto_hash_sha256(h, p, n);
	for (size_t i = 0; i < sizeof(h); i++)
		snprintf(out + 2 * i, 3, "%02x", h[i]);
}

/* The image file: MBR + FAT12 CIDATA partition at 1 MiB + pattern. */
static int build_image(void)
{
	char path[300];
	snprintf(path, sizeof(path), "%s/os.img", fake.dir);
	unsigned char *img = xcalloc(1, IMG_SIZE);
	for (size_t i = 6 * MIB; i < IMG_SIZE; i++)
		img[i] = (unsigned char)(i * 7 + 3);
	unsigned char *e = img + 446;
	e[4] = 0x0c;
	e[8] = 0x00, e[9] = 0x08, e[10] = 0, e[11] = 0;   /* LBA 2048 */
	e[12] = 0x00, e[13] = 0x20, e[14] = 0, e[15] = 0; /* 8192 sectors */
	img[510] = 0x55;
	img[511] = 0xAA;
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(img, 1, IMG_SIZE, f) != IMG_SIZE) {
		free(img);
		return -1;
	}
	fclose(f);
	char where[PATH_MAX];
	fake.have_mtools = probe_which("mformat", where, sizeof(where)) == 0 &&
			   probe_which("mcopy", where, sizeof(where)) == 0;
	if (fake.have_mtools) {
		char *arg = xasprintf("%s@@%llu", path, (unsigned long long)PART_OFF);
		char *argv[] = {"mformat", "-i", arg,  "-T",     "8192", "-h", "1",
				"-s",      "32", "-v", "CIDATA", "::",   NULL};
		char *out = run_mtools(argv);
		free(arg);
		if (!out)
			fake.have_mtools = 0;
		free(out);
		f = fopen(path, "rb");
		if (!f || fread(img, 1, IMG_SIZE, f) != IMG_SIZE) {
			free(img);
			return -1;
		}
		fclose(f);
	}
	fake.image = img;
	fake.image_len = IMG_SIZE;
	sha_hex(img, IMG_SIZE, fake.sha);
	return 0;
}

static int setup(void **state)
{
	if (sodium_init() < 0)
		return -1;
	snprintf(fake.dir, sizeof(fake.dir), "%s/fp-deploy.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(fake.dir) || build_image() < 0)
		return -1;
	fake.d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL, 0, NULL, NULL,
				  fake_handler, NULL, MHD_OPTION_NOTIFY_COMPLETED, fake_completed,
				  NULL, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
				  MHD_OPTION_END);
	if (!fake.d)
		return -1;
	fake.port = MHD_get_daemon_info(fake.d, MHD_DAEMON_INFO_BIND_PORT)->port;
	return 0;
}

static int teardown(void **state)
{
	MHD_stop_daemon(fake.d);
	char path[300];
	snprintf(path, sizeof(path), "%s/os.img", fake.dir);
	unlink(path);
	rmdir(fake.dir);
	free(fake.image);
	free(fake.doc);
	free(fake.deployed);
	free(fake.inspect);
	return 0;
}

static char server[64];

/* Per test: a fresh document (sha and size as given), no recorded calls. */
static void reset(const char *sha, uint64_t size, const char *url)
{
	pthread_mutex_lock(&fake.mu);
	free(fake.doc);
	fake.doc = xasprintf(
		"{\"image\":{\"name\":\"os.img\",\"url\":\"%s\",\"sha256\":\"%s\",\"sizeBytes\":"
		"%llu},\"rootDevice\":null,\"config\":{\"hostname\":\"r01n01\",\"metaData\":"
		"\"instance-id: r01n01-op7\\nlocal-hostname: r01n01\\n\",\"userData\":"
		"\"#cloud-config\\nruncmd: [true]\\n\"}}",
		url, sha, (unsigned long long)size);
	free(fake.deployed);
	fake.deployed = NULL;
	fake.image_gets = fake.deploy_gets = 0;
	fake.image_len = IMG_SIZE;
	pthread_mutex_unlock(&fake.mu);
	snprintf(server, sizeof(server), "http://127.0.0.1:%u", fake.port);
}

/* A disk file of size bytes, every byte 0xAA. */
static void make_disk(const char *path, size_t size)
{
	unsigned char *b = xmalloc(size);
	memset(b, 0xAA, size);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, size, f), size);
	fclose(f);
	free(b);
}

static unsigned char *read_disk(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	rewind(f);
	unsigned char *b = xmalloc((size_t)n);
	assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

static size_t count_byte(const unsigned char *p, size_t n, unsigned char v)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += p[i] == v;
	return k;
}

static FILE *devnull;

static struct deploy_opts opts(const char *disk, const char *token)
{
	struct deploy_opts o = {
		.client = {.server = server, .timeout_ms = 20000},
		.node = "r01n01",
		.token = token,
		.root_device = disk,
		.sysfs_root = "/",
		.out = devnull,
		.low_speed_s = 10,
	};
	return o;
}

static json_t *deployed_doc(void)
{
	json_t *j = NULL;
	char err[128];
	assert_non_null(fake.deployed);
	ASSERT_OK(jsonx_parse(fake.deployed, strlen(fake.deployed), &j, err, sizeof(err)));
	return j;
}

/* ------------------------------------------------------------------ pure parts */

static void test_fat_label(void **state)
{
	unsigned char bs[512];
	char label[16];
	memset(bs, 0, sizeof(bs));
	bs[11] = 0x00, bs[12] = 0x02; /* 512 bytes per sector */
	bs[22] = 0x08;                /* BPB_FATSz16 != 0: FAT12/16 */
	bs[38] = 0x29;
	memcpy(bs + 43, "cidata     ", 11);
	bs[510] = 0x55, bs[511] = 0xAA;
	ASSERT_OK(deploy_fat_label(bs, sizeof(bs), label, sizeof(label)));
	ASSERT_EQ_STR(label, "cidata");
	/* FAT32: BPB_FATSz16 = 0, signature at 66, label at 71 */
	bs[22] = 0;
	bs[38] = 0;
	bs[66] = 0x29;
	memcpy(bs + 71, "CIDATA     ", 11);
	ASSERT_OK(deploy_fat_label(bs, sizeof(bs), label, sizeof(label)));
	ASSERT_EQ_STR(label, "CIDATA");
	bs[66] = 0;
	ASSERT_EQ_ERR(deploy_fat_label(bs, sizeof(bs), label, sizeof(label)), FP_ENOTFOUND);
	bs[66] = 0x29;
	bs[511] = 0;
	ASSERT_EQ_ERR(deploy_fat_label(bs, sizeof(bs), label, sizeof(label)), FP_ENOTFOUND);
	ASSERT_EQ_ERR(deploy_fat_label(bs, 100, label, sizeof(label)), FP_ENOTFOUND);

	/* the real mformat boot sector of the test image (when mtools made it) */
	if (fake.have_mtools) {
		ASSERT_OK(deploy_fat_label(fake.image + PART_OFF, 512, label, sizeof(label)));
		ASSERT_EQ_STR(label, "CIDATA");
	}
}

static void test_mbr(void **state)
{
	struct deploy_part p[4];
	ASSERT_EQ_INT(deploy_mbr_partitions(fake.image, 512, p), 1);
	ASSERT_EQ_INT(p[0].index, 1);
	ASSERT_EQ_INT(p[0].type, 0x0c);
	ASSERT_EQ_INT(p[0].start_lba, 2048);
	ASSERT_EQ_INT(p[0].sectors, 8192);
	unsigned char z[512];
	memset(z, 0, sizeof(z));
	ASSERT_EQ_ERR(deploy_mbr_partitions(z, sizeof(z), p), FP_ENOTFOUND);
}

static void test_doc_and_meta(void **state)
{
	reset(fake.sha, IMG_SIZE, "/boot/files/os.img");
	json_t *j = NULL;
	char err[256];
	ASSERT_OK(jsonx_parse(fake.doc, strlen(fake.doc), &j, err, sizeof(err)));
	struct deploy_doc d;
	ASSERT_OK(deploy_doc_parse(j, &d, err, sizeof(err)));
	ASSERT_EQ_STR(d.image_name, "os.img");
	ASSERT_EQ_INT(d.size_bytes, IMG_SIZE);
	assert_null(d.root_device);
	ASSERT_EQ_STR(d.hostname, "r01n01");
	ASSERT_EQ_STR(d.user_data, "#cloud-config\nruncmd: [true]\n");
	char *m = deploy_meta_data(&d, "r01n01", "http://10.77.0.1:7070", "tok_1");
	ASSERT_EQ_STR(m, "instance-id: r01n01-op7\nlocal-hostname: r01n01\n"
			 "fleetplane-node: r01n01\nfleetplane-url: http://10.77.0.1:7070\n"
			 "fleetplane-token: tok_1\n");
	free(m);

	json_object_set_new(json_object_get(j, "image"), "sha256", json_string("abc"));
	ASSERT_EQ_ERR(deploy_doc_parse(j, &d, err, sizeof(err)), FP_EINVAL);
	ASSERT_EQ_STR(err, "image.sha256: needs 64 hex digits");
	json_object_set_new(json_object_get(j, "image"), "sha256", json_string(fake.sha));
	json_object_set_new(json_object_get(j, "image"), "sizeBytes", json_integer(0));
	ASSERT_EQ_ERR(deploy_doc_parse(j, &d, err, sizeof(err)), FP_EINVAL);
	ASSERT_EQ_STR(err, "image.sizeBytes: needs an integer > 0");
	json_object_set_new(json_object_get(j, "image"), "sizeBytes", json_integer(5));
	json_object_set_new(j, "rootDevice", json_string("vda"));
	ASSERT_EQ_ERR(deploy_doc_parse(j, &d, err, sizeof(err)), FP_EINVAL);
	ASSERT_EQ_STR(err, "rootDevice: needs a path or null");
	json_object_set_new(j, "rootDevice", json_string("/dev/vda"));
	json_object_set_new(json_object_get(j, "config"), "userData", json_null());
	ASSERT_OK(deploy_doc_parse(j, &d, err, sizeof(err)));
	ASSERT_EQ_STR(d.root_device, "/dev/vda");
	assert_null(d.user_data);
	json_decref(j);
}

/* ------------------------------------------------------------------ whole deploys */

static void test_deploy_ok(void **state)
{
	if (!fake.have_mtools)
		skip();
	char disk[320];
	snprintf(disk, sizeof(disk), "%s/disk-ok.img", fake.dir);
	make_disk(disk, 16 * MIB);
	reset(fake.sha, IMG_SIZE, "/boot/files/os.img");
	struct deploy_opts o = opts(disk, "tok_1");
	struct deploy_result res;
	ASSERT_OK(deploy_run(&o, &res));
	ASSERT_EQ_INT(res.ok, 1);
	ASSERT_EQ_INT(res.reported, 1);
	ASSERT_EQ_STR(res.sha256, fake.sha);
	ASSERT_EQ_INT(fake.image_gets, 1);
	ASSERT_EQ_STR(fake.deploy_query, "node=r01n01 token=tok_1");

	size_t len;
	unsigned char *b = read_disk(disk, &len);
	ASSERT_EQ_INT(len, 16 * MIB); /* the file is not truncated or grown */
	/* outside the CIDATA partition the disk is the image byte for byte */
	ASSERT_EQ_INT(memcmp(b, fake.image, PART_OFF), 0);
	ASSERT_EQ_INT(memcmp(b + 6 * MIB, fake.image + 6 * MIB, 2 * MIB), 0);
	ASSERT_EQ_INT(count_byte(b + IMG_SIZE, 8 * MIB, 0xAA), 8 * MIB);
	free(b);

	char *arg = xasprintf("%s@@%llu", disk, (unsigned long long)PART_OFF);
	char *argv[] = {"mtype", "-i", arg, "::meta-data", NULL};
	char *meta = run_mtools(argv);
	char want[512];
	snprintf(want, sizeof(want),
		 "instance-id: r01n01-op7\nlocal-hostname: r01n01\nfleetplane-node: r01n01\n"
		 "fleetplane-url: %s\nfleetplane-token: tok_1\n",
		 server);
	ASSERT_EQ_STR(meta, want);
	free(meta);
	char *argv2[] = {"mtype", "-i", arg, "::user-data", NULL};
	char *user = run_mtools(argv2);
	ASSERT_EQ_STR(user, "#cloud-config\nruncmd: [true]\n");
	free(user);
	free(arg);

	json_t *r = deployed_doc();
	ASSERT_EQ_STR(jsonx_str(r, "node"), "r01n01");
	ASSERT_EQ_STR(jsonx_str(r, "token"), "tok_1");
	ASSERT_EQ_INT(json_is_true(json_object_get(r, "ok")), 1);
	ASSERT_EQ_STR(jsonx_str(r, "sha256"), fake.sha);
	ASSERT_EQ_INT(json_integer_value(json_object_get(r, "bytes")), IMG_SIZE);
	ASSERT_EQ_STR(jsonx_str(r, "disk"), disk);
	char msg[1024];
	snprintf(msg, sizeof(msg),
		 "wrote os.img (8388608 bytes, sha256 %s) to %s; seed meta-data and user-data on "
		 "%s partition 1 (offset 1048576)",
		 fake.sha, disk, disk);
	ASSERT_EQ_STR(jsonx_str(r, "message"), msg);
	ASSERT_EQ_INT(json_object_size(r), 7);
	json_decref(r);
	unlink(disk);
}

static void test_deploy_bad_checksum(void **state)
{
	char disk[320], bad[65];
	snprintf(disk, sizeof(disk), "%s/disk-bad.img", fake.dir);
	make_disk(disk, 16 * MIB);
	memset(bad, '0', 64);
	bad[64] = '\0';
	char url[128];
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/boot/files/os.img", fake.port);
	reset(bad, IMG_SIZE, url); /* an absolute image URL this time */
	struct deploy_opts o = opts(disk, "tok_1");
	struct deploy_result res;
	ASSERT_EQ_ERR(deploy_run(&o, &res), FP_EAGAIN);
	ASSERT_EQ_INT(res.ok, 0);
	ASSERT_EQ_INT(res.reported, 1);
	ASSERT_EQ_INT(res.bytes, IMG_SIZE);

	size_t len;
	unsigned char *b = read_disk(disk, &len);
	ASSERT_EQ_INT(count_byte(b, MIB, 0), MIB); /* the first MiB zeroed */
	ASSERT_EQ_INT(memcmp(b + MIB, fake.image + MIB, IMG_SIZE - MIB), 0);
	ASSERT_EQ_INT(count_byte(b + IMG_SIZE, 8 * MIB, 0xAA), 8 * MIB);
	free(b);

	json_t *r = deployed_doc();
	ASSERT_EQ_INT(json_is_false(json_object_get(r, "ok")), 1);
	ASSERT_EQ_STR(jsonx_str(r, "sha256"), fake.sha); /* the sum seen */
	ASSERT_EQ_INT(json_integer_value(json_object_get(r, "bytes")), IMG_SIZE);
	char msg[1024];
	snprintf(msg, sizeof(msg),
		 "sha256 mismatch for os.img: expected %s, seen %s; the first MiB of %s was "
		 "zeroed",
		 bad, fake.sha, disk);
	ASSERT_EQ_STR(jsonx_str(r, "message"), msg);
	json_decref(r);
	unlink(disk);
}

static void test_deploy_image_larger_than_disk(void **state)
{
	char disk[320];
	snprintf(disk, sizeof(disk), "%s/disk-small.img", fake.dir);
	make_disk(disk, 4 * MIB);
	reset(fake.sha, IMG_SIZE, "/boot/files/os.img");
	struct deploy_opts o = opts(disk, "tok_1");
	struct deploy_result res;
	ASSERT_EQ_ERR(deploy_run(&o, &res), FP_ETOOBIG);
	ASSERT_EQ_INT(fake.image_gets, 0); /* refused before the download */
	size_t len;
	unsigned char *b = read_disk(disk, &len);
	ASSERT_EQ_INT(count_byte(b, len, 0xAA), 4 * MIB); /* untouched */
	free(b);
	json_t *r = deployed_doc();
	ASSERT_EQ_INT(json_is_false(json_object_get(r, "ok")), 1);
	ASSERT_EQ_STR(jsonx_str(r, "sha256"), "");
	ASSERT_EQ_INT(json_integer_value(json_object_get(r, "bytes")), 0);
	char msg[512];
	snprintf(msg, sizeof(msg),
		 "image os.img is 8388608 bytes, larger than disk %s (4194304 bytes); nothing "
		 "written",
		 disk);
	ASSERT_EQ_STR(jsonx_str(r, "message"), msg);
	json_decref(r);
	unlink(disk);
}

/* The server sends more than the document announced: stopped at the limit, head zeroed. */
static void test_deploy_image_longer_than_announced(void **state)
{
	char disk[320];
	snprintf(disk, sizeof(disk), "%s/disk-long.img", fake.dir);
	make_disk(disk, 16 * MIB);
	reset(fake.sha, IMG_SIZE - 4096, "/boot/files/os.img");
	struct deploy_opts o = opts(disk, "tok_1");
	struct deploy_result res;
	ASSERT_EQ_ERR(deploy_run(&o, &res), FP_EAGAIN);
	ASSERT_EQ_INT(res.ok, 0);
	size_t len;
	unsigned char *b = read_disk(disk, &len);
	ASSERT_EQ_INT(count_byte(b, MIB, 0), MIB);
	free(b);
	char msg[512];
	snprintf(msg, sizeof(msg),
		 "image os.img sent more than its sizeBytes 8384512; the first MiB of %s was "
		 "zeroed",
		 disk);
	ASSERT_EQ_STR(res.message, msg);
	unlink(disk);
}

static void test_deploy_dry_run(void **state)
{
	char disk[320];
	snprintf(disk, sizeof(disk), "%s/disk-dry.img", fake.dir);
	make_disk(disk, 16 * MIB);
	reset(fake.sha, IMG_SIZE, "/boot/files/os.img");
	struct deploy_opts o = opts(disk, "tok_1");
	o.dry_run = 1;
	struct deploy_result res;
	ASSERT_OK(deploy_run(&o, &res));
	ASSERT_EQ_INT(fake.deploy_gets, 1);
	ASSERT_EQ_INT(fake.image_gets, 0);
	assert_null(fake.deployed); /* nothing reported */
	size_t len;
	unsigned char *b = read_disk(disk, &len);
	ASSERT_EQ_INT(count_byte(b, len, 0xAA), 16 * MIB);
	free(b);
	unlink(disk);
}

static void test_deploy_refused_and_unreachable(void **state)
{
	char disk[320];
	snprintf(disk, sizeof(disk), "%s/disk-ref.img", fake.dir);
	make_disk(disk, 16 * MIB);
	reset(fake.sha, IMG_SIZE, "/boot/files/os.img");
	struct deploy_opts o = opts(disk, "old");
	struct deploy_result res;
	ASSERT_EQ_ERR(deploy_run(&o, &res), FP_EINVAL); /* 403: exit 1 */
	ASSERT_EQ_INT(fake.image_gets, 0);
	assert_null(fake.deployed);

	/* a closed port: nothing listens on port 1 of 127.0.0.1 */
	snprintf(server, sizeof(server), "http://127.0.0.1:1");
	o = opts(disk, "tok_1");
	ASSERT_EQ_ERR(deploy_run(&o, &res), FP_EIO); /* exit 3 */
	size_t len;
	unsigned char *b = read_disk(disk, &len);
	ASSERT_EQ_INT(count_byte(b, len, 0xAA), 16 * MIB);
	free(b);
	unlink(disk);
}

static void test_inspect(void **state)
{
	reset(fake.sha, IMG_SIZE, "/boot/files/os.img");
	struct bootclient c = {.server = server};
	json_t *inv = json_pack("{s:s,s:i}", "source", "inspection", "pciDevices", 3);
	char msg[512];
	ASSERT_OK(bootclient_inspect(&c, "r01n01", "tok_1", inv, msg, sizeof(msg)));
	ASSERT_EQ_STR(msg, "accepted");
	ASSERT_EQ_STR(fake.inspect, "{\"node\":\"r01n01\",\"token\":\"tok_1\",\"inventory\":"
				    "{\"source\":\"inspection\",\"pciDevices\":3}}");
	ASSERT_EQ_ERR(bootclient_inspect(&c, "r01n01", "old", inv, msg, sizeof(msg)), FP_EINVAL);
	ASSERT_EQ_STR(msg, "POST /boot/inspect refused: HTTP 403: token of an older attempt");
	struct bootclient down = {.server = "http://127.0.0.1:1"};
	ASSERT_EQ_ERR(bootclient_inspect(&down, "r01n01", "tok_1", inv, msg, sizeof(msg)), FP_EIO);
	json_decref(inv);

	/* A broken answer: the message names the route, never the query with the token. */
	long status = 0;
	json_t *out = NULL;
	char err[512];
	ASSERT_EQ_ERR(bootclient_request(&c, "GET", "/boot/deploy?node=r01n01&token=broken", NULL,
					 &status, &out, err, sizeof(err)),
		      FP_EPARSE);
	ASSERT_EQ_INT(status, 200);
	assert_null(out);
	assert_null(strstr(err, "broken"));
	ASSERT_EQ_INT(strncmp(err, "GET /boot/deploy: answer is not JSON: ", 38), 0);

	char why[128];
	ASSERT_OK(bootclient_token_check("Ab_9-z", why, sizeof(why)));
	ASSERT_EQ_ERR(bootclient_token_check("a b", why, sizeof(why)), FP_EINVAL);
	ASSERT_EQ_ERR(bootclient_token_check("", why, sizeof(why)), FP_EINVAL);
	ASSERT_EQ_ERR(bootclient_url_check("ftp://x", why, sizeof(why)), FP_EINVAL);
	ASSERT_OK(bootclient_url_check("http://10.77.0.1:7070", why, sizeof(why)));
}

int main(void)
{
	devnull = fopen("/dev/null", "w");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fat_label),
		cmocka_unit_test(test_mbr),
		cmocka_unit_test(test_doc_and_meta),
		cmocka_unit_test(test_deploy_ok),
		cmocka_unit_test(test_deploy_bad_checksum),
		cmocka_unit_test(test_deploy_image_larger_than_disk),
		cmocka_unit_test(test_deploy_image_longer_than_announced),
		cmocka_unit_test(test_deploy_dry_run),
		cmocka_unit_test(test_deploy_refused_and_unreachable),
		cmocka_unit_test(test_inspect),
	};
	int rc = cmocka_run_group_tests(tests, setup, teardown);
	fclose(devnull);
	return rc;
}
