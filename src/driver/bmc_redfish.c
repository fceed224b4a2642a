/* bmc_redfish.c - the Redfish BMC driver: HTTP/JSON to a BMC's Redfish service (DMTF DSP0266
 * "Redfish Specification" for the protocol, DSP8010 schemas for ComputerSystem, Chassis,
 * SessionService, UpdateService, Task, LogService) over libcurl, JSON with jansson.
 *
 * One struct rf_bmc per BMC, user and password (address + username + a keyed hash of the
 * password, so a node with a wrong password never rides on another node's session) holds a
 * reused libcurl easy handle
 * (keep-alive), the service root's links, the chosen ComputerSystem and the session token; its
 * mutex is held for the whole of one driver call, so the easy handle is never shared between
 * threads. Each call runs: discovery (cached) -> session (cached; re-login once on 401) ->
 * the resource GETs and the one PATCH/POST the call needs. Every HTTP request is bounded by the
 * call's deadline (CURLOPT_TIMEOUT_MS = time left) and its response by RF_MAX_RESPONSE.
 * docs/driver-redfish.md is the user-facing description. */
#include "driver/bmc_redfish.h"
#include "driver/bmc_redfish_parse.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <sodium.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/hmap.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "base/timefmt.h"

#define RF_MAX_RESPONSE (4u << 20)     /* bytes of one response body */
#define RF_DEFAULT_TIMEOUT_MS 60000    /* per request when the call has no deadline */
#define RF_DEFAULT_RETRY_AFTER_MS 1000 /* 429/503 without a usable Retry-After */
#define RF_FREE_TIMEOUT_MS 2000        /* session DELETE in free */
#define RF_MAX_IMAGE (4ull << 30)      /* bytes of a firmware image_path pushed (4 GiB) */
#define RF_CRED_BYTES 32               /* crypto_generichash output kept per session entry */
#define RF_MAX_USERNAME 64             /* bytes of spec.bmc.username (core/codec.c's bound too) */
#define RF_MAX_PASSWORD 256            /* bytes of a password (core/codec.c's bound too) */

enum rf_auth {
	RF_AUTH_NONE,
	RF_AUTH_SESSION,
	RF_AUTH_BASIC
};

/* One BMC. Everything below mu is guarded by it. */
struct rf_bmc {
	pthread_mutex_t mu;
	char *base; /* "http[s]://host[:port]" */
	CURL *curl;
	char *token;   /* X-Auth-Token (secret), or NULL */
	char *session; /* the session's URI, for DELETE */
	int tls_verify;
	char *ca_file;
	int discovered;
	char *systems, *sessions, *update;
	char *sys_for; /* the spec.bmc.system system_uri was chosen for ("" = none given) */
	char *system_uri;
	int limit_warned;
	/* BLAKE2b (libsodium crypto_generichash) of the password, keyed with the instance's
	 * random cred_key: which credential the session belongs to. The password itself is kept
	 * only for the length of a call (in its bmc_target). Set at creation, never changed. */
	unsigned char cred[RF_CRED_BYTES];
};

struct rf {
	struct fp_clock *clock;
	pthread_mutex_t mu; /* guards bmcs */
	struct hmap bmcs;   /* "base\nusername\nhex(cred)" -> struct rf_bmc */
	unsigned char cred_key[crypto_generichash_KEYBYTES]; /* random, per instance */
};

/* One driver call. */
struct rf_call {
	struct bmc *b;
	struct rf_bmc *r;
	const struct bmc_target *t;
	int64_t deadline;
	char *err;
	size_t errlen;
	int basic; /* use basic auth for the rest of this call (session limit reached) */
};

struct rf_resp {
	long status;
	json_t *body; /* parsed body, or NULL */
	struct buf raw;
	struct rf_headers h; /* ETag, Location, X-Auth-Token of a login answer, Retry-After */
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void resp_init(struct rf_resp *p)
{
	memset(p, 0, sizeof(*p));
	buf_init(&p->raw, RF_MAX_RESPONSE);
	rf_headers_init(&p->h);
}

static void resp_release(struct rf_resp *p)
{
	json_decref(p->body);
	buf_release(&p->raw);
	rf_headers_release(&p->h);
	memset(p, 0, sizeof(*p));
	rf_headers_init(&p->h);
}

static void resp_reset(struct rf_resp *p)
{
	resp_release(p);
	resp_init(p);
}

static int64_t now_ms(struct rf_call *c)
{
	return clock_now_ms(c->b->clock);
}

static void observe_reason(struct rf_call *c, const char *reason)
{
	if (c->t->observed)
		snprintf(c->t->observed->power_reason, sizeof(c->t->observed->power_reason), "%s",
			 reason);
}

/* ---- address ---- */

/* addr as it may appear in an error: at most 64 bytes, a byte outside printable ASCII as '?'
 * (half a UTF-8 character would make the text invalid). Only for addresses without '@'. */
static void addr_shown(const char *addr, char *out, size_t n)
{
	size_t i = 0;
	for (; addr[i] && i < 64 && i + 1 < n; i++) {
		unsigned char ch = (unsigned char)addr[i];
		out[i] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
	}
	out[i] = '\0';
}

int rf_parse_address(const char *addr, char *base, size_t n, char *err, size_t errlen)
{
	if (!addr || !addr[0])
		return fp_errf(
			FP_EINVAL, err, errlen,
			"spec.bmc.address is empty: want http://host[:port] or https://host[:port]");
	/* Before anything echoes the address: what precedes '@' is user info, most likely a
	 * password (RFC 3986 section 3.2.1). */
	if (strchr(addr, '@'))
		return fp_errf(FP_EINVAL, err, errlen,
			       "spec.bmc.address: user info (\"user:password@\") is not allowed in "
			       "the URL; use spec.bmc.username and spec.bmc.password");
	char shown[72];
	addr_shown(addr, shown, sizeof(shown));
	const char *h;
	if (strncasecmp(addr, "https://", 8) == 0)
		h = addr + 8;
	else if (strncasecmp(addr, "http://", 7) == 0)
		h = addr + 7;
	else
		return fp_errf(FP_EINVAL, err, errlen,
			       "spec.bmc.address \"%s\" is not a URL: want http://host[:port] or "
			       "https://host[:port]",
			       shown);
	size_t len = strlen(h);
	if (len > 0 && h[len - 1] == '/')
		len--;
	if (len == 0)
		return fp_errf(FP_EINVAL, err, errlen, "spec.bmc.address \"%s\" has no host",
			       shown);
	if (len > 255)
		return fp_errf(FP_EINVAL, err, errlen, "spec.bmc.address is over 255 characters");
	const char *colon = NULL;
	int bracket = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)h[i];
		if (ch == '[' && i == 0) {
			bracket = 1;
		} else if (ch == ']' && bracket) {
			bracket = 2;
		} else if (ch == ':' && bracket != 1) {
			colon = h + i;
		} else if (ch == '/' || ch == '?' || ch == '#') {
			return fp_errf(FP_EINVAL, err, errlen,
				       "spec.bmc.address \"%s\": '%c' at offset %zu; want only "
				       "scheme://host[:port] (no path, query or fragment)",
				       shown, ch, (size_t)(h - addr) + i);
		} else if (!(isalnum(ch) || ch == '.' || ch == '-' || ch == '_' ||
			     (bracket == 1 && ch == ':'))) {
			return fp_errf(FP_EINVAL, err, errlen,
				       "spec.bmc.address \"%s\": character 0x%02x at offset %zu "
				       "is not allowed in a host",
				       shown, ch, (size_t)(h - addr) + i);
		}
	}
	if (bracket == 1)
		return fp_errf(FP_EINVAL, err, errlen, "spec.bmc.address \"%s\": '[' without ']'",
			       shown);
	if (colon) {
		size_t plen = len - (size_t)(colon + 1 - h);
		long port = 0;
		for (size_t i = 0; i < plen; i++) {
			if (!isdigit((unsigned char)colon[1 + i]) || port > 65535)
				return fp_errf(FP_EINVAL, err, errlen,
					       "spec.bmc.address \"%s\": port is not a number",
					       shown);
			port = port * 10 + (colon[1 + i] - '0');
		}
		if (plen == 0 || port < 1 || port > 65535)
			return fp_errf(FP_EINVAL, err, errlen,
				       "spec.bmc.address \"%s\": port must be 1-65535", shown);
		if (colon == h)
			return fp_errf(FP_EINVAL, err, errlen,
				       "spec.bmc.address \"%s\" has no host", shown);
	}
	int w = snprintf(base, n, "%.*s%.*s", (int)(h - addr), addr, (int)len, h);
	if (w < 0 || (size_t)w >= n)
		return fp_errf(FP_EINVAL, err, errlen, "spec.bmc.address is too long");
	for (char *p = base; *p && *p != ':'; p++)
		*p = (char)tolower((unsigned char)*p);
	return 0;
}

/* Credentials of one spec (enroll/PUT through rf_validate, every call through call_begin:
 * the same code). username: 1..RF_MAX_USERNAME bytes; password (when set): at most
 * RF_MAX_PASSWORD bytes; neither with a control character (they go into a JSON body and an
 * Authorization header). On error *field names the spec.bmc field; never a byte of the
 * password in err. */
static int check_creds(const char *username, const char *password, const char **field, char *err,
		       size_t errlen)
{
	*field = "spec.bmc.username";
	if (!username || !username[0])
		return fp_errf(FP_EINVAL, err, errlen,
			       "spec.bmc.username: required for the redfish driver");
	size_t n = strnlen(username, RF_MAX_USERNAME + 1);
	if (n > RF_MAX_USERNAME)
		return fp_errf(FP_EINVAL, err, errlen, "spec.bmc.username: longer than %d bytes",
			       RF_MAX_USERNAME);
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)username[i];
		if (ch < 0x20 || ch == 0x7f)
			return fp_errf(FP_EINVAL, err, errlen,
				       "spec.bmc.username: control character 0x%02x at offset %zu",
				       ch, i);
	}
	*field = "spec.bmc.password";
	if (password) {
		n = strnlen(password, RF_MAX_PASSWORD + 1);
		if (n > RF_MAX_PASSWORD)
			return fp_errf(FP_EINVAL, err, errlen,
				       "spec.bmc.password: longer than %d bytes", RF_MAX_PASSWORD);
		for (size_t i = 0; i < n; i++) {
			unsigned char ch = (unsigned char)password[i];
			if (ch < 0x20 || ch == 0x7f)
				return fp_errf(FP_EINVAL, err, errlen,
					       "spec.bmc.password: has a control character");
		}
	}
	*field = NULL;
	return 0;
}

/* bmc_driver_ops.validate: spec.bmc at enroll/PUT: the address and credentials with the
 * checks call_begin makes; then no cipher_suite (an IPMI setting) and only redfish_* quirks
 * (calls ignore both). */
static int rf_validate(const struct node_bmc *spec, const char **field, char *err, size_t errlen)
{
	char base[300];
	*field = "spec.bmc.address";
	int rc = rf_parse_address(spec->address, base, sizeof(base), err, errlen);
	if (rc < 0)
		return rc;
	rc = check_creds(spec->username, spec->password, field, err, errlen);
	if (rc < 0)
		return rc;
	/* the password itself is resolved at call time (password_file, sealed text) */
	*field = "spec.bmc.password";
	if (!spec->password && !spec->password_file && !spec->password_sealed)
		return fp_errf(FP_EINVAL, err, errlen,
			       "spec.bmc.password: required for the redfish driver (or "
			       "spec.bmc.password_file)");
	if (spec->password && !spec->password[0])
		return fp_errf(FP_EINVAL, err, errlen, "spec.bmc.password: empty");
	*field = "spec.bmc.cipher_suite";
	if (spec->cipher_suite >= 0)
		return fp_errf(
			FP_EINVAL, err, errlen,
			"spec.bmc.cipher_suite: an IPMI setting; the redfish driver has none");
	*field = "spec.bmc.quirks";
	unsigned other = spec->quirks &
			 ~(unsigned)(BMC_QUIRK_REDFISH_NO_IF_MATCH | BMC_QUIRK_REDFISH_BASIC_AUTH);
	if (other) {
		const char *name = bmc_quirk_name(other & -other);
		return fp_errf(FP_EINVAL, err, errlen,
			       "spec.bmc.quirks: \"%s\" is not a redfish quirk (the redfish driver "
			       "takes only redfish_* quirks)",
			       name[0] ? name : "?");
	}
	*field = NULL;
	return 0;
}

/* ---- HTTP ---- */

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct rf_resp *p = arg;
	size_t n = size * nmemb;
	return buf_append(&p->raw, data, n) == 0 ? n : 0;
}

static void header_value(char *dst, size_t dstlen, const char *v, size_t n)
{
	while (n > 0 && (*v == ' ' || *v == '\t'))
		v++, n--;
	while (n > 0 && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' '))
		n--;
	if (n >= dstlen)
		n = 0; /* too long to be one we trust: treat as absent */
	memcpy(dst, v, n);
	dst[n] = '\0';
}

int64_t rf_parse_retry_after(const char *v, int64_t wall_now_ms)
{
	char *end;
	if (isdigit((unsigned char)v[0])) {
		unsigned long long s = strtoull(v, &end, 10);
		if (*end)
			return -1;
		return s > RF_MAX_RETRY_AFTER_MS / 1000 ? RF_MAX_RETRY_AFTER_MS : (int64_t)s * 1000;
	}
	int64_t at;
	if (fp_time_parse_http(v, &at) < 0)
		return -1;
	int64_t d = at - wall_now_ms;
	return d < 0 ? 0 : d > RF_MAX_RETRY_AFTER_MS ? RF_MAX_RETRY_AFTER_MS : d;
}

void rf_headers_init(struct rf_headers *h)
{
	memset(h, 0, sizeof(*h));
	h->retry_after_ms = -1;
}

void rf_headers_release(struct rf_headers *h)
{
	fp_free_secret(h->token);
	rf_headers_init(h);
}

void rf_header_line(struct rf_headers *h, const char *data, size_t n, int64_t wall_now_ms)
{
	if (n >= 5 && memcmp(data, "HTTP/", 5) == 0) { /* a new response (1xx before it) */
		rf_headers_release(h);
		return;
	}
	const char *colon = memchr(data, ':', n);
	if (!colon)
		return;
	size_t nl = (size_t)(colon - data);
	const char *v = colon + 1;
	size_t vl = n - nl - 1;
	if (nl == 4 && strncasecmp(data, "ETag", 4) == 0) {
		header_value(h->etag, sizeof(h->etag), v, vl);
	} else if (nl == 8 && strncasecmp(data, "Location", 8) == 0) {
		header_value(h->location, sizeof(h->location), v, vl);
	} else if (nl == 12 && strncasecmp(data, "X-Auth-Token", 12) == 0) {
		char tmp[RF_MAX_HEADER];
		header_value(tmp, sizeof(tmp), v, vl);
		fp_free_secret(h->token);
		h->token = tmp[0] ? xstrdup(tmp) : NULL;
		explicit_bzero(tmp, sizeof(tmp));
	} else if (nl == 11 && strncasecmp(data, "Retry-After", 11) == 0) {
		char tmp[128];
		header_value(tmp, sizeof(tmp), v, vl);
		h->retry_after_ms = tmp[0] ? rf_parse_retry_after(tmp, wall_now_ms) : -1;
	}
}

struct hdr_ctx {
	struct rf_resp *p;
	struct rf_call *c;
};

static size_t on_header(char *data, size_t size, size_t nmemb, void *arg)
{
	struct hdr_ctx *hc = arg;
	size_t n = size * nmemb;
	rf_header_line(&hc->p->h, data, n, clock_wall_ms(hc->c->b->clock));
	return n;
}

/* A URI from the BMC: an absolute path, or an absolute URL on the BMC's own origin. Anything
 * with spaces or control characters is refused (it would go into a request line). */
int rf_make_url(const char *base, const char *uri, char *url, size_t n, char *err, size_t errlen)
{
	for (const char *s = uri; *s; s++)
		if ((unsigned char)*s <= 0x20 || *s == 0x7f)
			return fp_errf(FP_EBMC, err, errlen,
				       "BMC gave a URI with a space or control character");
	size_t bl = strlen(base);
	int w;
	if (strncasecmp(uri, "http://", 7) == 0 || strncasecmp(uri, "https://", 8) == 0) {
		if (strncasecmp(uri, base, bl) != 0 || (uri[bl] != '/' && uri[bl] != '\0'))
			return fp_errf(FP_EBMC, err, errlen,
				       "BMC pointed to another origin (%.80s); not followed", uri);
		w = snprintf(url, n, "%s", uri);
	} else if (uri[0] == '/') {
		w = snprintf(url, n, "%s%s", base, uri);
	} else {
		return fp_errf(FP_EBMC, err, errlen, "BMC gave a relative URI \"%.80s\"", uri);
	}
	if (w < 0 || (size_t)w >= n)
		return fp_errf(FP_EBMC, err, errlen, "BMC gave a URI over %zu bytes", n);
	return 0;
}

static int make_url(struct rf_call *c, const char *uri, char *url, size_t n)
{
	return rf_make_url(c->r->base, uri, url, n, c->err, c->errlen);
}

/* One HTTP exchange, no retries. 0 with resp filled (any status), or FP_ETIMEDOUT/FP_EIO/
 * FP_EBMC for transport failures. `body` is a JSON request body (the login's is a secret),
 * `mime` a multipart/form-data one (borrowed; its parts are rewound by libcurl when sent
 * again); at most one of them. */
static int http_once(struct rf_call *c, const char *method, const char *uri, const char *body,
		     curl_mime *mime, const char *if_match, enum rf_auth auth, struct rf_resp *p)
{
	char url[2048];
	int rc = make_url(c, uri, url, sizeof(url));
	if (rc < 0)
		return rc;
	int64_t left = RF_DEFAULT_TIMEOUT_MS;
	if (c->deadline) {
		left = c->deadline - now_ms(c);
		if (left <= 0)
			return fp_errf(FP_ETIMEDOUT, c->err, c->errlen,
				       "deadline passed before %s %.200s", method, uri);
	}
	CURL *h = c->r->curl;
	curl_easy_reset(h); /* keeps the live connection (keep-alive) */
	struct curl_slist *hdrs = NULL;
	hdrs = curl_slist_append(hdrs, "Accept: application/json");
	hdrs = curl_slist_append(hdrs, "OData-Version: 4.0");
	hdrs = curl_slist_append(hdrs, "Expect:");
	char line[RF_MAX_HEADER + 32];
	if (body)
		hdrs = curl_slist_append(hdrs, "Content-Type: application/json; charset=utf-8");
	if (if_match) {
		snprintf(line, sizeof(line), "If-Match: %s", if_match);
		hdrs = curl_slist_append(hdrs, line);
	}
	if (auth == RF_AUTH_SESSION && c->r->token) {
		snprintf(line, sizeof(line), "X-Auth-Token: %s", c->r->token);
		hdrs = curl_slist_append(hdrs, line);
		explicit_bzero(line, sizeof(line));
	}
	if (!hdrs)
		abort(); /* curl_slist_append fails only on out-of-memory */
	struct hdr_ctx hc = {p, c};
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)left);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)left);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, p);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &hc);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, c->r->tls_verify ? 1L : 0L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, c->r->tls_verify ? 2L : 0L);
	if (c->r->ca_file)
		curl_easy_setopt(h, CURLOPT_CAINFO, c->r->ca_file);
	if (auth == RF_AUTH_BASIC) {
		curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(h, CURLOPT_USERNAME, c->t->username ? c->t->username : "");
		curl_easy_setopt(h, CURLOPT_PASSWORD, c->t->password ? c->t->password : "");
	}
	if (strcmp(method, "GET") != 0) {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
		if (body) {
			curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
			curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
		} else if (mime) {
			curl_easy_setopt(h, CURLOPT_MIMEPOST, mime);
		}
	}
	CURLcode cc = curl_easy_perform(h);
	if (mime)
		curl_easy_setopt(h, CURLOPT_MIMEPOST, NULL);
	/* the basic credentials must not stay in the handle between calls */
	curl_easy_setopt(h, CURLOPT_PASSWORD, "");
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(hdrs);
	if (cc != CURLE_OK) {
		if (cc == CURLE_OPERATION_TIMEDOUT)
			return fp_errf(FP_ETIMEDOUT, c->err, c->errlen,
				       "%s %.200s: no answer within %" PRId64 " ms (deadline)",
				       method, uri, left);
		if (cc == CURLE_WRITE_ERROR && p->raw.len + CURL_MAX_WRITE_SIZE >= RF_MAX_RESPONSE)
			return fp_errf(FP_EBMC, c->err, c->errlen,
				       "%s %.200s: response over %u bytes", method, uri,
				       RF_MAX_RESPONSE);
		if (cc == CURLE_PEER_FAILED_VERIFICATION || cc == CURLE_SSL_CACERT_BADFILE)
			return fp_errf(FP_EIO, c->err, c->errlen,
				       "%s: TLS verification failed (%s); set spec.bmc.ca_file, or "
				       "tls_verify false",
				       c->r->base, curl_easy_strerror(cc));
		return fp_errf(FP_EIO, c->err, c->errlen, "%s %s%.200s: %s", method, c->r->base,
			       uri[0] == '/' ? uri : "", curl_easy_strerror(cc));
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &p->status);
	if (p->raw.len > 0) {
		char perr[128];
		if (jsonx_parse(p->raw.data, p->raw.len, &p->body, perr, sizeof(perr)) < 0) {
			p->body = NULL;
			if (p->status >= 200 && p->status < 300)
				return fp_errf(
					FP_EBMC, c->err, c->errlen,
					"%s %.200s: HTTP %ld with a body that is not JSON (%s)",
					method, uri, p->status, perr);
		}
	}
	return 0;
}

const char *rf_message_id(const json_t *body)
{
	const json_t *e = json_object_get(body, "error");
	const json_t *info = json_object_get(e, "@Message.ExtendedInfo");
	const char *id = json_string_value(json_object_get(json_array_get(info, 0), "MessageId"));
	if (!id)
		id = json_string_value(json_object_get(e, "code"));
	if (!id)
		id = json_string_value(json_object_get(
			json_array_get(json_object_get(body, "@Message.ExtendedInfo"), 0),
			"MessageId"));
	return id ? id : "";
}

/* http_once plus 429/503 handling: Retry-After within the deadline -> wait, try once more;
 * otherwise FP_EAGAIN with observed->retry_after_ms. */
static int http_send(struct rf_call *c, const char *method, const char *uri, const char *body,
		     curl_mime *mime, const char *if_match, enum rf_auth auth, struct rf_resp *p)
{
	for (int attempt = 0;; attempt++) {
		int rc = http_once(c, method, uri, body, mime, if_match, auth, p);
		if (rc < 0 || (p->status != 429 && p->status != 503))
			return rc;
		int64_t ra = p->h.retry_after_ms >= 0 ? p->h.retry_after_ms
						      : RF_DEFAULT_RETRY_AFTER_MS;
		if (attempt == 0 && (!c->deadline || now_ms(c) + ra < c->deadline)) {
			log_info("redfish: BMC busy, retrying once bmc=%s status=%ld "
				 "retry_after_ms=%" PRId64,
				 c->r->base, p->status, ra);
			clock_sleep_ms(c->b->clock, ra);
			resp_reset(p);
			continue;
		}
		if (c->t->observed)
			c->t->observed->retry_after_ms = ra;
		return fp_errf(FP_EAGAIN, c->err, c->errlen,
			       "%s %.200s: HTTP %ld %s, Retry-After %" PRId64 " ms%s", method, uri,
			       p->status, rf_message_id(p->body), ra,
			       attempt ? " (again after waiting)" : " (past the deadline)");
	}
}

/* ---- discovery and sessions ---- */

const char *rf_link(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(json_object_get(o, key), "@odata.id"));
}

static void set_str(char **dst, const char *s)
{
	free(*dst);
	*dst = s ? xstrdup(s) : NULL;
}

/* GET /redfish/v1/ (DSP0266 "Service root"); unauthenticated, with basic auth as a fallback
 * for BMCs that protect it. */
static int discover(struct rf_call *c)
{
	if (c->r->discovered)
		return 0;
	struct rf_resp p;
	resp_init(&p);
	int rc = http_send(c, "GET", "/redfish/v1/", NULL, NULL, NULL, RF_AUTH_NONE, &p);
	if (rc == 0 && (p.status == 401 || p.status == 403)) {
		resp_reset(&p);
		rc = http_send(c, "GET", "/redfish/v1/", NULL, NULL, NULL, RF_AUTH_BASIC, &p);
	}
	if (rc < 0)
		goto out;
	if (p.status == 401 || p.status == 403) {
		rc = fp_errf(FP_EAUTH, c->err, c->errlen,
			     "%s: service root refused (HTTP %ld) for user %s", c->r->base,
			     p.status, c->t->username ? c->t->username : "");
		goto out;
	}
	if (p.status != 200 || !json_is_object(p.body)) {
		rc = fp_errf(FP_EBMC, c->err, c->errlen,
			     "%s/redfish/v1/: HTTP %ld %s; is this a Redfish service?", c->r->base,
			     p.status, rf_message_id(p.body));
		goto out;
	}
	const char *systems, *sessions, *update;
	rf_root_links(p.body, &systems, &sessions, &update);
	set_str(&c->r->systems, systems);
	set_str(&c->r->sessions, sessions);
	set_str(&c->r->update, update);
	if (!c->r->systems) {
		rc = fp_errf(FP_EBMC, c->err, c->errlen, "%s: service root has no Systems link",
			     c->r->base);
		goto out;
	}
	c->r->discovered = 1;
out:
	resp_release(&p);
	return rc;
}

static void drop_session(struct rf_bmc *r)
{
	fp_free_secret(r->token);
	r->token = NULL;
	free(r->session);
	r->session = NULL;
}

/* POST SessionService/Sessions (DSP0266 "Session management"). On a session limit
 * (MessageId ...SessionLimitExceeded) it switches this call to basic auth and says so once. */
static int login(struct rf_call *c)
{
	json_t *req = json_pack("{s:s,s:s}", "UserName", c->t->username ? c->t->username : "",
				"Password", c->t->password ? c->t->password : "");
	char *body = jsonx_dumps(req);
	json_t *pw = json_object_get(req, "Password");
	/* wipe the password inside the jansson string too before it is freed */
	if (pw)
		explicit_bzero((char *)json_string_value(pw), json_string_length(pw));
	json_decref(req);
	struct rf_resp p;
	resp_init(&p);
	int rc = http_send(c, "POST", c->r->sessions, body, NULL, NULL, RF_AUTH_NONE, &p);
	fp_free_secret(body);
	if (rc < 0)
		goto out;
	if (p.status == 401 || p.status == 403) {
		rc = fp_errf(FP_EAUTH, c->err, c->errlen,
			     "%s: session login refused (HTTP %ld) for user %s", c->r->base,
			     p.status, c->t->username ? c->t->username : "");
		goto out;
	}
	if (p.status >= 300 && strstr(rf_message_id(p.body), "SessionLimitExceeded")) {
		c->basic = 1;
		if (!c->r->limit_warned) {
			c->r->limit_warned = 1;
			log_warn("redfish: session limit reached, using basic auth until a session "
				 "can be made bmc=%s user=%s",
				 c->r->base, c->t->username ? c->t->username : "");
		}
		goto out;
	}
	if (p.status < 200 || p.status >= 300 || !p.h.token) {
		rc = fp_errf(FP_EBMC, c->err, c->errlen, "%s: session login answered HTTP %ld %s%s",
			     c->r->base, p.status, rf_message_id(p.body),
			     p.h.token ? "" : " without X-Auth-Token");
		goto out;
	}
	char terr[160];
	if (rf_header_safe("X-Auth-Token", p.h.token, RF_MAX_HEADER, terr, sizeof(terr)) < 0) {
		rc = fp_errf(FP_EBMC, c->err, c->errlen, "%s: session login: %s", c->r->base, terr);
		goto out;
	}
	drop_session(c->r);
	c->r->token = p.h.token;
	p.h.token = NULL;
	const char *loc = rf_session_uri(p.h.location, p.body);
	c->r->session = loc ? xstrdup(loc) : NULL;
	c->r->limit_warned = 0;
out:
	resp_release(&p);
	return rc;
}

static enum rf_auth auth_mode(struct rf_call *c)
{
	if (c->basic || (c->t->quirks & BMC_QUIRK_REDFISH_BASIC_AUTH) || !c->r->sessions)
		return RF_AUTH_BASIC;
	return RF_AUTH_SESSION;
}

/* One authenticated request: session (login first if needed, again once on 401) or basic.
 * 0 on 2xx; FP_ECONFLICT on 412; FP_EAUTH on 401/403; FP_EBMC on other statuses with the
 * MessageId; resp is filled in every case. body (JSON) or mime (multipart), or neither. */
static int request_any(struct rf_call *c, const char *method, const char *uri, const json_t *body,
		       curl_mime *mime, const char *if_match, struct rf_resp *p)
{
	char *text = body ? jsonx_dumps(body) : NULL;
	int rc = 0;
	for (int relogin = 0;; relogin++) {
		enum rf_auth a = auth_mode(c);
		if (a == RF_AUTH_SESSION && !c->r->token) {
			rc = login(c);
			if (rc < 0)
				goto out;
			a = auth_mode(c);
		}
		resp_reset(p);
		rc = http_send(c, method, uri, text, mime, if_match, a, p);
		if (rc < 0)
			goto out;
		if (p->status == 401 && a == RF_AUTH_SESSION && relogin == 0) {
			drop_session(c->r); /* expired or revoked: log in again, once */
			continue;
		}
		break;
	}
	if (p->status >= 200 && p->status < 300)
		goto out;
	if (p->status == 401 || p->status == 403)
		rc = fp_errf(FP_EAUTH, c->err, c->errlen, "%s %.200s: HTTP %ld %s for user %s",
			     method, uri, p->status, rf_message_id(p->body),
			     c->t->username ? c->t->username : "");
	else if (p->status == 412)
		rc = fp_errf(FP_ECONFLICT, c->err, c->errlen,
			     "%s %.200s: HTTP 412, the resource changed (ETag)", method, uri);
	else
		rc = fp_errf(FP_EBMC, c->err, c->errlen, "%s %.200s: HTTP %ld %s", method, uri,
			     p->status, rf_message_id(p->body)[0] ? rf_message_id(p->body) : "");
out:
	free(text);
	return rc;
}

static int request(struct rf_call *c, const char *method, const char *uri, const json_t *body,
		   const char *if_match, struct rf_resp *p)
{
	return request_any(c, method, uri, body, NULL, if_match, p);
}

/* GET uri into *out (new reference) with its ETag (header, else @odata.etag) in etag. */
static int get_json(struct rf_call *c, const char *uri, json_t **out, char *etag, size_t etaglen)
{
	struct rf_resp p;
	resp_init(&p);
	*out = NULL;
	int rc = request(c, "GET", uri, NULL, NULL, &p);
	if (rc == 0 && !json_is_object(p.body))
		rc = fp_errf(FP_EBMC, c->err, c->errlen,
			     "GET %.200s: HTTP %ld without a JSON object", uri, p.status);
	if (rc == 0 && etag) {
		char eerr[200];
		rc = rf_etag_of(p.h.etag, p.body, etag, etaglen, eerr, sizeof(eerr));
		if (rc < 0)
			fp_errf(rc, c->err, c->errlen, "GET %.200s: %s", uri, eerr);
	}
	if (rc == 0)
		*out = json_incref(p.body);
	resp_release(&p);
	return rc;
}

/* The ComputerSystem this target means: spec.bmc.system by Id, or the only one. */
static int choose_system(struct rf_call *c)
{
	const char *want = c->t->system ? c->t->system : "";
	if (c->r->system_uri && c->r->sys_for && strcmp(c->r->sys_for, want) == 0)
		return 0;
	json_t *coll;
	int rc = get_json(c, c->r->systems, &coll, NULL, 0);
	if (rc < 0)
		return rc;
	const char *uri = NULL;
	rc = rf_choose_system(coll, want, c->r->base, &uri, c->err, c->errlen);
	if (rc == 0) {
		set_str(&c->r->system_uri, uri);
		set_str(&c->r->sys_for, want);
	}
	json_decref(coll);
	return rc;
}

/* Discovery, system choice and GET of the System. */
static int get_system(struct rf_call *c, json_t **sys, char *etag, size_t etaglen)
{
	int rc = discover(c);
	if (rc == 0)
		rc = choose_system(c);
	if (rc == 0)
		rc = get_json(c, c->r->system_uri, sys, etag, etaglen);
	if (rc == FP_EBMC && strstr(c->err ? c->err : "", "HTTP 404")) {
		/* the BMC was reset or reconfigured: forget what was discovered */
		c->r->discovered = 0;
		set_str(&c->r->system_uri, NULL);
	}
	return rc;
}

/* ---- calls ---- */

static struct rf *rf_of(struct bmc *b)
{
	return b->impl;
}

static void bmc_entry_free(struct rf_bmc *r);

/* Finds or makes the rf_bmc for t and locks it. */
static int call_begin(struct bmc *b, const struct bmc_target *t, int64_t deadline, char *err,
		      size_t errlen, struct rf_call *c)
{
	memset(c, 0, sizeof(*c));
	char base[300];
	int rc = rf_parse_address(t->address, base, sizeof(base), err, errlen);
	if (rc < 0)
		return rc;
	const char *field;
	rc = check_creds(t->username, t->password, &field, err, errlen);
	if (rc < 0)
		return rc;
	struct rf *s = rf_of(b);
	/* The entry (and its session) belongs to one credential: a node with the same BMC and
	 * user but another password gets its own entry, logs in itself, and is refused if the
	 * password is wrong, instead of riding on another node's session. */
	unsigned char cred[RF_CRED_BYTES];
	const char *pwd = t->password ? t->password : "";
	crypto_generichash(cred, sizeof(cred), (const unsigned char *)pwd, strlen(pwd), s->cred_key,
			   sizeof(s->cred_key));
	char hex[2 * RF_CRED_BYTES + 1];
	sodium_bin2hex(hex, sizeof(hex), cred, sizeof(cred));
	char *key = xasprintf("%s\n%s\n%s", base, t->username, hex);
	pthread_mutex_lock(&s->mu);
	struct rf_bmc *r = hmap_get(&s->bmcs, key);
	if (!r) {
		r = xcalloc(1, sizeof(*r));
		pthread_mutex_init(&r->mu, NULL);
		r->base = xstrdup(base);
		memcpy(r->cred, cred, sizeof(cred));
		r->curl = curl_easy_init();
		if (!r->curl)
			abort(); /* out of memory */
		hmap_put(&s->bmcs, key, r);
	}
	pthread_mutex_unlock(&s->mu);
	free(key);
	/* belt and braces: the entry's credential is this call's */
	BUG_ON(sodium_memcmp(r->cred, cred, sizeof(cred)) != 0);
	sodium_memzero(cred, sizeof(cred));
	pthread_mutex_lock(&r->mu);
	r->tls_verify = t->tls_verify != 0;
	set_str(&r->ca_file, t->ca_file);
	*c = (struct rf_call){.b = b,
			      .r = r,
			      .t = t,
			      .deadline = deadline,
			      .err = err,
			      .errlen = errlen};
	return 0;
}

static void call_end(struct rf_call *c)
{
	if (c->r)
		pthread_mutex_unlock(&c->r->mu);
}

/* call_begin, then GET of the System (get_system). On 0 the caller owns *sys (a new
 * reference) and ends the call (call_end); on an error the call is already ended and *sys is
 * NULL. */
static int call_begin_system(struct bmc *b, const struct bmc_target *t, int64_t deadline, char *err,
			     size_t errlen, struct rf_call *c, json_t **sys)
{
	*sys = NULL;
	int rc = call_begin(b, t, deadline, err, errlen, c);
	if (rc < 0)
		return rc;
	rc = get_system(c, sys, NULL, 0);
	if (rc < 0)
		call_end(c);
	return rc;
}

static int rf_power_get(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			enum bmc_power *out, char *err, size_t errlen)
{
	struct rf_call c;
	json_t *sys, *ch = NULL;
	int rc = call_begin_system(b, t, deadline, err, errlen, &c, &sys);
	if (rc < 0)
		return rc;
	const char *reason = NULL;
	*out = rf_power_system(sys, c.r->system_uri, &reason, err, errlen);
	if (reason) {
		observe_reason(&c, reason);
		goto out;
	}
	const char *chassis = rf_first_chassis(sys);
	if (!chassis)
		goto out;
	rc = get_json(&c, chassis, &ch, NULL, 0);
	if (rc < 0)
		goto out;
	*out = rf_power_chassis(sys, *out, c.r->system_uri, ch, chassis, &reason, err, errlen);
	if (reason)
		observe_reason(&c, reason);
out:
	json_decref(sys);
	json_decref(ch);
	call_end(&c);
	return rc;
}

/* Allowable values of parameter `param` of action object `act`: inline
 * "<param>@Redfish.AllowableValues", else the @Redfish.ActionInfo resource's Parameters
 * (DSP0266 "Allowable values"). *out is a new reference, or NULL when the BMC does not say. */
static int allowable(struct rf_call *c, const json_t *act, const char *param, json_t **out)
{
	*out = rf_allowable_inline(act, param);
	if (*out)
		return 0;
	const char *info = json_string_value(json_object_get(act, "@Redfish.ActionInfo"));
	if (!info)
		return 0;
	json_t *ai;
	int rc = get_json(c, info, &ai, NULL, 0);
	if (rc < 0)
		return rc;
	*out = rf_action_info_values(ai, param);
	json_decref(ai);
	return 0;
}

static int task_wait(struct rf_call *c, const char *monitor, const json_t *first, json_t **out);

static int rf_power_set(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			enum bmc_power_action a, char *err, size_t errlen)
{
	struct rf_call c;
	json_t *sys, *allowed = NULL, *req = NULL, *task = NULL;
	int rc = call_begin_system(b, t, deadline, err, errlen, &c, &sys);
	if (rc < 0)
		return rc;
	struct rf_resp p;
	resp_init(&p);
	const json_t *act = rf_reset_action(sys);
	const char *target = json_string_value(json_object_get(act, "target"));
	if (!target) {
		rc = fp_errf(FP_EUNSUPPORTED, err, errlen,
			     "System %s has no #ComputerSystem.Reset action", c.r->system_uri);
		goto out;
	}
	rc = allowable(&c, act, "ResetType", &allowed);
	if (rc < 0)
		goto out;
	enum bmc_power cur = rf_power_of(json_string_value(json_object_get(sys, "PowerState")));
	const char *rt = rf_reset_type(allowed, a, cur);
	if (!rt) {
		char list[512];
		rf_list_text(allowed, list, sizeof(list));
		if (a == BMC_ACTION_CYCLE && cur == BMC_POWER_UNKNOWN &&
		    (!allowed || !rf_in_list(allowed, "PowerCycle")))
			rc = fp_errf(
				FP_EINVAL, err, errlen,
				"power cycle: the BMC offers no PowerCycle and the PowerState is "
				"unknown, so neither ForceRestart nor On is right; power off, "
				"then on");
		else
			rc = fp_errf(
				FP_EINVAL, err, errlen,
				"power %s: no fitting ResetType among the BMC's allowable values "
				"(%s)",
				bmc_action_name(a), allowed ? list : "none listed");
		goto out;
	}
	req = json_pack("{s:s}", "ResetType", rt);
	if (t->observed) /* from here on, no answer does not mean nothing was done */
		t->observed->maybe_acted = 1;
	rc = request(&c, "POST", target, req, NULL, &p);
	if (rc < 0)
		goto out;
	if (p.status == 202 && p.h.location[0]) {
		rc = task_wait(&c, p.h.location, p.body, &task);
		if (rc == 0 && strcmp(rf_task_state(task), "Completed") != 0)
			rc = fp_errf(FP_EBMC, err, errlen, "ResetType %s: task ended %s", rt,
				     rf_task_state(task));
	}
	if (rc == 0)
		log_debug("redfish: reset node=%s bmc=%s reset_type=%s", t->node, c.r->base, rt);
out:
	resp_release(&p);
	json_decref(sys);
	json_decref(allowed);
	json_decref(req);
	json_decref(task);
	call_end(&c);
	return rc;
}

static int rf_boot_get(struct bmc *b, const struct bmc_target *t, int64_t deadline,
		       struct bmc_boot *out, char *err, size_t errlen)
{
	struct rf_call c;
	json_t *sys;
	int rc = call_begin_system(b, t, deadline, err, errlen, &c, &sys);
	if (rc < 0)
		return rc;
	rf_boot_of(sys, out);
	json_decref(sys);
	call_end(&c);
	return 0;
}

static int rf_boot_set(struct bmc *b, const struct bmc_target *t, int64_t deadline,
		       const struct bmc_boot *want, char *err, size_t errlen)
{
	struct rf_call c;
	int rc = call_begin(b, t, deadline, err, errlen, &c);
	if (rc < 0)
		return rc;
	json_t *sys = NULL, *req = NULL;
	struct rf_resp p;
	resp_init(&p);
	for (int attempt = 0; attempt < 2; attempt++) {
		char etag[256];
		json_decref(sys);
		sys = NULL;
		rc = get_system(&c, &sys, etag, sizeof(etag));
		if (rc < 0)
			goto out;
		json_decref(req);
		req = NULL;
		rc = rf_boot_patch(sys, c.r->system_uri, want, &req, err, errlen);
		if (rc < 0)
			goto out;
		const char *im = etag[0] && !(t->quirks & BMC_QUIRK_REDFISH_NO_IF_MATCH) ? etag
											 : NULL;
		rc = request(&c, "PATCH", c.r->system_uri, req, im, &p);
		if (rc == FP_ECONFLICT && attempt == 0) {
			log_info("redfish: boot override PATCH got 412, re-reading node=%s bmc=%s",
				 t->node, c.r->base);
			continue;
		}
		break;
	}
out:
	resp_release(&p);
	json_decref(sys);
	json_decref(req);
	call_end(&c);
	return rc;
}

static int rf_inventory(struct bmc *b, const struct bmc_target *t, int64_t deadline, json_t **out,
			char *err, size_t errlen)
{
	struct rf_call c;
	json_t *sys, *coll = NULL;
	int rc = call_begin_system(b, t, deadline, err, errlen, &c, &sys);
	if (rc < 0)
		return rc;
	json_t *gpus = json_array();
	const char *procs = rf_link(sys, "Processors");
	if (procs) {
		rc = get_json(&c, procs, &coll, NULL, 0);
		if (rc < 0)
			goto out;
		size_t n = rf_members(coll, RF_MAX_GPUS);
		for (size_t i = 0; i < n; i++) {
			const char *u = rf_member_uri(coll, i);
			json_t *pr;
			if (!u)
				continue;
			rc = get_json(&c, u, &pr, NULL, 0);
			if (rc < 0)
				goto out;
			json_t *g = rf_gpu_entry(pr, json_array_size(gpus));
			if (g)
				json_array_append_new(gpus, g);
			json_decref(pr);
		}
	}
	*out = rf_inventory_doc(sys, gpus);
out:
	json_decref(sys);
	json_decref(coll);
	json_decref(gpus);
	call_end(&c);
	return rc;
}

static int rf_chassis_status(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			     json_t **out, char *err, size_t errlen)
{
	struct rf_call c;
	json_t *sys, *ch = NULL;
	int rc = call_begin_system(b, t, deadline, err, errlen, &c, &sys);
	if (rc < 0)
		return rc;
	const char *chassis = rf_first_chassis(sys);
	if (chassis) {
		rc = get_json(&c, chassis, &ch, NULL, 0);
		if (rc < 0)
			goto out;
	}
	*out = rf_chassis_status_doc(sys, ch, chassis);
out:
	json_decref(sys);
	json_decref(ch);
	call_end(&c);
	return rc;
}

static int rf_sel_read(struct bmc *b, const struct bmc_target *t, int64_t deadline,
		       size_t max_entries, json_t **out, char *err, size_t errlen)
{
	struct rf_call c;
	json_t *sys, *logs = NULL, *svc = NULL, *ents = NULL;
	int rc = call_begin_system(b, t, deadline, err, errlen, &c, &sys);
	if (rc < 0)
		return rc;
	json_t *arr = json_array();
	if (max_entries > RF_MAX_SEL_ENTRIES)
		max_entries = RF_MAX_SEL_ENTRIES;
	const char *ls = rf_link(sys, "LogServices");
	if (!ls) {
		rc = fp_errf(FP_EUNSUPPORTED, err, errlen, "System %s has no LogServices",
			     c.r->system_uri);
		goto out;
	}
	rc = get_json(&c, ls, &logs, NULL, 0);
	if (rc < 0)
		goto out;
	/* the first log service whose LogEntryType is SEL, else the first */
	size_t nls = rf_members(logs, RF_MAX_LOG_SERVICES);
	for (size_t i = 0; i < nls; i++) {
		const char *u = rf_member_uri(logs, i);
		json_t *s;
		if (!u || get_json(&c, u, &s, NULL, 0) < 0)
			continue;
		int sel = rf_log_is_sel(s);
		if (!svc || sel) {
			json_decref(svc);
			svc = json_incref(s);
		}
		json_decref(s);
		if (sel)
			break;
	}
	const char *eu = rf_link(svc, "Entries");
	if (!eu) {
		rc = fp_errf(FP_EUNSUPPORTED, err, errlen, "System %s has no log with Entries",
			     c.r->system_uri);
		goto out;
	}
	rc = get_json(&c, eu, &ents, NULL, 0);
	if (rc < 0)
		goto out;
	json_t *em = json_object_get(ents, "Members");
	size_t n = rf_members(ents, RF_MAX_MEMBERS);
	size_t from = n > max_entries ? n - max_entries : 0;
	/* Members come in the BMC's order (DMTF mockups: oldest first); entries that carry only
	 * a link are read one by one. */
	for (size_t i = from; i < n; i++) {
		json_t *e = json_array_get(em, i);
		if (rf_sel_entry_is_link(e)) {
			const char *u = json_string_value(json_object_get(e, "@odata.id"));
			json_t *full;
			if (!u)
				continue;
			rc = get_json(&c, u, &full, NULL, 0);
			if (rc < 0)
				goto out;
			json_array_append_new(arr, rf_sel_entry(full, i));
			json_decref(full);
		} else {
			json_array_append_new(arr, rf_sel_entry(e, i));
		}
	}
	*out = json_incref(arr);
out:
	json_decref(sys);
	json_decref(logs);
	json_decref(svc);
	json_decref(ents);
	json_decref(arr);
	call_end(&c);
	return rc;
}

/* Polls a task monitor (DSP0266 "Asynchronous operations": 202 + Location while it runs)
 * until the task ends or the deadline is near. *out: {"task","state","percent"?,"messages"}.
 * 0 when it ended (any terminal state: the caller judges), FP_ETIMEDOUT with *out at state
 * Running otherwise; FP_EBMC (nothing polled) when monitor is not printable ASCII, or when an
 * answer other than 202 has a TaskState that is not a string (rf_task_update). */
static int task_wait(struct rf_call *c, const char *monitor, const json_t *first, json_t **out)
{
	json_t *o = rf_task_new(monitor, first);
	if (!o) {
		*out = NULL;
		return fp_errf(FP_EBMC, c->err, c->errlen,
			       "BMC gave a task monitor URI (Location) with a byte that is not "
			       "printable ASCII; not followed");
	}
	char *mon = xstrdup(monitor);
	struct rf_resp p;
	resp_init(&p);
	int rc = 0;
	int64_t wait = RF_POLL_DEFAULT_MS;
	for (int polls = 0; !rf_task_terminal(rf_task_state(o)); polls++) {
		if (polls > 0) {
			if (c->deadline && now_ms(c) + wait >= c->deadline) {
				rc = fp_errf(FP_ETIMEDOUT, c->err, c->errlen,
					     "task %s still %s at the deadline", mon,
					     rf_task_state(o));
				break;
			}
			clock_sleep_ms(c->b->clock, wait);
		}
		rc = request(c, "GET", mon, NULL, NULL, &p);
		if (rc < 0)
			break;
		wait = rf_poll_wait(p.h.retry_after_ms, wait);
		char terr[200];
		rc = rf_task_update(o, p.status, p.body, terr, sizeof(terr));
		if (rc < 0) {
			fp_errf(rc, c->err, c->errlen, "task %s: %s", mon, terr);
			break;
		}
	}
	resp_release(&p);
	free(mon);
	if (rc < 0 && rc != FP_ETIMEDOUT) {
		json_decref(o);
		o = NULL;
	}
	*out = o;
	return rc;
}

/* A local firmware image streamed as the UpdateFile part (libcurl's mime read callbacks). */
struct rf_image {
	int fd;
	uint64_t size;
	char name[128]; /* the file name sent in the part's Content-Disposition */
};

static size_t image_read(char *buf, size_t size, size_t nitems, void *arg)
{
	struct rf_image *im = arg;
	for (;;) {
		ssize_t n = read(im->fd, buf, size * nitems);
		if (n >= 0)
			return (size_t)n;
		if (errno != EINTR)
			return CURL_READFUNC_ABORT;
	}
}

static int image_seek(void *arg, curl_off_t offset, int origin)
{
	struct rf_image *im = arg;
	return lseek(im->fd, (off_t)offset, origin) < 0 ? CURL_SEEKFUNC_FAIL : CURL_SEEKFUNC_OK;
}

/* Opens req->image_path for the upload: an absolute path, the file itself (O_NOFOLLOW: a
 * symbolic link as the last component is refused), a regular file of 1 byte to RF_MAX_IMAGE.
 * 0 with im->fd open, or FP_EINVAL naming the path and what is wrong. */
static int image_open(const char *path, struct rf_image *im, char *err, size_t errlen)
{
	im->fd = -1;
	if (path[0] != '/')
		return fp_errf(FP_EINVAL, err, errlen,
			       "firmware image_path \"%.200s\" is not an absolute path", path);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 && errno == ELOOP)
		return fp_errf(
			FP_EINVAL, err, errlen,
			"firmware image_path %.200s is a symbolic link; refused (opened with "
			"O_NOFOLLOW): give the file itself",
			path);
	if (fd < 0)
		return fp_errf(FP_EINVAL, err, errlen, "firmware image_path %.200s: %s", path,
			       strerror(errno));
	struct stat st;
	int rc = 0;
	if (fstat(fd, &st) < 0)
		rc = fp_errf(FP_EINVAL, err, errlen, "firmware image_path %.200s: %s", path,
			     strerror(errno));
	else if (!S_ISREG(st.st_mode))
		rc = fp_errf(FP_EINVAL, err, errlen,
			     "firmware image_path %.200s is not a regular file", path);
	else if (st.st_size == 0)
		rc = fp_errf(FP_EINVAL, err, errlen, "firmware image_path %.200s is empty", path);
	else if ((uint64_t)st.st_size > RF_MAX_IMAGE)
		rc = fp_errf(FP_EINVAL, err, errlen,
			     "firmware image_path %.200s is %" PRIu64 " bytes, over the %" PRIu64
			     " byte limit",
			     path, (uint64_t)st.st_size, (uint64_t)RF_MAX_IMAGE);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	im->fd = fd;
	im->size = (uint64_t)st.st_size;
	/* the name in Content-Disposition: the last component, printable ASCII without quote or
	 * backslash, others as '_' */
	const char *b = strrchr(path, '/') + 1;
	size_t i;
	for (i = 0; b[i] && i < sizeof(im->name) - 1; i++)
		im->name[i] = (unsigned char)b[i] > 0x20 && (unsigned char)b[i] < 0x7f &&
					      b[i] != '"' && b[i] != '\\'
				      ? b[i]
				      : '_';
	im->name[i] = '\0';
	if (!i)
		snprintf(im->name, sizeof(im->name), "image.bin");
	return 0;
}

/* What an UpdateService offers for updates, for messages: "SimpleUpdate, HttpPushUri". */
static void update_offers(const json_t *us, char *out, size_t n)
{
	const json_t *act = json_object_get(json_object_get(us, "Actions"),
					    "#UpdateService.SimpleUpdate");
	int simple = json_string_value(json_object_get(act, "target")) != NULL;
	int push = json_string_value(json_object_get(us, "HttpPushUri")) != NULL;
	snprintf(out, n, "%s%s%s", simple ? "SimpleUpdate" : "", simple && push ? ", " : "",
		 push      ? "HttpPushUri"
		 : !simple ? "neither SimpleUpdate nor HttpPushUri"
			   : "");
}

/* The SimpleUpdate request body (DSP8010 UpdateService.SimpleUpdate), or an error. */
static int simple_update_body(struct rf_call *c, const json_t *act,
			      const struct bmc_firmware_req *req, json_t **body, json_t **allowed)
{
	*body = json_pack("{s:s}", "ImageURI", req->image_uri);
	if (!*body)
		return fp_errf(FP_EINVAL, c->err, c->errlen, "firmware image_uri is not UTF-8");
	if (req->transfer_protocol) {
		int rc = allowable(c, act, "TransferProtocol", allowed);
		if (rc < 0)
			return rc;
		if (*allowed && !rf_in_list(*allowed, req->transfer_protocol)) {
			char list[256];
			rf_list_text(*allowed, list, sizeof(list));
			return fp_errf(FP_EINVAL, c->err, c->errlen,
				       "TransferProtocol %.32s is not allowed by the BMC (%s)",
				       req->transfer_protocol, list);
		}
		json_object_set_new(*body, "TransferProtocol", json_string(req->transfer_protocol));
	}
	return 0;
}

/* Targets (at most 64 URIs) as a JSON array, or NULL when the caller gives none. */
static json_t *update_targets(const struct bmc_firmware_req *req)
{
	if (!req->targets)
		return NULL;
	json_t *arr = json_array();
	for (size_t i = 0; req->targets[i] && i < 64; i++) {
		json_t *t = json_string(req->targets[i]);
		if (t)
			json_array_append_new(arr, t);
	}
	return arr;
}

/* Firmware update (docs/driver-redfish.md "Firmware"): SimpleUpdate with image_uri (DSP8010
 * UpdateService.SimpleUpdate), or with image_path a multipart/form-data POST to the
 * UpdateService's MultipartHttpPushUri (DSP0266 "Multipart HTTP push updates": the parts
 * UpdateParameters, JSON with Targets and @Redfish.OperationApplyTime, and UpdateFile, the
 * image streamed from the file); then the task as task_wait tracks it. */
static int rf_firmware_update(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			      const struct bmc_firmware_req *req, json_t **out, char *err,
			      size_t errlen)
{
	int have_uri = req->image_uri && req->image_uri[0];
	int have_path = req->image_path && req->image_path[0];
	if (have_uri == have_path)
		return fp_errf(FP_EINVAL, err, errlen,
			       "firmware update: give image_uri or image_path, %s",
			       have_uri ? "not both" : "neither is set");
	if (have_path && req->transfer_protocol)
		return fp_errf(
			FP_EINVAL, err, errlen,
			"firmware update: transfer_protocol is for image_uri, not image_path");
	if (have_uri && req->apply_time)
		return fp_errf(
			FP_EINVAL, err, errlen,
			"firmware update: apply_time is for image_path (MultipartHttpPushUri) "
			"only");
	if (req->apply_time && strcmp(req->apply_time, "Immediate") != 0 &&
	    strcmp(req->apply_time, "OnReset") != 0)
		return fp_errf(FP_EINVAL, err, errlen,
			       "firmware update: apply_time \"%.32s\" is not Immediate or OnReset",
			       req->apply_time);
	struct rf_image im = {.fd = -1};
	if (have_path) {
		int rc = image_open(req->image_path, &im, err, errlen);
		if (rc < 0)
			return rc;
	}
	struct rf_call c;
	int rc = call_begin(b, t, deadline, err, errlen, &c);
	if (rc < 0) {
		if (im.fd >= 0)
			close(im.fd);
		return rc;
	}
	json_t *us = NULL, *allowed = NULL, *body = NULL;
	char *params_text = NULL;
	curl_mime *mime = NULL;
	struct rf_resp p;
	resp_init(&p);
	rc = discover(&c);
	if (rc < 0)
		goto out;
	if (!c.r->update) {
		rc = fp_errf(FP_EUNSUPPORTED, err, errlen, "%s has no UpdateService", c.r->base);
		goto out;
	}
	rc = get_json(&c, c.r->update, &us, NULL, 0);
	if (rc < 0)
		goto out;
	if (have_path) {
		const char *push = json_string_value(json_object_get(us, "MultipartHttpPushUri"));
		if (!push) {
			char offers[96];
			update_offers(us, offers, sizeof(offers));
			rc = fp_errf(
				FP_EUNSUPPORTED, err, errlen,
				"%s UpdateService has no MultipartHttpPushUri, which image_path "
				"needs (it offers %s): serve the image and give image_uri",
				c.r->base, offers);
			goto out;
		}
		json_t *params = json_object();
		json_t *targets = update_targets(req);
		if (targets)
			json_object_set_new(params, "Targets", targets);
		if (req->apply_time)
			json_object_set_new(params, "@Redfish.OperationApplyTime",
					    json_string(req->apply_time));
		params_text = jsonx_dumps(params);
		json_decref(params);
		mime = curl_mime_init(c.r->curl);
		curl_mimepart *part = curl_mime_addpart(mime);
		if (!mime || !part)
			abort(); /* out of memory */
		curl_mime_name(part, "UpdateParameters");
		curl_mime_data(part, params_text, CURL_ZERO_TERMINATED);
		curl_mime_type(part, "application/json");
		part = curl_mime_addpart(mime);
		if (!part)
			abort();
		curl_mime_name(part, "UpdateFile");
		curl_mime_filename(part, im.name);
		curl_mime_type(part, "application/octet-stream");
		curl_mime_data_cb(part, (curl_off_t)im.size, image_read, image_seek, NULL, &im);
		log_info("redfish: firmware upload node=%s bmc=%s bytes=%" PRIu64 " uri=%.200s",
			 t->node, c.r->base, im.size, push);
		rc = request_any(&c, "POST", push, NULL, mime, NULL, &p);
	} else {
		json_t *act = json_object_get(json_object_get(us, "Actions"),
					      "#UpdateService.SimpleUpdate");
		const char *target = json_string_value(json_object_get(act, "target"));
		if (!target) {
			rc = fp_errf(FP_EUNSUPPORTED, err, errlen,
				     "%s UpdateService has no #UpdateService.SimpleUpdate",
				     c.r->base);
			goto out;
		}
		rc = simple_update_body(&c, act, req, &body, &allowed);
		if (rc < 0)
			goto out;
		json_t *targets = update_targets(req);
		if (targets)
			json_object_set_new(body, "Targets", targets);
		rc = request(&c, "POST", target, body, NULL, &p);
	}
	if (rc < 0)
		goto out;
	if (p.status == 202 && p.h.location[0]) {
		rc = task_wait(&c, p.h.location, p.body, out);
		if (rc == 0 && strcmp(rf_task_state(*out), "Completed") != 0)
			rc = fp_errf(FP_EBMC, err, errlen, "firmware update task ended %s",
				     rf_task_state(*out));
	} else {
		*out = json_pack("{s:n,s:s,s:[]}", "task", "state", "Completed", "messages");
	}
out:
	curl_mime_free(mime);
	free(params_text);
	if (im.fd >= 0)
		close(im.fd);
	resp_release(&p);
	json_decref(us);
	json_decref(allowed);
	json_decref(body);
	call_end(&c);
	return rc;
}

static void bmc_entry_free(struct rf_bmc *r)
{
	drop_session(r);
	if (r->curl)
		curl_easy_cleanup(r->curl);
	free(r->base);
	free(r->ca_file);
	free(r->systems);
	free(r->sessions);
	free(r->update);
	free(r->sys_for);
	free(r->system_uri);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

static void rf_free(struct bmc *b)
{
	struct rf *s = rf_of(b);
	for (struct hmap_iter it = hmap_iter_start(&s->bmcs); hmap_iter_next(&it);) {
		struct rf_bmc *r = it.e->value;
		if (r->token && r->session) {
			/* DSP0266 "Session termination": DELETE the session's URI */
			struct bmc_target t = {.node = "", .tls_verify = r->tls_verify};
			char err[256];
			struct rf_call c = {.b = b,
					    .r = r,
					    .t = &t,
					    .deadline = clock_now_ms(b->clock) + RF_FREE_TIMEOUT_MS,
					    .err = err,
					    .errlen = sizeof(err)};
			struct rf_resp p;
			resp_init(&p);
			if (http_once(&c, "DELETE", r->session, NULL, NULL, NULL, RF_AUTH_SESSION,
				      &p) < 0)
				log_info("redfish: session delete failed bmc=%s err=\"%s\"",
					 r->base, err);
			resp_release(&p);
		}
		bmc_entry_free(r);
	}
	hmap_release(&s->bmcs);
	pthread_mutex_destroy(&s->mu);
	sodium_memzero(s->cred_key, sizeof(s->cred_key));
	free(s);
	free(b);
}

const struct bmc_driver_ops bmc_redfish_ops = {
	.name = "redfish",
	.caps = BMC_CAP_POWER | BMC_CAP_BOOT_DEVICE | BMC_CAP_BOOT_READBACK | BMC_CAP_INVENTORY |
		BMC_CAP_SEL | BMC_CAP_FIRMWARE,
	.power_get = rf_power_get,
	.power_set = rf_power_set,
	.boot_get = rf_boot_get,
	.boot_set = rf_boot_set,
	.inventory = rf_inventory,
	.chassis_status = rf_chassis_status,
	.sel_read = rf_sel_read,
	.firmware_update = rf_firmware_update,
	.validate = rf_validate,
	.free = rf_free,
};

struct bmc *bmc_redfish_new(struct fp_clock *clock)
{
	pthread_once(&curl_once, curl_init_once);
	if (sodium_init() < 0)
		abort(); /* no usable random source */
	struct rf *s = xcalloc(1, sizeof(*s));
	s->clock = clock;
	randombytes_buf(s->cred_key, sizeof(s->cred_key));
	pthread_mutex_init(&s->mu, NULL);
	hmap_init(&s->bmcs);
	struct bmc *b = xcalloc(1, sizeof(*b));
	b->ops = &bmc_redfish_ops;
	b->clock = clock;
	b->impl = s;
	return b;
}

/* ---- interpretation of what the BMC sends (bmc_redfish_parse.h): no I/O ---- */

void rf_root_links(const json_t *root, const char **systems, const char **sessions,
		   const char **update)
{
	const char *sess = json_string_value(
		json_object_get(json_object_get(json_object_get(root, "Links"), "Sessions"),
				"@odata.id"));
	if (!sess && rf_link(root, "SessionService"))
		sess = "/redfish/v1/SessionService/Sessions";
	if (systems)
		*systems = rf_link(root, "Systems");
	if (sessions)
		*sessions = sess;
	if (update)
		*update = rf_link(root, "UpdateService");
}

const char *rf_session_uri(const char *location, const json_t *body)
{
	if (location && location[0])
		return location;
	return json_string_value(json_object_get(body, "@odata.id"));
}

int rf_header_safe(const char *what, const char *v, size_t max, char *err, size_t errlen)
{
	size_t i;
	for (i = 0; v[i] && i < max; i++)
		if ((unsigned char)v[i] < 0x20 || (unsigned char)v[i] > 0x7e)
			return fp_errf(
				FP_EBMC, err, errlen,
				"%s from the BMC has byte 0x%02x at offset %zu; not sent back "
				"(a header value must be printable ASCII 0x20-0x7e)",
				what, (unsigned char)v[i], i);
	if (i >= max)
		return fp_errf(FP_EBMC, err, errlen,
			       "%s from the BMC is %zu bytes or more; not sent back (at most %zu)",
			       what, max, max - 1);
	return 0;
}

int rf_etag_of(const char *header_etag, const json_t *body, char *etag, size_t n, char *err,
	       size_t errlen)
{
	int hdr = header_etag && header_etag[0];
	const char *e = hdr ? header_etag : json_string_value(json_object_get(body, "@odata.etag"));
	etag[0] = '\0';
	if (!e)
		return 0;
	int rc = rf_header_safe(hdr ? "ETag" : "@odata.etag", e, n, err, errlen);
	if (rc == 0)
		snprintf(etag, n, "%s", e);
	return rc;
}

void rf_last_segment(const char *uri, char *out, size_t n)
{
	size_t len = strlen(uri);
	while (len > 1 && uri[len - 1] == '/')
		len--;
	size_t s = len;
	while (s > 0 && uri[s - 1] != '/')
		s--;
	snprintf(out, n, "%.*s", (int)(len - s), uri + s);
}

const char *rf_member_uri(const json_t *coll, size_t i)
{
	return json_string_value(
		json_object_get(json_array_get(json_object_get(coll, "Members"), i), "@odata.id"));
}

size_t rf_members(const json_t *coll, size_t max)
{
	size_t n = json_array_size(json_object_get(coll, "Members"));
	return n > max ? max : n;
}

int rf_choose_system(const json_t *coll, const char *want, const char *base, const char **uri,
		     char *err, size_t errlen)
{
	if (!want)
		want = "";
	size_t n = rf_members(coll, RF_MAX_MEMBERS);
	struct buf ids;
	buf_init(&ids, 4096);
	const char *found = NULL, *only = NULL;
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		const char *u = rf_member_uri(coll, i);
		if (!u)
			continue;
		char id[256];
		rf_last_segment(u, id, sizeof(id));
		buf_printf(&ids, "%s%s", ids.len ? ", " : "", id);
		if (want[0] && strcmp(id, want) == 0)
			found = u;
		only = only ? "" : u;
	}
	if (want[0] && !found)
		rc = fp_errf(FP_EINVAL, err, errlen,
			     "spec.bmc.system \"%.64s\" is not a ComputerSystem of %s (it has: %s)",
			     want, base, ids.len ? ids.data : "none");
	else if (!want[0] && !only)
		rc = fp_errf(FP_EBMC, err, errlen, "%s lists no ComputerSystem", base);
	else if (!want[0] && !only[0])
		rc = fp_errf(FP_EINVAL, err, errlen,
			     "%s has several ComputerSystems (%s): set spec.bmc.system to one",
			     base, ids.data);
	if (rc == 0)
		*uri = found ? found : only;
	buf_release(&ids);
	return rc;
}

enum bmc_power rf_power_of(const char *s)
{
	if (!s)
		return BMC_POWER_UNKNOWN;
	if (strcmp(s, "On") == 0 || strcmp(s, "Paused") == 0)
		return BMC_POWER_ON;
	if (strcmp(s, "Off") == 0)
		return BMC_POWER_OFF;
	return BMC_POWER_UNKNOWN; /* PoweringOn, PoweringOff, or a value we do not know */
}

const char *rf_first_chassis(const json_t *sys)
{
	return json_string_value(json_object_get(
		json_array_get(json_object_get(json_object_get(sys, "Links"), "Chassis"), 0),
		"@odata.id"));
}

enum bmc_power rf_power_system(const json_t *sys, const char *system_uri, const char **reason,
			       char *msg, size_t n)
{
	const char *ps = json_string_value(json_object_get(sys, "PowerState"));
	char sid[128];
	rf_last_segment(system_uri, sid, sizeof(sid));
	*reason = NULL;
	if (!ps) {
		*reason = "PowerStateMissing";
		fp_errf(0, msg, n, "System %s has no PowerState", sid);
		return BMC_POWER_UNKNOWN;
	}
	enum bmc_power p = rf_power_of(ps);
	if (p == BMC_POWER_UNKNOWN) {
		*reason = "PowerStateTransitioning";
		fp_errf(0, msg, n, "System %s PowerState is %.32s", sid, ps);
	}
	return p;
}

enum bmc_power rf_power_chassis(const json_t *sys, enum bmc_power p, const char *system_uri,
				const json_t *ch, const char *chassis_uri, const char **reason,
				char *msg, size_t n)
{
	const char *ps = json_string_value(json_object_get(sys, "PowerState"));
	const char *cps = json_string_value(json_object_get(ch, "PowerState"));
	enum bmc_power cp = rf_power_of(cps);
	*reason = NULL;
	if (cps && cp != BMC_POWER_UNKNOWN && cp != p) {
		char sid[128], cid[128];
		rf_last_segment(system_uri, sid, sizeof(sid));
		rf_last_segment(chassis_uri, cid, sizeof(cid));
		*reason = "PowerStateDisagrees";
		fp_errf(0, msg, n, "System %s PowerState %.32s but Chassis %s PowerState %.32s",
			sid, ps ? ps : "", cid, cps);
		return BMC_POWER_UNKNOWN;
	}
	return p;
}

int rf_in_list(const json_t *arr, const char *v)
{
	size_t i;
	json_t *x;
	json_array_foreach(arr, i, x)
		if (json_is_string(x) && strcmp(json_string_value(x), v) == 0)
			return 1;
	return 0;
}

void rf_list_text(const json_t *arr, char *out, size_t n)
{
	size_t i, w = 0;
	json_t *x;
	out[0] = '\0';
	json_array_foreach(arr, i, x) {
		if (!json_is_string(x) || w >= n)
			continue;
		int k = snprintf(out + w, n - w, "%s%s", w ? ", " : "", json_string_value(x));
		if (k > 0)
			w += (size_t)k;
	}
}

const json_t *rf_reset_action(const json_t *sys)
{
	return json_object_get(json_object_get(sys, "Actions"), "#ComputerSystem.Reset");
}

json_t *rf_allowable_inline(const json_t *act, const char *param)
{
	char key[96];
	snprintf(key, sizeof(key), "%s@Redfish.AllowableValues", param);
	json_t *inl = json_object_get(act, key);
	return json_is_array(inl) ? json_incref(inl) : NULL;
}

json_t *rf_action_info_values(const json_t *ai, const char *param)
{
	json_t *out = NULL;
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(ai, "Parameters"), i, p) {
		const char *name = json_string_value(json_object_get(p, "Name"));
		json_t *av = json_object_get(p, "AllowableValues");
		if (name && strcmp(name, param) == 0 && json_is_array(av))
			out = json_incref(av);
	}
	return out;
}

/* The ResetType for an action (docs/driver-redfish.md "ResetType"). allowed NULL: the BMC does
 * not list them; the DSP8010 ResetType values are then assumed, PowerCycle excepted. */
const char *rf_reset_type(const json_t *allowed, enum bmc_power_action a, enum bmc_power cur)
{
#define OK_(v) (allowed ? rf_in_list(allowed, v) : strcmp(v, "PowerCycle") != 0)
	switch (a) {
	case BMC_ACTION_ON: return OK_("On") ? "On" : OK_("ForceOn") ? "ForceOn" : NULL;
	case BMC_ACTION_OFF: return OK_("ForceOff") ? "ForceOff" : NULL;
	case BMC_ACTION_SOFT: return OK_("GracefulShutdown") ? "GracefulShutdown" : NULL;
	case BMC_ACTION_RESET: return OK_("ForceRestart") ? "ForceRestart" : NULL;
	case BMC_ACTION_CYCLE:
		if (OK_("PowerCycle"))
			return "PowerCycle";
		if (cur == BMC_POWER_ON)
			return OK_("ForceRestart") ? "ForceRestart" : NULL;
		if (cur == BMC_POWER_OFF)
			return OK_("On") ? "On" : OK_("ForceOn") ? "ForceOn" : NULL;
		return NULL;
	}
	return NULL;
#undef OK_
}

void rf_boot_of(const json_t *sys, struct bmc_boot *out)
{
	json_t *boot = json_object_get(sys, "Boot");
	const char *tg = json_string_value(json_object_get(boot, "BootSourceOverrideTarget"));
	const char *en = json_string_value(json_object_get(boot, "BootSourceOverrideEnabled"));
	const char *mo = json_string_value(json_object_get(boot, "BootSourceOverrideMode"));
	int active = en && (strcmp(en, "Once") == 0 || strcmp(en, "Continuous") == 0);
	out->device = !active || !tg           ? BMC_BOOT_UNKNOWN
		      : strcmp(tg, "Pxe") == 0 ? BMC_BOOT_PXE
		      : strcmp(tg, "Hdd") == 0 ? BMC_BOOT_DISK
					       : BMC_BOOT_UNKNOWN;
	out->persistent = en && strcmp(en, "Continuous") == 0;
	out->mode = !mo                         ? BMC_BOOT_MODE_UNKNOWN
		    : strcmp(mo, "UEFI") == 0   ? BMC_BOOT_MODE_UEFI
		    : strcmp(mo, "Legacy") == 0 ? BMC_BOOT_MODE_LEGACY
						: BMC_BOOT_MODE_UNKNOWN;
}

int rf_boot_patch(const json_t *sys, const char *system_uri, const struct bmc_boot *want,
		  json_t **req, char *err, size_t errlen)
{
	const char *tg = want->device == BMC_BOOT_PXE ? "Pxe" : "Hdd";
	const char *en = want->persistent ? "Continuous" : "Once";
	const char *mo = want->mode == BMC_BOOT_MODE_UEFI     ? "UEFI"
			 : want->mode == BMC_BOOT_MODE_LEGACY ? "Legacy"
							      : NULL;
	*req = NULL;
	json_t *boot = json_object_get(sys, "Boot");
	if (!json_is_object(boot))
		return fp_errf(FP_EUNSUPPORTED, err, errlen, "System %s has no Boot object",
			       system_uri);
	json_t *tav = json_object_get(boot, "BootSourceOverrideTarget@Redfish.AllowableValues");
	if (json_is_array(tav) && !rf_in_list(tav, tg)) {
		char list[512];
		rf_list_text(tav, list, sizeof(list));
		return fp_errf(FP_EINVAL, err, errlen,
			       "BootSourceOverrideTarget %s is not allowed by the BMC (%s)", tg,
			       list);
	}
	json_t *r = json_pack("{s:{s:s,s:s}}", "Boot", "BootSourceOverrideTarget", tg,
			      "BootSourceOverrideEnabled", en);
	if (mo && json_object_get(boot, "BootSourceOverrideMode")) {
		json_t *mav = json_object_get(boot,
					      "BootSourceOverrideMode@Redfish.AllowableValues");
		if (json_is_array(mav) && !rf_in_list(mav, mo)) {
			char list[256];
			rf_list_text(mav, list, sizeof(list));
			json_decref(r);
			return fp_errf(FP_EINVAL, err, errlen,
				       "BootSourceOverrideMode %s is not allowed by the BMC (%s)",
				       mo, list);
		}
		json_object_set_new(json_object_get(r, "Boot"), "BootSourceOverrideMode",
				    json_string(mo));
	}
	*req = r;
	return 0;
}

json_t *rf_str_capped(const char *s)
{
	if (!s)
		return json_null();
	size_t n = strnlen(s, RF_MAX_STRING + 1);
	if (n > RF_MAX_STRING) {
		n = RF_MAX_STRING;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--; /* s[n] continues a character: cut before the character */
	}
	json_t *j = json_stringn(s, n);
	return j ? j : json_string(""); /* not UTF-8: jansson's strings always are */
}

static json_t *str_or_null(const json_t *o, const char *k)
{
	return rf_str_capped(json_string_value(json_object_get(o, k)));
}

static json_t *str_or_empty(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return rf_str_capped(s ? s : "");
}

json_t *rf_gpu_entry(const json_t *pr, size_t index)
{
	const char *ty = json_string_value(json_object_get(pr, "ProcessorType"));
	if (!ty || strcmp(ty, "GPU") != 0)
		return NULL;
	return json_pack("{s:I,s:o,s:o,s:o,s:o}", "index", (json_int_t)index, "id",
			 str_or_null(pr, "Id"), "model", str_or_null(pr, "Model"), "manufacturer",
			 str_or_null(pr, "Manufacturer"), "serial",
			 str_or_null(pr, "SerialNumber"));
}

json_t *rf_inventory_doc(const json_t *sys, const json_t *gpus_in)
{
	json_t *gpus = json_array();
	for (size_t i = 0; i < json_array_size(gpus_in) && i < RF_MAX_GPUS; i++)
		json_array_append(gpus, json_array_get(gpus_in, i));
	json_t *ps = json_object_get(sys, "ProcessorSummary");
	json_t *ms = json_object_get(sys, "MemorySummary");
	json_t *cnt = json_object_get(ps, "Count");
	json_t *mem = json_object_get(ms, "TotalSystemMemoryGiB");
	return json_pack("{s:{s:o,s:o,s:o,s:o},s:{s:o,s:o},s:o,s:o}", "system", "manufacturer",
			 str_or_null(sys, "Manufacturer"), "model", str_or_null(sys, "Model"),
			 "serialNumber", str_or_null(sys, "SerialNumber"), "id",
			 str_or_null(sys, "Id"), "cpu", "model", str_or_null(ps, "Model"),
			 "sockets", json_is_integer(cnt) ? json_incref(cnt) : json_null(),
			 "memoryGiB", json_is_number(mem) ? json_incref(mem) : json_null(), "gpus",
			 gpus);
}

json_t *rf_chassis_status_doc(const json_t *sys, const json_t *ch, const char *chassis_uri)
{
	const char *ps = json_string_value(json_object_get(ch, "PowerState"));
	if (!ps)
		ps = json_string_value(json_object_get(sys, "PowerState"));
	json_t *o = json_pack("{s:s}", "power", bmc_power_name(rf_power_of(ps)));
	const char *health = json_string_value(
		json_object_get(json_object_get(ch ? ch : sys, "Status"), "Health"));
	if (health)
		json_object_set_new(o, "health", rf_str_capped(health));
	const char *intr = json_string_value(
		json_object_get(json_object_get(ch, "PhysicalSecurity"), "IntrusionSensor"));
	if (intr)
		json_object_set_new(o, "intrusion", json_boolean(strcmp(intr, "Normal") != 0));
	const char *prp = json_string_value(json_object_get(sys, "PowerRestorePolicy"));
	if (!prp)
		prp = json_string_value(json_object_get(ch, "PowerRestorePolicy"));
	if (prp)
		json_object_set_new(o, "powerRestorePolicy", rf_str_capped(prp));
	if (chassis_uri) {
		char cid[2 * RF_MAX_STRING];
		rf_last_segment(chassis_uri, cid, sizeof(cid));
		json_object_set_new(o, "chassis", rf_str_capped(cid));
	}
	const char *led = json_string_value(json_object_get(ch, "IndicatorLED"));
	if (led)
		json_object_set_new(o, "indicatorLed", rf_str_capped(led));
	return o;
}

int rf_log_is_sel(const json_t *svc)
{
	const char *ty = json_string_value(json_object_get(svc, "LogEntryType"));
	return ty && strcmp(ty, "SEL") == 0;
}

int rf_sel_entry_is_link(const json_t *e)
{
	return !json_object_get(e, "Message") && !json_object_get(e, "Created");
}

json_t *rf_sel_timestamp(const char *s)
{
	/* "YYYY-MM-DDTHH:MM:SS" [".f+"] ("Z" | ("+"|"-") "HH:MM"), RFC 3339 section 5.6 */
	int64_t ms;
	if (!s || strnlen(s, RF_MAX_TIMESTAMP + 1) > RF_MAX_TIMESTAMP ||
	    fp_time_parse_offset(s, &ms, NULL) < 0)
		return json_null(); /* also before 1970 (no SEL clock says that) or past 9999 */
	if (s[strlen(s) - 1] == 'Z')
		return json_string(s);
	char out[FP_TIME_LEN];
	fp_time_format(ms, out);
	return json_string(out);
}

json_t *rf_sel_entry(const json_t *e, size_t idx)
{
	const char *id = json_string_value(json_object_get(e, "Id"));
	char *end = NULL;
	long long n = id ? strtoll(id, &end, 10) : 0;
	json_t *o = json_pack("{s:I,s:o,s:o,s:o}", "id",
			      (json_int_t)(id && end && !*end ? n : (long long)idx), "timestamp",
			      rf_sel_timestamp(json_string_value(json_object_get(e, "Created"))),
			      "sensorType", str_or_empty(e, "SensorType"), "message",
			      str_or_empty(e, "Message"));
	json_t *sn = json_object_get(e, "SensorNumber");
	if (json_is_integer(sn))
		json_object_set(o, "sensorNumber", sn);
	const char *code = json_string_value(json_object_get(e, "EntryCode"));
	if (code)
		json_object_set_new(o, "eventType", rf_str_capped(code));
	return o;
}

int rf_task_terminal(const char *state)
{
	static const char *const done[] = {"Completed", "Exception", "Killed", "Cancelled"};
	for (size_t i = 0; i < sizeof(done) / sizeof(done[0]); i++)
		if (strcmp(state, done[i]) == 0)
			return 1;
	return 0;
}

static void task_fill(json_t *o, const json_t *task)
{
	const char *st = json_string_value(json_object_get(task, "TaskState"));
	if (st)
		json_object_set_new(o, "state", rf_str_capped(st));
	json_t *pc = json_object_get(task, "PercentComplete");
	if (json_is_integer(pc))
		json_object_set(o, "percent", pc);
	json_t *msgs = json_object_get(task, "Messages");
	if (json_is_array(msgs)) {
		json_t *arr = json_array();
		size_t i;
		json_t *m;
		json_array_foreach(msgs, i, m) {
			const char *s = json_string_value(json_object_get(m, "Message"));
			if (!s)
				s = json_string_value(json_object_get(m, "MessageId"));
			if (s && i < RF_MAX_TASK_MESSAGES)
				json_array_append_new(arr, rf_str_capped(s));
		}
		json_object_set_new(o, "messages", arr);
	}
}

json_t *rf_task_new(const char *monitor, const json_t *first)
{
	/* a URI is ASCII (RFC 3986 section 2); json_pack refuses bytes that are not UTF-8 */
	for (const char *s = monitor; *s; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
			return NULL;
	json_t *o = json_pack("{s:s,s:s,s:[]}", "task", monitor, "state", "Running", "messages");
	/* the Task's own URI when it is a usable one (the bound of a kept Location), else the
	 * monitor's */
	const char *tu = json_string_value(json_object_get(first, "@odata.id"));
	if (tu && strnlen(tu, RF_MAX_TASK_URI + 1) <= RF_MAX_TASK_URI)
		json_object_set_new(o, "task", json_string(tu));
	if (first)
		task_fill(o, first);
	return o;
}

static const char *json_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a real number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "?";
}

int rf_task_update(json_t *o, long status, const json_t *body, char *err, size_t errlen)
{
	const json_t *ts = json_object_get(body, "TaskState");
	if (ts && !json_is_string(ts)) {
		if (status == 202)
			return 0; /* the monitor says it still runs; its document is not read */
		return fp_errf(FP_EBMC, err, errlen,
			       "task monitor answered HTTP %ld with a TaskState that is %s, not a "
			       "string (DSP8010 Task.TaskState)",
			       status, json_type_name(ts));
	}
	if (ts)
		task_fill(o, body);
	else if (status != 202)
		json_object_set_new(o, "state", json_string("Completed"));
	return 0;
}

const char *rf_task_state(const json_t *o)
{
	return json_string_value(json_object_get(o, "state"));
}

int64_t rf_poll_wait(int64_t retry_after_ms, int64_t cur)
{
	int64_t wait = retry_after_ms >= 0 ? retry_after_ms : cur;
	if (wait < RF_POLL_MIN_MS)
		wait = RF_POLL_MIN_MS;
	if (wait > RF_POLL_MAX_MS)
		wait = RF_POLL_MAX_MS;
	return wait;
}
