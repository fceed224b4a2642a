/* secret.c - the secret key file, secretbox sealing of stored BMC passwords and the resolution
 * of the password a BMC call uses (core/secret.h). libsodium does the cryptography
 * (crypto_secretbox_easy/open_easy, randombytes_buf, sodium_malloc, sodium_bin2base64); this
 * file adds the text form "sb1:<base64(nonce|ciphertext)>", the file checks, and errors that
 * name the file and the fix without ever quoting a secret. */
#include "core/secret.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/banned.h"

_Static_assert(SECRET_KEY_BYTES == crypto_secretbox_KEYBYTES, "secretbox key size");

#define SEALED_MAX_BIN (crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES + SECRET_MAX_PLAIN)
#define SEALED_MAX_TEXT                     \
	(sizeof(SECRET_SEALED_PREFIX) - 1 + \
	 sodium_base64_ENCODED_LEN(SEALED_MAX_BIN, sodium_base64_VARIANT_ORIGINAL))

struct secret_key {
	unsigned char *bytes; /* sodium_malloc'd, SECRET_KEY_BYTES */
};

static void sodium_ready(void)
{
	/* sodium_init is thread-safe and idempotent; -1 only if the library cannot work at all. */
	BUG_ON(sodium_init() < 0);
}

static struct secret_key *key_alloc(void)
{
	sodium_ready();
	struct secret_key *k = xcalloc(1, sizeof(*k));
	k->bytes = sodium_malloc(SECRET_KEY_BYTES);
	if (!k->bytes)
		abort();
	return k;
}

void secret_key_free(struct secret_key *k)
{
	if (!k)
		return;
	sodium_memzero(k->bytes, SECRET_KEY_BYTES);
	sodium_free(k->bytes); /* wipes again */
	free(k);
}

struct secret_key *secret_key_from_bytes(const unsigned char *bytes, size_t len)
{
	if (!bytes || len != SECRET_KEY_BYTES)
		return NULL;
	struct secret_key *k = key_alloc();
	memcpy(k->bytes, bytes, SECRET_KEY_BYTES);
	return k;
}

/* fsync the directory holding path so a newly created file survives a crash. */
static void sync_parent(const char *path)
{
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

static int key_create(const char *path, struct secret_key **out, char *err, size_t errlen)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno == EEXIST ? FP_EEXIST
				       : fp_errf(FP_EIO, err, errlen, "cannot create %s: %s", path,
						 strerror(errno));
	struct secret_key *k = key_alloc();
	randombytes_buf(k->bytes, SECRET_KEY_BYTES);
	ssize_t w = write(fd, k->bytes, SECRET_KEY_BYTES);
	int saved = errno;
	if (w != SECRET_KEY_BYTES || fsync(fd) < 0 || close(fd) < 0) {
		if (w != SECRET_KEY_BYTES)
			close(fd);
		unlink(path);
		secret_key_free(k);
		return fp_errf(FP_EIO, err, errlen, "cannot write %s: %s", path,
			       w < 0 ? strerror(saved) : "short write");
	}
	sync_parent(path);
	*out = k;
	return 0;
}

static int key_load(const char *path, struct secret_key **out, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ELOOP)
			return fp_errf(
				FP_EINVAL, err, errlen,
				"%s is a symbolic link; the key must be a regular file (replace "
				"the link with the file it points to)",
				path);
		if (errno == ENOENT)
			return FP_ENOTFOUND;
		return fp_errf(errno == EACCES ? FP_EPERM : FP_EIO, err, errlen,
			       "cannot open %s: %s", path, strerror(errno));
	}
	struct stat st;
	int rc = 0;
	struct secret_key *k = NULL;
	if (fstat(fd, &st) < 0) {
		rc = fp_errf(FP_EIO, err, errlen, "cannot stat %s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = fp_errf(FP_EINVAL, err, errlen, "%s is not a regular file", path);
		goto out;
	}
	if (st.st_uid != geteuid()) {
		rc = fp_errf(FP_EPERM, err, errlen,
			     "%s is owned by uid %u, not by the user running serve (uid %u); run "
			     "chown %u %s",
			     path, (unsigned)st.st_uid, (unsigned)geteuid(), (unsigned)geteuid(),
			     path);
		goto out;
	}
	if (st.st_mode & 077) {
		rc = fp_errf(FP_EPERM, err, errlen,
			     "%s is readable or writable by group or others (mode %04o); the key "
			     "that encrypts BMC passwords must be private: run chmod 600 %s",
			     path, (unsigned)(st.st_mode & 07777), path);
		goto out;
	}
	if (st.st_size != SECRET_KEY_BYTES) {
		rc = fp_errf(
			FP_EINVAL, err, errlen,
			"%s has %lld bytes, expected %d (the key fleetplane serve wrote); restore "
			"the right file from backup, or remove it and start serve with "
			"--new-secret-key if no sealed BMC password must be read again",
			path, (long long)st.st_size, SECRET_KEY_BYTES);
		goto out;
	}
	k = key_alloc();
	ssize_t r = read(fd, k->bytes, SECRET_KEY_BYTES);
	if (r != SECRET_KEY_BYTES) {
		rc = fp_errf(FP_EIO, err, errlen, "cannot read %s: %s", path,
			     r < 0 ? strerror(errno) : "short read");
		goto out;
	}
	*out = k;
	k = NULL;
out:
	secret_key_free(k);
	close(fd);
	return rc;
}

int secret_key_load_or_create(const char *path, struct secret_key **out, int *created, char *err,
			      size_t errlen)
{
	*out = NULL;
	if (created)
		*created = 0;
	if (!path || !*path)
		return fp_errf(FP_EINVAL, err, errlen, "secret key path is empty");
	int rc = key_load(path, out, err, errlen);
	if (rc != FP_ENOTFOUND)
		return rc;
	rc = key_create(path, out, err, errlen);
	if (rc == FP_EEXIST) /* created by someone else in between: read theirs */
		return key_load(path, out, err, errlen);
	if (rc == 0 && created)
		*created = 1;
	return rc;
}

int secret_seal(const struct secret_key *k, const char *plain, char **out, char *err, size_t errlen)
{
	*out = NULL;
	if (!k || !plain)
		return fp_errf(FP_EINVAL, err, errlen, "seal: no key or no text");
	size_t n = strlen(plain);
	if (n > SECRET_MAX_PLAIN)
		return fp_errf(FP_ETOOBIG, err, errlen, "seal: secret longer than %d bytes",
			       SECRET_MAX_PLAIN);
	size_t blen = crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES + n;
	unsigned char bin[SEALED_MAX_BIN];
	randombytes_buf(bin, crypto_secretbox_NONCEBYTES);
	crypto_secretbox_easy(bin + crypto_secretbox_NONCEBYTES, (const unsigned char *)plain, n,
			      bin, k->bytes);
	size_t tlen = sizeof(SECRET_SEALED_PREFIX) - 1 +
		      sodium_base64_ENCODED_LEN(blen, sodium_base64_VARIANT_ORIGINAL);
	char *s = xmalloc(tlen);
	memcpy(s, SECRET_SEALED_PREFIX, sizeof(SECRET_SEALED_PREFIX) - 1);
	sodium_bin2base64(s + sizeof(SECRET_SEALED_PREFIX) - 1,
			  tlen - (sizeof(SECRET_SEALED_PREFIX) - 1), bin, blen,
			  sodium_base64_VARIANT_ORIGINAL);
	*out = s;
	return 0;
}

int secret_open(const struct secret_key *k, const char *sealed, char **out, char *err,
		size_t errlen)
{
	*out = NULL;
	if (!k)
		return fp_errf(FP_EINVAL, err, errlen, "open: no key");
	const size_t plen = sizeof(SECRET_SEALED_PREFIX) - 1;
	if (!sealed || strncmp(sealed, SECRET_SEALED_PREFIX, plen) != 0)
		return fp_errf(FP_EPARSE, err, errlen,
			       "sealed secret: expected text starting with \"" SECRET_SEALED_PREFIX
			       "\"");
	const char *b64 = sealed + plen;
	size_t b64len = strlen(b64);
	if (b64len > SEALED_MAX_TEXT - plen)
		return fp_errf(FP_EPARSE, err, errlen,
			       "sealed secret: longer than a sealed %d-byte secret",
			       SECRET_MAX_PLAIN);
	unsigned char bin[SEALED_MAX_BIN];
	size_t blen = 0;
	const char *end = NULL;
	if (sodium_base642bin(bin, sizeof(bin), b64, b64len, NULL, &blen, &end,
			      sodium_base64_VARIANT_ORIGINAL) != 0 ||
	    end != b64 + b64len)
		return fp_errf(FP_EPARSE, err, errlen,
			       "sealed secret: not valid base64 after \"" SECRET_SEALED_PREFIX
			       "\"");
	if (blen < crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES)
		return fp_errf(FP_EPARSE, err, errlen,
			       "sealed secret: %zu bytes, too short for a nonce and a MAC (%d)",
			       blen, crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES);
	size_t clen = blen - crypto_secretbox_NONCEBYTES;
	size_t n = clen - crypto_secretbox_MACBYTES;
	char *plain = xmalloc(n + 1);
	if (crypto_secretbox_open_easy((unsigned char *)plain, bin + crypto_secretbox_NONCEBYTES,
				       clen, bin, k->bytes) != 0) {
		free(plain); /* nothing was written into it */
		return fp_errf(FP_EAUTH, err, errlen,
			       "sealed secret does not open with this key (another secret.key, or "
			       "the text was altered)");
	}
	plain[n] = '\0';
	if (memchr(plain, '\0', n)) {
		sodium_memzero(plain, n);
		free(plain);
		return fp_errf(FP_EAUTH, err, errlen, "sealed secret holds a NUL byte");
	}
	*out = plain;
	return 0;
}

int secret_bmc_seal(const struct secret_key *k, struct node_bmc *b, char *err, size_t errlen)
{
	if (!k || !b->password)
		return 0;
	char *sealed = NULL;
	int rc = secret_seal(k, b->password, &sealed, err, errlen);
	if (rc < 0)
		return rc;
	free(b->password_sealed);
	b->password_sealed = sealed;
	fp_free_secret(b->password);
	b->password = NULL;
	return 0;
}

int secret_file_name_validate(const char *field, const char *name, char *err, size_t errlen)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > SECRET_FILE_NAME_MAX)
		return fp_errf(FP_EINVAL, err, errlen,
			       "%s: expected a file name of 1..%d characters", field,
			       SECRET_FILE_NAME_MAX);
	if (name[0] == '.')
		return fp_errf(FP_EINVAL, err, errlen,
			       "%s: must not start with '.'; name a file in serve's "
			       "--bmc-credentials-dir",
			       field);
	for (const char *p = name; *p; p++) {
		char c = *p;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return fp_errf(FP_EINVAL, err, errlen,
				       "%s: expected a plain file name in serve's "
				       "--bmc-credentials-dir (letters, digits, '.', '_', '-'; no "
				       "'/'), not a path",
				       field);
	}
	return 0;
}

int secret_password_file_validate(const char *name, char *err, size_t errlen)
{
	return secret_file_name_validate("spec.bmc.password_file", name, err, errlen);
}

int secret_bmc_ca_path(const struct node_bmc *b, const char *cred_dir, char *path, size_t pathlen,
		       char *err, size_t errlen)
{
	if (pathlen)
		path[0] = '\0';
	if (!b->ca_file)
		return 0;
	int rc = secret_file_name_validate("spec.bmc.ca_file", b->ca_file, err, errlen);
	if (rc < 0)
		return rc;
	if (!cred_dir || cred_dir[0] != '/')
		return fp_errf(FP_EINVAL, err, errlen,
			       "spec.bmc.ca_file is set but no absolute BMC credentials directory "
			       "is configured");
	if ((size_t)snprintf(path, pathlen, "%s/%s", cred_dir, b->ca_file) >= pathlen) {
		path[0] = '\0';
		return fp_errf(FP_ETOOBIG, err, errlen,
			       "spec.bmc.ca_file: the path in the credentials directory is longer "
			       "than %zu bytes",
			       pathlen - 1);
	}
	struct stat st;
	if (lstat(path, &st) < 0) {
		int e = errno;
		rc = e == ENOENT ? fp_errf(FP_ENOTFOUND, err, errlen,
					   "BMC CA file %s does not exist (spec.bmc.ca_file)", path)
				 : fp_errf(e == EACCES ? FP_EPERM : FP_EIO, err, errlen,
					   "cannot stat BMC CA file %s: %s", path, strerror(e));
	} else if (S_ISLNK(st.st_mode)) {
		rc = fp_errf(FP_EPERM, err, errlen,
			     "BMC CA file %s is a symbolic link (refused; copy the bundle into the "
			     "credentials directory)",
			     path);
	} else if (!S_ISREG(st.st_mode)) {
		rc = fp_errf(FP_EINVAL, err, errlen, "BMC CA file %s is not a regular file", path);
	} else if (st.st_size > SECRET_CA_MAX) {
		rc = fp_errf(FP_ETOOBIG, err, errlen, "BMC CA file %s is larger than %d bytes",
			     path, SECRET_CA_MAX);
	}
	if (rc < 0)
		path[0] = '\0';
	return rc;
}

static int read_password_file(const char *cred_dir, const char *name, char **out, char *err,
			      size_t errlen)
{
	int rc = secret_password_file_validate(name, err, errlen);
	if (rc < 0)
		return rc;
	if (!cred_dir || !*cred_dir)
		return fp_errf(FP_EINVAL, err, errlen,
			       "spec.bmc.password_file is set but no BMC credentials directory is "
			       "configured");
	char path[4400];
	snprintf(path, sizeof(path), "%s/%s", cred_dir, name);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		int e = errno;
		if (e == ENOENT)
			return fp_errf(
				FP_ENOTFOUND, err, errlen,
				"BMC password file %s does not exist (spec.bmc.password_file)",
				path);
		if (e == ELOOP)
			return fp_errf(FP_EPERM, err, errlen,
				       "BMC password file %s is a symbolic link (refused)", path);
		return fp_errf(e == EACCES ? FP_EPERM : FP_EIO, err, errlen,
			       "cannot open BMC password file %s: %s", path, strerror(e));
	}
	char *buf = NULL;
	size_t cap = SECRET_MAX_PLAIN + 3, n = 0;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		rc = fp_errf(FP_EIO, err, errlen, "cannot stat BMC password file %s: %s", path,
			     strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = fp_errf(FP_EINVAL, err, errlen, "BMC password file %s is not a regular file",
			     path);
		goto out;
	}
	if (st.st_uid != geteuid()) {
		rc = fp_errf(FP_EPERM, err, errlen,
			     "BMC password file %s is owned by uid %u, not by the user running "
			     "serve (uid %u)",
			     path, (unsigned)st.st_uid, (unsigned)geteuid());
		goto out;
	}
	if (st.st_mode & 077) {
		rc = fp_errf(FP_EPERM, err, errlen,
			     "BMC password file %s is readable or writable by group or others "
			     "(mode %04o); a BMC password must be private: run chmod 600 %s",
			     path, (unsigned)(st.st_mode & 07777), path);
		goto out;
	}
	if (st.st_size > SECRET_MAX_PLAIN + 2) {
		rc = fp_errf(FP_ETOOBIG, err, errlen,
			     "BMC password file %s is larger than %d bytes", path,
			     SECRET_MAX_PLAIN);
		goto out;
	}
	/* Read one byte more than allowed so a file that grew after fstat is caught. */
	buf = xmalloc(cap + 1);
	for (;;) {
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = fp_errf(FP_EIO, err, errlen, "cannot read BMC password file %s: %s",
				     path, strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n == cap)
			break;
	}
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if (n > 0 && buf[n - 1] == '\r')
		n--;
	if (n > SECRET_MAX_PLAIN) {
		rc = fp_errf(FP_ETOOBIG, err, errlen,
			     "BMC password file %s is larger than %d bytes", path,
			     SECRET_MAX_PLAIN);
		goto out;
	}
	if (memchr(buf, '\0', n)) {
		rc = fp_errf(FP_EINVAL, err, errlen, "BMC password file %s holds a NUL byte", path);
		goto out;
	}
	buf[n] = '\0';
	*out = buf;
	buf = NULL;
out:
	if (buf) {
		sodium_memzero(buf, cap + 1);
		free(buf);
	}
	close(fd);
	return rc;
}

int secret_bmc_password(const struct secret_key *k, const struct node_bmc *b, const char *cred_dir,
			char **out, char *err, size_t errlen)
{
	*out = NULL;
	if (b->password) {
		*out = xstrdup(b->password);
		return 0;
	}
	if (b->password_file)
		return read_password_file(cred_dir, b->password_file, out, err, errlen);
	char e[160];
	if (b->password_sealed && k && secret_open(k, b->password_sealed, out, e, sizeof(e)) == 0)
		return 0;
	*out = NULL;
	if (b->password_sealed)
		return fp_errf(
			FP_EAUTH, err, errlen,
			"cannot decrypt the BMC password (was secret.key replaced?): restore "
			"the data dir's secret.key or set spec.bmc.password again");
	return 0;
}

int secret_boot_token(const struct secret_key *k, const char *node, const char *op_id, char *out,
		      size_t outlen)
{
	static const char purpose[] = "fleetplane-boot-token-v1";
	if (!k || !node || !op_id || !out || outlen < SECRET_BOOT_TOKEN_LEN + 1)
		return FP_EINVAL;
	sodium_ready();
	unsigned char sub[crypto_auth_hmacsha256_KEYBYTES], mac[crypto_auth_hmacsha256_BYTES];
	crypto_generichash(sub, sizeof(sub), (const unsigned char *)purpose, sizeof(purpose) - 1,
			   k->bytes, SECRET_KEY_BYTES);
	crypto_auth_hmacsha256_state st;
	crypto_auth_hmacsha256_init(&st, sub, sizeof(sub));
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)node, strlen(node) + 1);
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)op_id, strlen(op_id));
	crypto_auth_hmacsha256_final(&st, mac);
	sodium_memzero(sub, sizeof(sub));
	sodium_memzero(&st, sizeof(st));
	sodium_bin2base64(out, outlen, mac, sizeof(mac), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	return 0;
}

int secret_token_equal(const char *a, const char *b)
{
	if (!a || !b)
		return 0;
	size_t la = strlen(a), lb = strlen(b);
	if (la != lb || la == 0)
		return 0;
	return sodium_memcmp(a, b, la) == 0;
}
