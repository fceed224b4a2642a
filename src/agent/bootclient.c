/* bootclient.c - the /boot HTTP calls of the node agent over libcurl (bootclient.h): one
 * easy handle per call (a deploy makes three calls), bodies bounded, JSON answers parsed with
 * jsonx_parse. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/bootclient.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/jsonx.h"

#include "base/banned.h"

int bootclient_url_check(const char *url, char *why, size_t whylen)
{
	if (!url || (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0))
		return fp_errf(FP_EINVAL, why, whylen, "needs an http:// or https:// URL");
	size_t n = strlen(url);
	if (n > 2048)
		return fp_errf(FP_EINVAL, why, whylen, "URL longer than 2048 bytes");
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)url[i] <= ' ' || url[i] == 0x7f)
			return fp_errf(FP_EINVAL, why, whylen,
				       "URL with a space or control byte at %zu", i);
	if (!url[strcspn(url, ":") + 3])
		return fp_errf(FP_EINVAL, why, whylen, "URL without a host");
	return 0;
}

int bootclient_token_check(const char *token, char *why, size_t whylen)
{
	size_t n = token ? strlen(token) : 0;
	if (n < 1 || n > BOOTCLIENT_TOKEN_MAX)
		return fp_errf(FP_EINVAL, why, whylen, "needs 1 to %d bytes, got %zu",
			       BOOTCLIENT_TOKEN_MAX, n);
	for (size_t i = 0; i < n; i++) {
		char c = token[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-'))
			return fp_errf(FP_EINVAL, why, whylen,
				       "needs [A-Za-z0-9_-] only, byte %zu is not", i);
	}
	return 0;
}

char *bootclient_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(s);
	char *o = xmalloc(n * 3 + 1), *p = o;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~') {
			*p++ = (char)c;
		} else {
			*p++ = '%';
			*p++ = hex[c >> 4];
			*p++ = hex[c & 15];
		}
	}
	*p = '\0';
	return o;
}

struct bc_sink {
	struct buf body;
	int too_big;
	int json;
};

static size_t bc_write(char *ptr, size_t size, size_t nmemb, void *arg)
{
	struct bc_sink *s = arg;
	size_t n = size * nmemb;
	if (buf_append(&s->body, ptr, n) < 0) {
		s->too_big = 1;
		return 0;
	}
	return n;
}

int bootclient_request(const struct bootclient *c, const char *method, const char *path,
		       const json_t *body, long *status, json_t **out, char *err, size_t errlen)
{
	*status = 0;
	*out = NULL;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return fp_errf(FP_EIO, err, errlen, "libcurl does not initialise");
	CURL *h = curl_easy_init();
	if (!h)
		return fp_errf(FP_EIO, err, errlen, "libcurl does not initialise");
	char *url = xasprintf("%s%s", c->server, path);
	char *text = body ? jsonx_dumps(body) : NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	struct bc_sink sink;
	memset(&sink, 0, sizeof(sink));
	buf_init(&sink.body, BOOTCLIENT_MAX_BODY);
	struct curl_slist *hdrs = NULL;
	hdrs = curl_slist_append(hdrs, "Accept: application/json");
	if (text)
		hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
			 c->connect_timeout_ms ? c->connect_timeout_ms
					       : BOOTCLIENT_CONNECT_TIMEOUT_MS);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
			 c->timeout_ms ? c->timeout_ms : BOOTCLIENT_TIMEOUT_MS);
	curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)BOOTCLIENT_MAX_BODY);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "fleetplane-agent/1");
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, bc_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	if (strcmp(method, "GET") == 0) {
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	} else {
		curl_easy_setopt(h, CURLOPT_POST, 1L);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, text ? text : "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)(text ? strlen(text) : 0));
		if (strcmp(method, "POST") != 0)
			curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	}
	int rc = 0;
	CURLcode cc = curl_easy_perform(h);
	if (cc != CURLE_OK) {
		const char *why = errbuf[0] ? errbuf : curl_easy_strerror(cc);
		curl_off_t connected = 0;
		curl_easy_getinfo(h, CURLINFO_CONNECT_TIME_T, &connected);
		int unreachable = cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ||
				  cc == CURLE_COULDNT_RESOLVE_PROXY || cc == CURLE_URL_MALFORMAT ||
				  cc == CURLE_SSL_CONNECT_ERROR ||
				  (cc == CURLE_OPERATION_TIMEDOUT && connected == 0);
		/* The query is left out of messages: it carries the token. */
		int plen = (int)strcspn(path, "?");
		if (sink.too_big || cc == CURLE_FILESIZE_EXCEEDED)
			rc = fp_errf(FP_ETOOBIG, err, errlen, "answer of %s%.*s over %zu bytes",
				     c->server, plen, path, BOOTCLIENT_MAX_BODY);
		else if (unreachable)
			rc = fp_errf(FP_EIO, err, errlen, "cannot reach %s: %s", c->server, why);
		else
			rc = fp_errf(cc == CURLE_OPERATION_TIMEDOUT ? FP_ETIMEDOUT : FP_EAGAIN, err,
				     errlen, "%s %.*s: %s", method, plen, path, why);
		goto out;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
	char *ctype = NULL;
	curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ctype);
	if (sink.body.len && ctype && strstr(ctype, "json")) {
		char perr[256];
		if (jsonx_parse(sink.body.data, sink.body.len, out, perr, sizeof(perr)) < 0) {
			*out = NULL;
			if (*status >= 200 && *status < 300)
				rc = fp_errf(FP_EPARSE, err, errlen,
					     "%s %.*s: answer is not JSON: %s", method,
					     (int)strcspn(path, "?"), path, perr);
		}
	} else if (sink.body.len && *status >= 300) {
		/* A text error from a proxy or the server: keep its first line for the message. */
		size_t n = strcspn(sink.body.data, "\r\n");
		if (n > 200)
			n = 200;
		*out = json_pack("{s:s%}", "error", sink.body.data, n);
		if (!*out)
			*out = json_pack("{s:s}", "error", "(not UTF-8 text)");
	}
out:
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(h);
	buf_release(&sink.body);
	free(text);
	free(url);
	return rc;
}

void bootclient_describe(long status, const json_t *answer, char *out, size_t outlen)
{
	const char *e = answer ? jsonx_str(answer, "error") : NULL;
	if (!e && answer)
		e = jsonx_str(answer, "detail");
	snprintf(out, outlen, "HTTP %ld: %.200s", status, e ? e : "(no error text)");
}

int bootclient_inspect(const struct bootclient *c, const char *node, const char *token,
		       const json_t *inventory, char *msg, size_t msglen)
{
	json_t *body = json_pack("{s:s,s:s,s:O}", "node", node, "token", token, "inventory",
				 inventory);
	json_t *answer = NULL;
	long status = 0;
	char err[512];
	int rc = bootclient_request(c, "POST", "/boot/inspect", body, &status, &answer, err,
				    sizeof(err));
	json_decref(body);
	if (rc < 0) {
		snprintf(msg, msglen, "POST /boot/inspect: %s", err);
		json_decref(answer);
		return rc == FP_EIO ? FP_EIO : FP_EINVAL;
	}
	if (status == 200 && json_is_true(json_object_get(answer, "accepted"))) {
		snprintf(msg, msglen, "accepted");
		rc = 0;
	} else {
		bootclient_describe(status, answer, err, sizeof(err));
		snprintf(msg, msglen, "POST /boot/inspect refused: %s", err);
		rc = FP_EINVAL;
	}
	json_decref(answer);
	return rc;
}
