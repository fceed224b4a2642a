/* layers: base core */
/* test_secret.c - core/secret.h and sealed spec.bmc.password: secretbox round trip and text
 * form, wrong key, tampering, bad prefixes and base64, the key file (creation, mode, size,
 * symlink), sealing before the write (secret_bmc_seal) and a codec that never opens the sealed
 * text, legacy plaintext read and sealed by a writer with the key, a replaced key (node still
 * decodes, clear error at the BMC call), password_file names and password file reading. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "core/codec.h"
#include "core/secret.h"

#include "base/banned.h"

static struct secret_key *key_n(unsigned char fill)
{
	unsigned char b[SECRET_KEY_BYTES];
	memset(b, fill, sizeof(b));
	return secret_key_from_bytes(b, sizeof(b));
}

static void test_seal_open(void **state)
{
	struct secret_key *k = key_n(1);
	char *s1 = NULL, *s2 = NULL, *p = NULL, e[256];
	assert_int_equal(secret_seal(k, "hunter2", &s1, e, sizeof(e)), 0);
	/* "sb1:" + base64 of 24 nonce + 16 MAC + 7 bytes = 47 bytes -> 64 characters */
	assert_int_equal(strncmp(s1, "sb1:", 4), 0);
	assert_int_equal(strlen(s1), 4 + 64);
	assert_null(strstr(s1, "hunter2"));
	assert_int_equal(secret_seal(k, "hunter2", &s2, e, sizeof(e)), 0);
	assert_string_not_equal(s1, s2); /* a fresh nonce each time */
	assert_int_equal(secret_open(k, s1, &p, e, sizeof(e)), 0);
	assert_string_equal(p, "hunter2");
	fp_free_secret(p);
	assert_int_equal(secret_open(k, s2, &p, e, sizeof(e)), 0);
	assert_string_equal(p, "hunter2");
	fp_free_secret(p);
	free(s1);
	free(s2);
	/* empty and longest secrets; one byte more is refused */
	assert_int_equal(secret_seal(k, "", &s1, e, sizeof(e)), 0);
	assert_int_equal(strlen(s1), 4 + 56); /* 40 bytes -> 56 characters */
	assert_int_equal(secret_open(k, s1, &p, e, sizeof(e)), 0);
	assert_string_equal(p, "");
	fp_free_secret(p);
	free(s1);
	char big[SECRET_MAX_PLAIN + 2];
	memset(big, 'x', sizeof(big));
	big[SECRET_MAX_PLAIN] = '\0';
	assert_int_equal(secret_seal(k, big, &s1, e, sizeof(e)), 0);
	assert_int_equal(secret_open(k, s1, &p, e, sizeof(e)), 0);
	assert_int_equal(strlen(p), SECRET_MAX_PLAIN);
	fp_free_secret(p);
	free(s1);
	big[SECRET_MAX_PLAIN] = 'x';
	big[SECRET_MAX_PLAIN + 1] = '\0';
	assert_int_equal(secret_seal(k, big, &s1, e, sizeof(e)), FP_ETOOBIG);
	assert_null(s1);
	assert_string_equal(e, "seal: secret longer than 1024 bytes");
	secret_key_free(k);
	secret_key_free(NULL);
	assert_null(secret_key_from_bytes((const unsigned char *)"short", 5));
}

static void test_wrong_key_and_tamper(void **state)
{
	struct secret_key *k1 = key_n(1), *k2 = key_n(2);
	char *s = NULL, *p = NULL, e[256];
	assert_int_equal(secret_seal(k1, "pw-Tamper-9", &s, e, sizeof(e)), 0);
	assert_int_equal(secret_open(k2, s, &p, e, sizeof(e)), FP_EAUTH);
	assert_null(p);
	assert_string_equal(e, "sealed secret does not open with this key (another secret.key, or "
			       "the text was altered)");
	/* flip one base64 character inside the nonce, then inside the ciphertext */
	for (size_t at = 10; at <= 60; at += 50) {
		char *t = xstrdup(s);
		t[at] = t[at] == 'A' ? 'B' : 'A';
		e[0] = '\0';
		assert_int_equal(secret_open(k1, t, &p, e, sizeof(e)), FP_EAUTH);
		assert_null(p);
		assert_null(strstr(e, "pw-Tamper-9"));
		free(t);
	}
	free(s);
	secret_key_free(k1);
	secret_key_free(k2);
}

static void test_bad_text(void **state)
{
	struct secret_key *k = key_n(3);
	char *p = NULL, e[256];
	assert_int_equal(secret_open(k, "sb2:AAAA", &p, e, sizeof(e)), FP_EPARSE);
	assert_string_equal(e, "sealed secret: expected text starting with \"sb1:\"");
	assert_int_equal(secret_open(k, "", &p, e, sizeof(e)), FP_EPARSE);
	assert_string_equal(e, "sealed secret: expected text starting with \"sb1:\"");
	assert_int_equal(secret_open(k, "plain-password", &p, e, sizeof(e)), FP_EPARSE);
	assert_int_equal(secret_open(k, "sb1:not base64!", &p, e, sizeof(e)), FP_EPARSE);
	assert_string_equal(e, "sealed secret: not valid base64 after \"sb1:\"");
	assert_int_equal(secret_open(k, "sb1:AAAA", &p, e, sizeof(e)), FP_EPARSE);
	assert_string_equal(e, "sealed secret: 3 bytes, too short for a nonce and a MAC (40)");
	char *huge = xmalloc(4 + 2000 + 1);
	memcpy(huge, "sb1:", 4);
	memset(huge + 4, 'A', 2000);
	huge[2004] = '\0';
	assert_int_equal(secret_open(k, huge, &p, e, sizeof(e)), FP_EPARSE);
	assert_string_equal(e, "sealed secret: longer than a sealed 1024-byte secret");
	free(huge);
	assert_null(p);
	secret_key_free(k);
}

static char tmpdir[64];

static int setup_dir(void **state)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/fp-test-secret-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static int teardown_dir(void **state)
{
	return nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void write_file(const char *path, const void *data, size_t n, mode_t mode)
{
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, n), (ssize_t)n);
	close(fd);
	assert_int_equal(chmod(path, mode), 0);
}

static void test_key_file(void **state)
{
	char path[128], e[512], want[512];
	snprintf(path, sizeof(path), "%s/secret.key", tmpdir);
	struct secret_key *k1 = NULL, *k2 = NULL;
	int created = -1;
	assert_int_equal(secret_key_load_or_create(path, &k1, &created, e, sizeof(e)), 0);
	assert_int_equal(created, 1);
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_size, 32);
	assert_int_equal(secret_key_load_or_create(path, &k2, &created, e, sizeof(e)), 0);
	assert_int_equal(created, 0);
	/* the key read back opens what the created one sealed */
	char *s = NULL, *p = NULL;
	assert_int_equal(secret_seal(k1, "round-trip", &s, e, sizeof(e)), 0);
	assert_int_equal(secret_open(k2, s, &p, e, sizeof(e)), 0);
	assert_string_equal(p, "round-trip");
	fp_free_secret(p);
	free(s);
	secret_key_free(k2);
	k2 = NULL;

	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(secret_key_load_or_create(path, &k2, NULL, e, sizeof(e)), FP_EPERM);
	assert_null(k2);
	snprintf(want, sizeof(want),
		 "%s is readable or writable by group or others (mode 0644); the key that "
		 "encrypts BMC passwords must be private: run chmod 600 %s",
		 path, path);
	assert_string_equal(e, want);

	unsigned char b31[31] = {0};
	write_file(path, b31, sizeof(b31), 0600);
	assert_int_equal(secret_key_load_or_create(path, &k2, NULL, e, sizeof(e)), FP_EINVAL);
	snprintf(
		want, sizeof(want),
		"%s has 31 bytes, expected 32 (the key fleetplane serve wrote); restore the right "
		"file from backup, or remove it and start serve with --new-secret-key if no sealed "
		"BMC password must be read again",
		path);
	assert_string_equal(e, want);

	char real[128];
	snprintf(real, sizeof(real), "%s/real.key", tmpdir);
	unsigned char b32[32] = {0};
	write_file(real, b32, sizeof(b32), 0600);
	unlink(path);
	assert_int_equal(symlink(real, path), 0);
	assert_int_equal(secret_key_load_or_create(path, &k2, NULL, e, sizeof(e)), FP_EINVAL);
	snprintf(want, sizeof(want),
		 "%s is a symbolic link; the key must be a regular file (replace the link with the "
		 "file it points to)",
		 path);
	assert_string_equal(e, want);
	unlink(path);
	secret_key_free(k1);
}

static json_t *parse(const char *s)
{
	json_t *v = NULL;
	char e[256];
	if (jsonx_parse(s, strlen(s), &v, e, sizeof(e)) < 0)
		fail_msg("test document does not parse: %s", e);
	return v;
}

static const char *const enroll_doc =
	"{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"bmc\":{\"driver\":\"ipmi\","
	"\"address\":\"10.0.0.3:623\",\"username\":\"admin\",\"password\":\"s3cr3t-pw-907\"}}}";

/* The API's path: the enrolled plaintext is sealed with the key it was handed
 * (secret_bmc_seal) before the node is written; the codec then never opens it: the decoded
 * node, its node_dup copy and the public form carry no plaintext, and only secret_bmc_password
 * with the key gives it back. */
static void test_seal_before_write(void **state)
{
	struct secret_key *k = key_n(9);
	json_t *in = parse(enroll_doc);
	struct node *n = NULL, *n2 = NULL;
	char e[256];
	assert_int_equal(node_from_enroll_json(in, &n, e, sizeof(e)), 0);
	assert_string_equal(n->bmc.password, "s3cr3t-pw-907"); /* as the client sent it */
	assert_int_equal(secret_bmc_seal(NULL, &n->bmc, e, sizeof(e)), 0); /* no key: no-op */
	assert_string_equal(n->bmc.password, "s3cr3t-pw-907");
	assert_int_equal(secret_bmc_seal(k, &n->bmc, e, sizeof(e)), 0);
	assert_null(n->bmc.password);
	assert_non_null(n->bmc.password_sealed);
	assert_int_equal(strncmp(n->bmc.password_sealed, "sb1:", 4), 0);
	json_t *st = node_to_json(n, NODE_JSON_STORE);
	char *text = jsonx_dumps(st);
	assert_null(strstr(text, "s3cr3t-pw-907"));
	assert_null(jsonx_path(st, "spec.bmc.password"));
	const char *sealed = jsonx_str(st, "spec.bmc.password_sealed");
	assert_string_equal(sealed, n->bmc.password_sealed);
	/* decoding the stored form keeps it sealed: no key reaches the codec */
	assert_int_equal(node_from_json(st, 5, &n2, e, sizeof(e)), 0);
	assert_null(n2->bmc.password);
	assert_string_equal(n2->bmc.password_sealed, sealed);
	/* the public form carries neither form of it */
	json_t *pub = node_to_json(n2, NODE_JSON_PUBLIC);
	char *ptext = jsonx_dumps(pub);
	assert_null(strstr(ptext, "s3cr3t-pw-907"));
	assert_null(strstr(ptext, "password"));
	assert_null(strstr(ptext, "sb1:"));
	free(ptext);
	json_decref(pub);
	/* node_dup keeps the sealed text only */
	struct node *d = node_dup(n2);
	assert_null(d->bmc.password);
	assert_string_equal(d->bmc.password_sealed, sealed);
	/* the BMC step opens it with the key it was handed */
	char *pw = NULL;
	assert_int_equal(secret_bmc_password(k, &d->bmc, NULL, &pw, e, sizeof(e)), 0);
	assert_string_equal(pw, "s3cr3t-pw-907");
	fp_free_secret(pw);
	node_free(d);
	free(text);
	json_decref(st);
	json_decref(in);
	node_free(n);
	node_free(n2);
	secret_key_free(k);
}

static void expect_no_open(const struct secret_key *k, const struct node_bmc *b)
{
	char e[256];
	char *pw = (char *)"unset";
	assert_int_equal(secret_bmc_password(k, b, "/nonexistent", &pw, e, sizeof(e)), FP_EAUTH);
	assert_null(pw);
	assert_string_equal(e, "cannot decrypt the BMC password (was secret.key replaced?): "
			       "restore the data dir's secret.key or set spec.bmc.password again");
}

static void test_codec_legacy_and_replaced_key(void **state)
{
	struct secret_key *k1 = key_n(1), *k2 = key_n(2);
	char e[256];
	/* an older store: plaintext password, read as is and used as is */
	json_t *legacy = parse(
		"{\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"},\"spec\":{\"bmc\":"
		"{\"driver\":\"sim\",\"password\":\"legacy-pw-3\"}},"
		"\"status\":{\"phase\":\"available\"}}");
	struct node *n = NULL, *n2 = NULL, *n3 = NULL;
	assert_int_equal(node_from_json(legacy, 1, &n, e, sizeof(e)), 0);
	assert_string_equal(n->bmc.password, "legacy-pw-3");
	char *pw = NULL;
	assert_int_equal(secret_bmc_password(k1, &n->bmc, NULL, &pw, e, sizeof(e)), 0);
	assert_string_equal(pw, "legacy-pw-3");
	fp_free_secret(pw);
	/* a writer without a key writes it back in plaintext */
	json_t *st3 = node_to_json(n, NODE_JSON_STORE);
	assert_string_equal(jsonx_str(st3, "spec.bmc.password"), "legacy-pw-3");
	assert_null(jsonx_path(st3, "spec.bmc.password_sealed"));
	/* one with the key seals it */
	assert_int_equal(secret_bmc_seal(k1, &n->bmc, e, sizeof(e)), 0);
	json_t *st = node_to_json(n, NODE_JSON_STORE);
	char *text = jsonx_dumps(st);
	assert_null(strstr(text, "legacy-pw-3"));
	assert_null(jsonx_path(st, "spec.bmc.password"));
	const char *sealed = jsonx_str(st, "spec.bmc.password_sealed");
	assert_non_null(sealed);
	free(text);

	/* secret.key replaced: the node decodes, the sealed text is kept, the BMC call fails */
	assert_int_equal(node_from_json(st, 2, &n2, e, sizeof(e)), 0);
	assert_null(n2->bmc.password);
	assert_string_equal(n2->bmc.password_sealed, sealed);
	assert_int_equal(n2->phase, PHASE_AVAILABLE);
	expect_no_open(k2, &n2->bmc);
	expect_no_open(NULL, &n2->bmc); /* no key at all */
	/* written back unchanged, so the old key still opens it */
	json_t *st2 = node_to_json(n2, NODE_JSON_STORE);
	assert_string_equal(jsonx_str(st2, "spec.bmc.password_sealed"), sealed);
	assert_int_equal(node_from_json(st2, 3, &n3, e, sizeof(e)), 0);
	assert_int_equal(secret_bmc_password(k1, &n3->bmc, NULL, &pw, e, sizeof(e)), 0);
	assert_string_equal(pw, "legacy-pw-3");
	fp_free_secret(pw);
	/* a corrupt sealed text in the store does not fail the decode either */
	json_object_set_new(json_object_get(json_object_get(st2, "spec"), "bmc"), "password_sealed",
			    json_string("sb1:garbage"));
	node_free(n3);
	assert_int_equal(node_from_json(st2, 4, &n3, e, sizeof(e)), 0);
	assert_null(n3->bmc.password);
	assert_string_equal(n3->bmc.password_sealed, "sb1:garbage");
	expect_no_open(k1, &n3->bmc);
	json_decref(st3);
	json_decref(st2);
	json_decref(st);
	json_decref(legacy);
	node_free(n);
	node_free(n2);
	node_free(n3);
	secret_key_free(k1);
	secret_key_free(k2);
}

static void expect_enroll_err(const char *bmc, const char *want)
{
	char doc[512], e[256] = "";
	snprintf(doc, sizeof(doc), "{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"bmc\":%s}}", bmc);
	json_t *j = parse(doc);
	struct node *n = NULL;
	assert_int_equal(node_from_enroll_json(j, &n, e, sizeof(e)), FP_EINVAL);
	assert_null(n);
	assert_string_equal(e, want);
	json_decref(j);
}

static void test_enroll_password_file_names(void **state)
{
	const char *path_err = "spec.bmc.password_file: expected a plain file name in serve's "
			       "--bmc-credentials-dir (letters, digits, '.', '_', '-'; no '/'), "
			       "not a path";
	const char *dot_err = "spec.bmc.password_file: must not start with '.'; name a file in "
			      "serve's --bmc-credentials-dir";
	expect_enroll_err("{\"password_file\":\"/etc/shadow\"}", path_err);
	expect_enroll_err("{\"password_file\":\"a/b\"}", path_err);
	expect_enroll_err("{\"password_file\":\"../x\"}", dot_err);
	expect_enroll_err("{\"password_file\":\".hidden\"}", dot_err);
	expect_enroll_err("{\"password_file\":\"pw file\"}", path_err);
	expect_enroll_err("{\"password_file\":\"\"}",
			  "spec.bmc.password_file: expected a file name of 1..128 characters");
	char long_name[200], bmc[256];
	memset(long_name, 'a', 129);
	long_name[129] = '\0';
	snprintf(bmc, sizeof(bmc), "{\"password_file\":\"%s\"}", long_name);
	expect_enroll_err(bmc, "spec.bmc.password_file: expected a file name of 1..128 characters");
	expect_enroll_err("{\"password\":\"x\",\"password_file\":\"n1.pw\"}",
			  "spec.bmc.password_file: set either spec.bmc.password or "
			  "spec.bmc.password_file, not both");
	expect_enroll_err("{\"password_sealed\":\"sb1:AAAA\"}",
			  "spec.bmc.password_sealed: written by the server only; send "
			  "spec.bmc.password or spec.bmc.password_file");
	/* good names */
	long_name[128] = '\0';
	const char *good[] = {"n1.pw", "r01n03_bmc-Pass.txt", long_name};
	for (size_t i = 0; i < 3; i++) {
		char doc[512], e[256];
		snprintf(
			doc, sizeof(doc),
			"{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"bmc\":{\"password_file\":\"%s\"}}}",
			good[i]);
		json_t *j = parse(doc);
		struct node *n = NULL;
		assert_int_equal(node_from_enroll_json(j, &n, e, sizeof(e)), 0);
		assert_string_equal(n->bmc.password_file, good[i]);
		node_free(n);
		json_decref(j);
	}
}

static void test_password_file_read(void **state)
{
	char path[256], e[512], want[768];
	struct node_bmc b = {.password_file = (char *)"n1.pw"};
	char *pw = NULL;
	snprintf(path, sizeof(path), "%s/n1.pw", tmpdir);
	/* missing */
	assert_int_equal(secret_bmc_password(NULL, &b, tmpdir, &pw, e, sizeof(e)), FP_ENOTFOUND);
	snprintf(want, sizeof(want), "BMC password file %s does not exist (spec.bmc.password_file)",
		 path);
	assert_string_equal(e, want);
	/* trailing newline stripped, CRLF too, nothing else */
	write_file(path, "pw from file \n", 14, 0600);
	assert_int_equal(secret_bmc_password(NULL, &b, tmpdir, &pw, e, sizeof(e)), 0);
	assert_string_equal(pw, "pw from file ");
	fp_free_secret(pw);
	write_file(path, "crlf-pw\r\n", 9, 0600);
	assert_int_equal(secret_bmc_password(NULL, &b, tmpdir, &pw, e, sizeof(e)), 0);
	assert_string_equal(pw, "crlf-pw");
	fp_free_secret(pw);
	write_file(path, "two\n\n", 5, 0600);
	assert_int_equal(secret_bmc_password(NULL, &b, tmpdir, &pw, e, sizeof(e)), 0);
	assert_string_equal(pw, "two\n");
	fp_free_secret(pw);
	/* 1024 bytes plus a newline is the longest */
	char big[1100];
	memset(big, 'p', sizeof(big));
	big[1024] = '\n';
	write_file(path, big, 1025, 0600);
	assert_int_equal(secret_bmc_password(NULL, &b, tmpdir, &pw, e, sizeof(e)), 0);
	assert_int_equal(strlen(pw), 1024);
	fp_free_secret(pw);
	write_file(path, big, 1025 + 2, 0600);
	assert_int_equal(secret_bmc_password(NULL, &b, tmpdir, &pw, e, sizeof(e)), FP_ETOOBIG);
	assert_null(pw);
	snprintf(want, sizeof(want), "BMC password file %s is larger than 1024 bytes", path);
	assert_string_equal(e, want);
	write_file(path, "a\0b", 3, 0600);
	assert_int_equal(secret_bmc_password(NULL, &b, tmpdir, &pw, e, sizeof(e)), FP_EINVAL);
	snprintf(want, sizeof(want), "BMC password file %s holds a NUL byte", path);
	assert_string_equal(e, want);
	/* readable or writable by group or others: refused like secret.key, the mode named */
	static const mode_t open_modes[] = {0644, 0640, 0604, 0620, 0602};
	for (size_t i = 0; i < sizeof(open_modes) / sizeof(open_modes[0]); i++) {
		write_file(path, "mode-pw\n", 8, open_modes[i]);
		assert_int_equal(secret_bmc_password(NULL, &b, tmpdir, &pw, e, sizeof(e)),
				 FP_EPERM);
		assert_null(pw);
		snprintf(want, sizeof(want),
			 "BMC password file %s is readable or writable by group or others (mode "
			 "%04o); a BMC password must be private: run chmod 600 %s",
			 path, (unsigned)open_modes[i], path);
		assert_string_equal(e, want);
	}
	write_file(path, "mode-pw\n", 8, 0400);
	assert_int_equal(secret_bmc_password(NULL, &b, tmpdir, &pw, e, sizeof(e)), 0);
	assert_string_equal(pw, "mode-pw");
	fp_free_secret(pw);
	/* a symlink is refused, even to a good file */
	char target[256];
	snprintf(target, sizeof(target), "%s/target", tmpdir);
	write_file(target, "secret-target\n", 14, 0600);
	unlink(path);
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(secret_bmc_password(NULL, &b, tmpdir, &pw, e, sizeof(e)), FP_EPERM);
	snprintf(want, sizeof(want), "BMC password file %s is a symbolic link (refused)", path);
	assert_string_equal(e, want);
	assert_null(strstr(e, "secret-target"));
	unlink(path);
	/* a directory is not a password file */
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(secret_bmc_password(NULL, &b, tmpdir, &pw, e, sizeof(e)), FP_EINVAL);
	snprintf(want, sizeof(want), "BMC password file %s is not a regular file", path);
	assert_string_equal(e, want);
	rmdir(path);
	/* a file of another user (only root can make one) */
	if (geteuid() == 0) {
		write_file(path, "x\n", 2, 0600);
		assert_int_equal(chown(path, 65534, 65534), 0);
		assert_int_equal(secret_bmc_password(NULL, &b, tmpdir, &pw, e, sizeof(e)),
				 FP_EPERM);
		snprintf(
			want, sizeof(want),
			"BMC password file %s is owned by uid 65534, not by the user running serve "
			"(uid 0)",
			path);
		assert_string_equal(e, want);
	}
	/* a stored name that is a path (an older store) is refused at the call */
	struct node_bmc bad = {.password_file = (char *)"/etc/shadow"};
	assert_int_equal(secret_bmc_password(NULL, &bad, tmpdir, &pw, e, sizeof(e)), FP_EINVAL);
	assert_null(pw);
	assert_int_equal(secret_bmc_password(NULL, &b, NULL, &pw, e, sizeof(e)), FP_EINVAL);
	assert_string_equal(e, "spec.bmc.password_file is set but no BMC credentials directory is "
			       "configured");
	/* the spec password first; nothing at all is no password */
	struct node_bmc both = {.password = (char *)"spec-pw", .password_file = (char *)"n1.pw"};
	assert_int_equal(secret_bmc_password(NULL, &both, tmpdir, &pw, e, sizeof(e)), 0);
	assert_string_equal(pw, "spec-pw");
	fp_free_secret(pw);
	struct node_bmc none = {0};
	pw = (char *)"unset";
	assert_int_equal(secret_bmc_password(NULL, &none, tmpdir, &pw, e, sizeof(e)), 0);
	assert_null(pw);
}

/* spec.bmc.ca_file: a name in the credentials dir, resolved to an absolute path per call. */
static void test_ca_path(void **state)
{
	char path[256], got[4400], e[512], want[512];
	struct node_bmc b = {.ca_file = (char *)"bmc-ca.pem"};
	snprintf(path, sizeof(path), "%s/bmc-ca.pem", tmpdir);
	/* no ca_file: the system's store, an empty path */
	struct node_bmc none = {0};
	snprintf(got, sizeof(got), "x");
	assert_int_equal(secret_bmc_ca_path(&none, tmpdir, got, sizeof(got), e, sizeof(e)), 0);
	assert_string_equal(got, "");
	/* missing */
	assert_int_equal(secret_bmc_ca_path(&b, tmpdir, got, sizeof(got), e, sizeof(e)),
			 FP_ENOTFOUND);
	assert_string_equal(got, "");
	snprintf(want, sizeof(want), "BMC CA file %s does not exist (spec.bmc.ca_file)", path);
	assert_string_equal(e, want);
	/* present: the absolute path */
	write_file(path, "-----BEGIN CERTIFICATE-----\n", 28, 0644);
	assert_int_equal(secret_bmc_ca_path(&b, tmpdir, got, sizeof(got), e, sizeof(e)), 0);
	assert_string_equal(got, path);
	/* a symlink is refused, even to a good file */
	char target[256];
	snprintf(target, sizeof(target), "%s/ca-target", tmpdir);
	write_file(target, "x", 1, 0644);
	unlink(path);
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(secret_bmc_ca_path(&b, tmpdir, got, sizeof(got), e, sizeof(e)), FP_EPERM);
	assert_string_equal(got, "");
	snprintf(want, sizeof(want),
		 "BMC CA file %s is a symbolic link (refused; copy the bundle into the credentials "
		 "directory)",
		 path);
	assert_string_equal(e, want);
	unlink(path);
	/* a directory (or a FIFO) is not a CA bundle */
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(secret_bmc_ca_path(&b, tmpdir, got, sizeof(got), e, sizeof(e)), FP_EINVAL);
	snprintf(want, sizeof(want), "BMC CA file %s is not a regular file", path);
	assert_string_equal(e, want);
	rmdir(path);
	/* a name that is a path (a stored document from before the rule), a relative dir */
	struct node_bmc abs = {.ca_file = (char *)"/etc/shadow"};
	assert_int_equal(secret_bmc_ca_path(&abs, tmpdir, got, sizeof(got), e, sizeof(e)),
			 FP_EINVAL);
	assert_string_equal(e, "spec.bmc.ca_file: expected a plain file name in serve's "
			       "--bmc-credentials-dir (letters, digits, '.', '_', '-'; no '/'), "
			       "not a path");
	assert_int_equal(secret_bmc_ca_path(&b, "creds", got, sizeof(got), e, sizeof(e)),
			 FP_EINVAL);
	assert_string_equal(e, "spec.bmc.ca_file is set but no absolute BMC credentials "
			       "directory is configured");
	/* enroll refuses the same names, naming the field */
	expect_enroll_err(
		"{\"ca_file\":\"/etc/shadow\"}",
		"spec.bmc.ca_file: expected a plain file name in serve's "
		"--bmc-credentials-dir (letters, digits, '.', '_', '-'; no '/'), not a path");
	expect_enroll_err("{\"ca_file\":\".ca\"}",
			  "spec.bmc.ca_file: must not start with '.'; name a file in serve's "
			  "--bmc-credentials-dir");
	/* a stored document with an old absolute ca_file still decodes (refused per call) */
	json_t *j = parse("{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"bmc\":{\"ca_file\":"
			  "\"/etc/ssl/ca.pem\"}}}");
	struct node *n = NULL;
	assert_int_equal(node_from_json(j, 1, &n, e, sizeof(e)), 0);
	assert_string_equal(n->bmc.ca_file, "/etc/ssl/ca.pem");
	node_free(n);
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seal_open),
		cmocka_unit_test(test_wrong_key_and_tamper),
		cmocka_unit_test(test_bad_text),
		cmocka_unit_test(test_key_file),
		cmocka_unit_test(test_seal_before_write),
		cmocka_unit_test(test_codec_legacy_and_replaced_key),
		cmocka_unit_test(test_enroll_password_file_names),
		cmocka_unit_test(test_password_file_read),
		cmocka_unit_test(test_ca_path),
	};
	return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
