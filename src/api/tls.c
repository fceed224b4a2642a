/* tls.c - the API listener's TLS material (see tls.h): a self-signed certificate generated
 * with GnuTLS library calls (never a shell) into the data dir on first start, and PEM reading
 * and checking for libmicrohttpd's MHD_OPTION_HTTPS_MEM_CERT/KEY. GnuTLS because Debian's
 * libmicrohttpd is built with it: one TLS library in the server process. */
#include "api/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/banned.h"

int api_tls_read_pem(const char *path, char **out, char *err, size_t errlen)
{
	*out = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fp_errf(FP_EIO, err, errlen, "tls: %s: %s", path, strerror(errno));
	char *buf = xmalloc(API_TLS_MAX_PEM + 1);
	size_t n = 0;
	for (;;) {
		ssize_t r = read(fd, buf + n, API_TLS_MAX_PEM + 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			close(fd);
			free(buf);
			return fp_errf(FP_EIO, err, errlen, "tls: %s: %s", path, strerror(e));
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > API_TLS_MAX_PEM) {
			close(fd);
			explicit_bzero(buf, n);
			free(buf);
			return fp_errf(FP_ETOOBIG, err, errlen, "tls: %s: larger than %d bytes",
				       path, API_TLS_MAX_PEM);
		}
	}
	close(fd);
	buf[n] = 0;
	*out = buf;
	return 0;
}

int api_tls_check_pair(const char *cert_pem, const char *key_pem, char *err, size_t errlen)
{
	gnutls_certificate_credentials_t cred = NULL;
	if (gnutls_certificate_allocate_credentials(&cred) < 0)
		return fp_errf(FP_EIO, err, errlen, "tls: cannot allocate credentials");
	gnutls_datum_t c = {(unsigned char *)cert_pem, (unsigned)strlen(cert_pem)};
	gnutls_datum_t k = {(unsigned char *)key_pem, (unsigned)strlen(key_pem)};
	int rc = gnutls_certificate_set_x509_key_mem(cred, &c, &k, GNUTLS_X509_FMT_PEM);
	gnutls_certificate_free_credentials(cred);
	if (rc < 0)
		return fp_errf(FP_EINVAL, err, errlen, "tls: certificate and key: %s",
			       gnutls_strerror(rc));
	return 0;
}

/* The host part of "host:port", brackets removed. */
static void listen_host(const char *listen, char *host, size_t size)
{
	const char *colon = strrchr(listen ? listen : "", ':');
	size_t n = colon ? (size_t)(colon - listen) : strlen(listen ? listen : "");
	if (n >= size)
		n = size - 1;
	memcpy(host, listen ? listen : "", n);
	host[n] = 0;
	if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
		memmove(host, host + 1, n - 2);
		host[n - 2] = 0;
	}
}

static int is_wildcard(const char *host)
{
	return !*host || strcmp(host, "*") == 0 || strcmp(host, "0.0.0.0") == 0 ||
	       strcmp(host, "::") == 0;
}

/* Does the certificate in path cover host (and 127.0.0.1)? */
static int covers(const char *path, const char *host)
{
	char *pem = NULL;
	if (api_tls_read_pem(path, &pem, NULL, 0) < 0)
		return 0;
	gnutls_x509_crt_t crt = NULL;
	int ok = 0;
	gnutls_datum_t d = {(unsigned char *)pem, (unsigned)strlen(pem)};
	if (gnutls_x509_crt_init(&crt) == 0 &&
	    gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_PEM) == 0) {
		unsigned char ip[16];
		ok = gnutls_x509_crt_get_expiration_time(crt) > time(NULL) + 86400;
		const char *want[] = {"127.0.0.1", is_wildcard(host) ? "127.0.0.1" : host};
		for (size_t i = 0; i < 2 && ok; i++) {
			if (inet_pton(AF_INET, want[i], ip) == 1)
				ok = gnutls_x509_crt_check_ip(crt, ip, 4, 0);
			else if (inet_pton(AF_INET6, want[i], ip) == 1)
				ok = gnutls_x509_crt_check_ip(crt, ip, 16, 0);
			else
				ok = gnutls_x509_crt_check_hostname(crt, want[i]);
		}
	}
	if (crt)
		gnutls_x509_crt_deinit(crt);
	free(pem);
	return ok;
}

static int add_san(gnutls_x509_crt_t crt, const char *name)
{
	unsigned char ip[16];
	if (inet_pton(AF_INET, name, ip) == 1)
		return gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, 4,
							    GNUTLS_FSAN_APPEND);
	if (inet_pton(AF_INET6, name, ip) == 1)
		return gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, 16,
							    GNUTLS_FSAN_APPEND);
	return gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, name,
						    (unsigned)strlen(name), GNUTLS_FSAN_APPEND);
}

/* Writes data to dir/name with mode, by a temporary file and rename. */
static int write_file(const char *dir, const char *name, const void *data, size_t len, mode_t mode,
		      char *err, size_t errlen)
{
	char path[4096], tmp[4200];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	unlink(tmp);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0)
		return fp_errf(FP_EIO, err, errlen, "tls: %s: %s", tmp, strerror(errno));
	const char *p = data;
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(fd, p + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = errno;
			close(fd);
			unlink(tmp);
			return fp_errf(FP_EIO, err, errlen, "tls: %s: %s", tmp, strerror(e));
		}
		off += (size_t)w;
	}
	if (fsync(fd) < 0 || close(fd) < 0 || rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		return fp_errf(FP_EIO, err, errlen, "tls: %s: %s", path, strerror(e));
	}
	return 0;
}

#define GT(call)                                                                \
	do {                                                                    \
		int grc_ = (call);                                              \
		if (grc_ < 0) {                                                 \
			rc = fp_errf(FP_EIO, err, errlen, "tls: %s: %s", #call, \
				     gnutls_strerror(grc_));                    \
			goto out;                                               \
		}                                                               \
	} while (0)

int api_tls_ensure_self_signed(const char *dir, const char *listen, int *made, char *err,
			       size_t errlen)
{
	if (made)
		*made = 0;
	if (!dir)
		return fp_errf(FP_EINVAL, err, errlen, "tls: no data dir for a certificate");
	char host[256], cpath[4096], kpath[4096];
	listen_host(listen, host, sizeof(host));
	snprintf(cpath, sizeof(cpath), "%s/" API_TLS_CERT_FILE, dir);
	snprintf(kpath, sizeof(kpath), "%s/" API_TLS_KEY_FILE, dir);
	if (access(kpath, R_OK) == 0 && covers(cpath, host)) {
		char cap[4096];
		snprintf(cap, sizeof(cap), "%s/" API_TLS_CA_FILE, dir);
		if (access(cap, R_OK) == 0)
			return 0;
	}
	int rc = 0;
	gnutls_x509_privkey_t key = NULL;
	gnutls_x509_crt_t crt = NULL;
	gnutls_datum_t kpem = {NULL, 0}, cpem = {NULL, 0};
	GT(gnutls_x509_privkey_init(&key));
	GT(gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
					GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0));
	GT(gnutls_x509_crt_init(&crt));
	GT(gnutls_x509_crt_set_version(crt, 3));
	unsigned char serial[16];
	GT(gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof(serial)));
	serial[0] &= 0x7f; /* a positive INTEGER (RFC 5280 section 4.1.2.2) */
	GT(gnutls_x509_crt_set_serial(crt, serial, sizeof(serial)));
	time_t now = time(NULL);
	GT(gnutls_x509_crt_set_activation_time(crt, now - 3600));
	GT(gnutls_x509_crt_set_expiration_time(crt, now + (time_t)API_TLS_DAYS * 86400));
	GT(gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_ORGANIZATION_NAME, 0, "fleetplane",
					 10));
	GT(gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, "fleetplane API",
					 14));
	GT(gnutls_x509_crt_set_key(crt, key));
	GT(gnutls_x509_crt_set_basic_constraints(crt, 1, -1));
	GT(gnutls_x509_crt_set_key_usage(crt,
					 GNUTLS_KEY_DIGITAL_SIGNATURE | GNUTLS_KEY_KEY_CERT_SIGN));
	GT(gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0));
	GT(add_san(crt, "127.0.0.1"));
	GT(add_san(crt, "localhost"));
	if (is_wildcard(host)) {
		char hn[256] = "";
		GT(add_san(crt, "::1"));
		if (gethostname(hn, sizeof(hn) - 1) == 0 && hn[0] && strcmp(hn, "localhost"))
			GT(add_san(crt, hn));
	} else if (strcmp(host, "127.0.0.1") != 0 && strcmp(host, "localhost") != 0) {
		GT(add_san(crt, host));
	}
	unsigned char kid[64];
	size_t kidlen = sizeof(kid);
	GT(gnutls_x509_crt_get_key_id(crt, 0, kid, &kidlen));
	GT(gnutls_x509_crt_set_subject_key_id(crt, kid, kidlen));
	GT(gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0));
	GT(gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &kpem));
	GT(gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &cpem));
	rc = write_file(dir, API_TLS_KEY_FILE, kpem.data, kpem.size, 0600, err, errlen);
	if (rc == 0)
		rc = write_file(dir, API_TLS_CERT_FILE, cpem.data, cpem.size, 0644, err, errlen);
	if (rc == 0)
		rc = write_file(dir, API_TLS_CA_FILE, cpem.data, cpem.size, 0644, err, errlen);
	if (rc == 0 && made)
		*made = 1;
out:
	if (kpem.data) {
		explicit_bzero(kpem.data, kpem.size);
		gnutls_free(kpem.data);
	}
	if (cpem.data)
		gnutls_free(cpem.data);
	if (crt)
		gnutls_x509_crt_deinit(crt);
	if (key)
		gnutls_x509_privkey_deinit(key);
	return rc;
}
