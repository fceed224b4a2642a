/* tls.h - the API listener's TLS material (tls.c, GnuTLS): a self-signed certificate made on
 * first start into the data dir when serve is given none, and the PEM files read for
 * libmicrohttpd (which speaks TLS through GnuTLS in Debian's build: libmicrohttpd12 links
 * libgnutls30). Authenticated kubectl needs TLS: it sends no bearer token over http
 * (../shared/recipes/kubectl.md section 1). */
#ifndef FP_API_TLS_H
#define FP_API_TLS_H

#include <stddef.h>

/* File names under the data dir for the generated pair; clients trust API_TLS_CA_FILE, which
 * for a generated certificate is the certificate itself (self-signed, CA:TRUE). */
#define API_TLS_CERT_FILE "tls.crt"
#define API_TLS_KEY_FILE "tls.key"
#define API_TLS_CA_FILE "ca.crt"
#define API_TLS_MAX_PEM (256 * 1024) /* bytes of a PEM file we read */
#define API_TLS_DAYS 3650            /* validity of a generated certificate */

/* Makes sure <dir>/tls.crt, <dir>/tls.key (0600) and <dir>/ca.crt exist and that the
 * certificate covers the host of listen ("host:port", as api_listen_parse takes it): an IP
 * literal becomes an IP SAN, a name a DNS SAN; an empty, "*", 0.0.0.0 or [::] host gives
 * 127.0.0.1, ::1, "localhost" and the machine's hostname. 127.0.0.1 and localhost are always
 * included. An existing generated pair that does not cover the host is made again (it is ours:
 * nobody else writes these names). ECDSA P-256, SHA-256, valid API_TLS_DAYS days, serial and
 * key from GnuTLS's random source. Files are written to a temporary name and renamed. Returns
 * 0, or FP_EIO / FP_EINVAL with "tls: ..." in err. *made (may be NULL) is 1 when a new pair
 * was written. */
int api_tls_ensure_self_signed(const char *dir, const char *listen, int *made, char *err,
			       size_t errlen);

/* Reads a PEM file of at most API_TLS_MAX_PEM bytes into a new NUL-terminated string
 * (*out, caller frees; wipe a key with explicit_bzero before free). Returns 0 or FP_EIO /
 * FP_ETOOBIG with "tls: PATH: why" in err. */
int api_tls_read_pem(const char *path, char **out, char *err, size_t errlen);

/* Checks that cert_pem and key_pem parse and belong together (GnuTLS). Returns 0 or
 * FP_EINVAL with the reason in err. */
int api_tls_check_pair(const char *cert_pem, const char *key_pem, char *err, size_t errlen);

#endif
