/* client.c - the libcurl HTTP client and the shared helpers of the client subcommands (see
 * client.h). One curl easy handle per struct client, reused across requests so that following
 * `continue` pages keeps one keep-alive connection. Redirects are never followed (the bearer
 * token must not travel to another host) and only http/https are allowed. Raw response bytes
 * are wiped before they are freed, because `token create` answers carry a secret. */
#include "cmd/client.h"
#include "cmd/cli_context.h"

#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/timefmt.h"

#include "base/banned.h"

volatile sig_atomic_t client_interrupted;

static int client_init_from(struct client *c, const struct cli_settings *set);

int client_init(struct client *c)
{
	memset(c, 0, sizeof(*c));
	c->err = stderr;
	c->connect_timeout_ms = CLIENT_CONNECT_TIMEOUT_MS;
	c->timeout_ms = CLIENT_TOTAL_TIMEOUT_MS;

	/* issue 15: the --context flag's context, then the environment, then the contexts
	 * file's current-context (cli_context.h) */
	struct cli_settings set;
	if (cli_settings_resolve(&set) < 0)
		return CLIENT_EXIT_USAGE;
	int rc = client_init_from(c, &set);
	cli_settings_release(&set);
	return rc;
}

static int client_init_from(struct client *c, const struct cli_settings *set)
{
	const char *url = set->url;
	if (!url || !*url)
		url = CLIENT_DEFAULT_URL;
	if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) {
		fprintf(c->err,
			"error: FLEETPLANE_URL must start with http:// or https:// (got '%s')\n",
			url);
		return CLIENT_EXIT_USAGE;
	}
	for (const char *p = url; *p; p++) {
		if ((unsigned char)*p <= 0x20 || *p == 0x7f) {
			fprintf(c->err, "error: FLEETPLANE_URL contains a space or control byte\n");
			return CLIENT_EXIT_USAGE;
		}
	}
	/* The base URL of a server, nothing more (issue 16 item 11): paths are appended to it, so
	 * a query or a fragment would end up in the middle of every request. libcurl's URL
	 * parser (RFC 3986) says what is there. */
	CURLU *u = curl_url();
	char *host = NULL, *query = NULL, *frag = NULL, *user = NULL;
	int bad = !u || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
		  curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host || !*host;
	if (!bad) {
		curl_url_get(u, CURLUPART_QUERY, &query, 0);
		curl_url_get(u, CURLUPART_FRAGMENT, &frag, 0);
		curl_url_get(u, CURLUPART_USER, &user, 0);
	}
	const char *why = bad     ? "is not a URL with a host"
			  : query ? "has a query ('?...')"
			  : frag  ? "has a fragment ('#...')"
			  : user  ? "has a user name (tokens go in FLEETPLANE_TOKEN)"
				  : NULL;
	curl_free(host);
	curl_free(query);
	curl_free(frag);
	curl_free(user);
	curl_url_cleanup(u);
	if (why) {
		fprintf(c->err,
			"error: FLEETPLANE_URL %s; give the server's base URL, like "
			"https://host:7070 (got '%s')\n",
			why, url);
		return CLIENT_EXIT_USAGE;
	}
	size_t ul = strlen(url);
	while (ul > 0 && url[ul - 1] == '/')
		ul--;
	c->url = xstrndup(url, ul);

	const char *tok = set->token;
	size_t tl = tok ? strlen(tok) : 0;
	while (tl > 0 && (tok[tl - 1] == '\n' || tok[tl - 1] == '\r' || tok[tl - 1] == ' ' ||
			  tok[tl - 1] == '\t'))
		tl--;
	if (tl == 0) {
		fprintf(c->err,
			"error: FLEETPLANE_TOKEN is not set; export a token (an admin token is in "
			"<data-dir>/admin.token, others come from 'fleetplane token create'), or "
			"name a token-file in a context of ~/.config/fleetplane/config\n");
		return CLIENT_EXIT_USAGE;
	}
	for (size_t i = 0; i < tl; i++) {
		unsigned char ch = (unsigned char)tok[i];
		if (ch <= 0x20 || ch == 0x7f) {
			fprintf(c->err,
				"error: FLEETPLANE_TOKEN contains a space or control byte\n");
			return CLIENT_EXIT_USAGE;
		}
	}
	c->token = xstrndup(tok, tl);
	const char *ca = set->ca;
	if (ca && *ca) {
		if (access(ca, R_OK) != 0) {
			fprintf(c->err, "error: FLEETPLANE_CA %s: %s\n", ca, strerror(errno));
			return CLIENT_EXIT_USAGE;
		}
		c->ca = xstrdup(ca);
	}

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || !(c->curl = curl_easy_init())) {
		fprintf(c->err, "error: cannot initialise libcurl\n");
		return CLIENT_EXIT_API;
	}
	return CLIENT_EXIT_OK;
}

void client_release(struct client *c)
{
	if (!c)
		return;
	if (c->curl)
		curl_easy_cleanup(c->curl);
	c->curl = NULL;
	free(c->url);
	c->url = NULL;
	fp_free_secret(c->token);
	c->token = NULL;
	free(c->ca);
	c->ca = NULL;
}

/* ---- response collection ---- */

struct cl_sink {
	struct client *c;
	struct buf body; /* whole body (request mode) or error body (watch mode) */
	int too_big;
	/* watch mode */
	int watch;
	struct buf line; /* the partial line not yet terminated by '\n' */
	client_event_fn fn;
	void *arg;
	int stop_rc; /* non-zero once fn stopped the stream or a line was bad */
	char lineerr[160];
};

static int cl_watch_line(struct cl_sink *s, const char *p, size_t n)
{
	while (n > 0 && (p[n - 1] == '\r' || p[n - 1] == ' '))
		n--;
	if (n == 0)
		return 0; /* heartbeat */
	json_t *ev = NULL;
	char e[128];
	if (jsonx_parse(p, n, &ev, e, sizeof(e)) < 0) {
		snprintf(s->lineerr, sizeof(s->lineerr), "watch stream: %s", e);
		s->stop_rc = CLIENT_EXIT_API;
		return -1;
	}
	int rc = s->fn(s->arg, ev);
	json_decref(ev);
	if (rc != 0) {
		s->stop_rc = rc;
		return -1;
	}
	return 0;
}

static size_t cl_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct cl_sink *s = userdata;
	size_t n = size * nmemb;
	long code = 0;
	if (s->watch)
		curl_easy_getinfo(s->c->curl, CURLINFO_RESPONSE_CODE, &code);
	if (!s->watch || code < 200 || code >= 300) {
		if (buf_append(&s->body, ptr, n) < 0) {
			s->too_big = 1;
			return 0;
		}
		return n;
	}
	/* watch mode, 2xx: split into lines */
	size_t off = 0;
	while (off < n) {
		char *nl = memchr(ptr + off, '\n', n - off);
		size_t take = nl ? (size_t)(nl - (ptr + off)) : n - off;
		if (buf_append(&s->line, ptr + off, take) < 0) {
			snprintf(s->lineerr, sizeof(s->lineerr),
				 "watch stream: an event line is longer than %zu bytes",
				 CLIENT_MAX_LINE);
			s->stop_rc = CLIENT_EXIT_API;
			return 0;
		}
		off += take;
		if (!nl)
			break;
		off++; /* the '\n' */
		int rc = cl_watch_line(s, s->line.data ? s->line.data : "", s->line.len);
		buf_reset(&s->line);
		if (rc < 0)
			return 0;
	}
	return n;
}

static int cl_progress(void *p, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct client *c = p;
	if (c->tick)
		c->tick(c->tick_arg);
	return client_interrupted ? 1 : 0;
}

static void cl_wipe_buf(struct buf *b)
{
	if (b->data)
		explicit_bzero(b->data, b->alloc);
	buf_release(b);
}

static const char *cl_reason(long status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 409: return "Conflict";
	case 410: return "Gone";
	case 413: return "Content Too Large";
	case 422: return "Unprocessable Content";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "HTTP error";
	}
}

/* Copies s into out replacing control bytes by '?', stopping at the first newline and after
 * max bytes. */
static void cl_clean(char *out, size_t outlen, const char *s, size_t n, size_t max)
{
	size_t j = 0;
	for (size_t i = 0; i < n && i < max && j + 1 < outlen; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '\n' || ch == '\r')
			break;
		out[j++] = (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
	}
	if (outlen)
		out[j] = 0;
}

void client_problem_format(long status, const json_t *problem, const char *raw, size_t rawlen,
			   char *out, size_t outlen)
{
	char title[256], detail[1024];
	const char *t = json_is_object(problem)
				? json_string_value(json_object_get(problem, "title"))
				: NULL;
	const char *d = json_is_object(problem)
				? json_string_value(json_object_get(problem, "detail"))
				: NULL;
	if (t && *t)
		cl_clean(title, sizeof(title), t, strlen(t), 200);
	else
		cl_clean(title, sizeof(title), cl_reason(status), strlen(cl_reason(status)), 200);
	if (d && *d)
		cl_clean(detail, sizeof(detail), d, strlen(d), 1000);
	else if (!json_is_object(problem) && raw && rawlen)
		cl_clean(detail, sizeof(detail), raw, rawlen, 200);
	else
		detail[0] = 0;
	if (detail[0])
		snprintf(out, outlen, "error: %s: %s (HTTP %ld)", title, detail, status);
	else
		snprintf(out, outlen, "error: %s (HTTP %ld)", title, status);
}

/* Sets up the handle for one transfer. Returns the header list the caller frees. */
static struct curl_slist *cl_setup(struct client *c, const char *method, const char *url,
				   const char *body, struct cl_sink *sink, char *errbuf)
{
	CURL *h = c->curl;
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, sink->watch ? 0L : c->timeout_ms);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	/* https: the peer and its name are verified (libcurl's defaults), against FLEETPLANE_CA
	 * when set */
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
	if (c->ca)
		curl_easy_setopt(h, CURLOPT_CAINFO, c->ca);
	curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)CLIENT_MAX_BODY);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "fleetplane-cli/1");
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, cl_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, sink);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, cl_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, c);
	if (strcmp(method, "GET") == 0) {
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	} else if (strcmp(method, "POST") == 0) {
		curl_easy_setopt(h, CURLOPT_POST, 1L);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)(body ? strlen(body) : 0));
	} else {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
		if (body) {
			curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
			curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
		}
	}
	struct curl_slist *hdrs = NULL;
	char *auth = xasprintf("Authorization: Bearer %s", c->token);
	hdrs = curl_slist_append(hdrs, auth);
	fp_free_secret(auth);
	hdrs = curl_slist_append(hdrs, sink->watch
					       ? "Accept: application/json, application/x-ndjson"
					       : "Accept: application/json");
	if (body)
		hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
	hdrs = curl_slist_append(hdrs, "Expect:");
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	return hdrs;
}

/* Maps a failed transfer to an exit code and prints its line. */
static int cl_transport_error(struct client *c, CURLcode cc, const char *errbuf,
			      const struct cl_sink *sink)
{
	const char *why = errbuf[0] ? errbuf : curl_easy_strerror(cc);
	if (sink->too_big || cc == CURLE_FILESIZE_EXCEEDED) {
		fprintf(c->err, "error: response from fleetplane is larger than %zu MiB\n",
			CLIENT_MAX_BODY >> 20);
		return CLIENT_EXIT_API;
	}
	curl_off_t connected = 0;
	curl_easy_getinfo(c->curl, CURLINFO_CONNECT_TIME_T, &connected);
	switch (cc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_URL_MALFORMAT:
		fprintf(c->err, "error: cannot reach fleetplane at %s: %s%s\n", c->url, why,
			cc == CURLE_PEER_FAILED_VERIFICATION && !c->ca
				? " (set FLEETPLANE_CA to the server's CA, <data-dir>/ca.crt)"
				: "");
		return CLIENT_EXIT_CONNECT;
	case CURLE_OPERATION_TIMEDOUT:
		if (connected == 0) {
			fprintf(c->err, "error: cannot reach fleetplane at %s: %s\n", c->url, why);
			return CLIENT_EXIT_CONNECT;
		}
		fprintf(c->err, "error: request to fleetplane at %s timed out: %s\n", c->url, why);
		return CLIENT_EXIT_API;
	default:
		fprintf(c->err, "error: request to fleetplane at %s failed: %s\n", c->url, why);
		return CLIENT_EXIT_API;
	}
}

static void cl_print_http_error(struct client *c, long status, const struct buf *body)
{
	json_t *p = NULL;
	char e[64], line[1400];
	if (body->len)
		jsonx_parse(body->data, body->len, &p, e, sizeof(e));
	client_problem_format(status, p, body->data, body->len, line, sizeof(line));
	fprintf(c->err, "%s\n", line);
	json_decref(p);
}

int client_request(struct client *c, const char *method, const char *path, const json_t *body,
		   long *status, json_t **out)
{
	int rc = CLIENT_EXIT_OK;
	char errbuf[CURL_ERROR_SIZE] = "";
	char *url = xasprintf("%s%s", c->url, path);
	char *payload = body ? jsonx_dumps(body) : NULL;
	struct cl_sink sink;
	memset(&sink, 0, sizeof(sink));
	sink.c = c;
	buf_init(&sink.body, CLIENT_MAX_BODY);
	buf_init(&sink.line, CLIENT_MAX_LINE);
	long code = 0;
	*out = NULL;
	if (status)
		*status = 0;

	struct curl_slist *hdrs = cl_setup(c, method, url, payload, &sink, errbuf);
	CURLcode cc = curl_easy_perform(c->curl);
	curl_slist_free_all(hdrs);
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &code);
	if (status)
		*status = code;
	if (cc != CURLE_OK) {
		rc = cl_transport_error(c, cc, errbuf, &sink);
		goto out;
	}
	if (code < 200 || code >= 300) {
		cl_print_http_error(c, code, &sink.body);
		rc = CLIENT_EXIT_API;
		goto out;
	}
	char *ctype = NULL;
	curl_easy_getinfo(c->curl, CURLINFO_CONTENT_TYPE, &ctype);
	/* a 2xx body that says it is not JSON (/readyz answers text) is no error: *out stays NULL */
	if (sink.body.len && (!ctype || strstr(ctype, "json"))) {
		char e[160];
		if (jsonx_parse(sink.body.data, sink.body.len, out, e, sizeof(e)) < 0) {
			fprintf(c->err,
				"error: fleetplane answered %s %s with a body that is not JSON: %s\n",
				method, path, e);
			rc = CLIENT_EXIT_API;
			goto out;
		}
	}
out:
	cl_wipe_buf(&sink.body);
	buf_release(&sink.line);
	free(payload);
	free(url);
	return rc;
}

int client_list_last(struct client *c, const char *path, size_t keep, json_t **items, size_t *total)
{
	int rc = CLIENT_EXIT_OK;
	json_t *last = json_array();
	char *cont = NULL;
	struct buf url;
	buf_init(&url, 1 << 16);
	*items = NULL;
	*total = 0;
	for (;;) {
		char lim[24];
		snprintf(lim, sizeof(lim), "%d", CLIENT_PAGE_LIMIT);
		buf_reset(&url);
		if (buf_puts(&url, path) < 0 || client_query_add(&url, "limit", lim) < 0 ||
		    client_query_add(&url, "continue", cont) < 0) {
			fprintf(c->err, "error: request path too long\n");
			rc = CLIENT_EXIT_USAGE;
			break;
		}
		json_t *resp = NULL;
		if ((rc = client_request(c, "GET", url.data, NULL, NULL, &resp)) != CLIENT_EXIT_OK)
			break;
		json_t *arr = json_object_get(resp, "items");
		if (!json_is_array(arr)) {
			fprintf(c->err,
				"error: fleetplane answered GET %s without an \"items\" array\n",
				path);
			json_decref(resp);
			rc = CLIENT_EXIT_API;
			break;
		}
		*total += json_array_size(arr);
		json_array_extend(last, arr);
		size_t n = json_array_size(last);
		if (n > keep) { /* keep the newest `keep`: the list's tail */
			json_t *t = json_array();
			for (size_t i = n - keep; i < n; i++)
				json_array_append(t, json_array_get(last, i));
			json_decref(last);
			last = t;
		}
		const char *next = json_string_value(jsonx_path(resp, "metadata.continue"));
		free(cont);
		cont = (next && *next) ? xstrdup(next) : NULL;
		json_decref(resp);
		if (!cont)
			break;
	}
	free(cont);
	buf_release(&url);
	if (rc != CLIENT_EXIT_OK) {
		json_decref(last);
		return rc;
	}
	*items = last;
	return CLIENT_EXIT_OK;
}

int client_list(struct client *c, const char *path, size_t max, json_t **items, char **rv)
{
	int rc = CLIENT_EXIT_OK;
	json_t *all = json_array();
	char *cont = NULL;
	struct buf url;
	buf_init(&url, 1 << 16);
	*items = NULL;
	if (rv)
		*rv = NULL;
	for (int page = 0;; page++) {
		buf_reset(&url);
		size_t want = CLIENT_PAGE_LIMIT;
		if (max && max - json_array_size(all) < want)
			want = max - json_array_size(all);
		char lim[24];
		snprintf(lim, sizeof(lim), "%zu", want);
		if (buf_puts(&url, path) < 0 || client_query_add(&url, "limit", lim) < 0 ||
		    client_query_add(&url, "continue", cont) < 0) {
			fprintf(c->err, "error: request path too long\n");
			rc = CLIENT_EXIT_USAGE;
			goto out;
		}
		json_t *resp = NULL;
		rc = client_request(c, "GET", url.data, NULL, NULL, &resp);
		if (rc != CLIENT_EXIT_OK)
			goto out;
		json_t *arr = json_object_get(resp, "items");
		if (!json_is_array(arr)) {
			fprintf(c->err,
				"error: fleetplane answered GET %s without an \"items\" array\n",
				path);
			json_decref(resp);
			rc = CLIENT_EXIT_API;
			goto out;
		}
		json_array_extend(all, arr);
		json_t *md = json_object_get(resp, "metadata");
		if (page == 0 && rv) {
			char t[64];
			client_rv_text(json_object_get(md, "resourceVersion"), t, sizeof(t));
			*rv = t[0] ? xstrdup(t) : NULL;
		}
		const char *next = json_string_value(json_object_get(md, "continue"));
		free(cont);
		cont = (next && *next) ? xstrdup(next) : NULL;
		json_decref(resp);
		if (!cont || (max && json_array_size(all) >= max))
			break;
	}
	*items = all;
	all = NULL;
out:
	if (rc != CLIENT_EXIT_OK && rv) {
		free(*rv);
		*rv = NULL;
	}
	json_decref(all);
	free(cont);
	buf_release(&url);
	return rc;
}

int client_watch(struct client *c, const char *path, client_event_fn fn, void *arg, long *status)
{
	int rc = CLIENT_EXIT_OK;
	char errbuf[CURL_ERROR_SIZE] = "";
	char *url = xasprintf("%s%s", c->url, path);
	struct cl_sink sink;
	memset(&sink, 0, sizeof(sink));
	sink.c = c;
	sink.watch = 1;
	sink.fn = fn;
	sink.arg = arg;
	buf_init(&sink.body, 1 << 20);
	buf_init(&sink.line, CLIENT_MAX_LINE);
	long code = 0;
	if (status)
		*status = 0;

	struct curl_slist *hdrs = cl_setup(c, "GET", url, NULL, &sink, errbuf);
	CURLcode cc = curl_easy_perform(c->curl);
	curl_slist_free_all(hdrs);
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &code);
	if (status)
		*status = code;
	if (sink.stop_rc) {
		if (sink.lineerr[0])
			fprintf(c->err, "error: %s\n", sink.lineerr);
		rc = sink.stop_rc;
		goto out;
	}
	if (cc == CURLE_ABORTED_BY_CALLBACK && client_interrupted)
		goto out;
	if (cc != CURLE_OK) {
		rc = cl_transport_error(c, cc, errbuf, &sink);
		goto out;
	}
	if (code < 200 || code >= 300) {
		if (code != 410)
			cl_print_http_error(c, code, &sink.body);
		rc = CLIENT_EXIT_API;
		goto out;
	}
	if (sink.line.len) /* last line without '\n' */
		if (cl_watch_line(&sink, sink.line.data, sink.line.len) < 0) {
			if (sink.lineerr[0])
				fprintf(c->err, "error: %s\n", sink.lineerr);
			rc = sink.stop_rc;
		}
out:
	buf_release(&sink.body);
	buf_release(&sink.line);
	free(url);
	return rc;
}

/* ---- helpers shared by the subcommands ---- */

char *client_escape(const char *s)
{
	char *e = curl_easy_escape(NULL, s, (int)strlen(s));
	if (!e) {
		fprintf(stderr, "fatal: out of memory escaping a URL\n");
		abort();
	}
	char *r = xstrdup(e);
	curl_free(e);
	return r;
}

int client_query_add(struct buf *url, const char *key, const char *value)
{
	if (!value)
		return 0;
	char *e = client_escape(value);
	int rc = buf_printf(url, "%c%s=%s", (url->data && strchr(url->data, '?')) ? '&' : '?', key,
			    e);
	free(e);
	return rc;
}

int client_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fputs("error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nRun 'fleetplane %s --help' for usage.\n", cmd);
	return CLIENT_EXIT_USAGE;
}

int client_getopt_error(const char *cmd, int ch, char **argv)
{
	const char *arg = (optind > 0 && argv[optind - 1]) ? argv[optind - 1] : "";
	char name[128];
	if (strncmp(arg, "--", 2) == 0) {
		/* getopt_long leaves "--name=value" whole in argv; name only the flag */
		const char *eq = strchr(arg, '=');
		int n = eq ? (int)(eq - arg) : (int)strlen(arg);
		snprintf(name, sizeof(name), "%.*s", n, arg);
	} else if (optopt > 0 && optopt < 256) {
		snprintf(name, sizeof(name), "-%c", optopt);
	} else {
		snprintf(name, sizeof(name), "%s", arg);
	}
	if (ch == ':')
		return client_usage_error(cmd, "flag '%s' needs a value", name);
	return client_usage_error(cmd, "unknown flag '%s'", name);
}

void client_getopt_reset(void)
{
	optind = 0;
	opterr = 0;
	optopt = 0;
}

int client_parse_output(const char *cmd, const char *arg, int allow_wide, enum client_output *o)
{
	if (strcmp(arg, "json") == 0) {
		*o = CLIENT_OUT_JSON;
		return 0;
	}
	if (allow_wide && strcmp(arg, "wide") == 0) {
		*o = CLIENT_OUT_WIDE;
		return 0;
	}
	return client_usage_error(cmd, "unknown output format '%s' (want %s)", arg,
				  allow_wide ? "json or wide" : "json");
}

void client_print_json(const json_t *v)
{
	char *s = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
	if (s) {
		fputs(s, stdout);
		fputc('\n', stdout);
		free(s);
	}
}

int64_t client_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t client_time_ms(const json_t *v)
{
	if (json_is_integer(v))
		return (int64_t)json_integer_value(v);
	int64_t ms = 0;
	if (json_is_string(v) && fp_time_parse(json_string_value(v), &ms) == 0)
		return ms;
	return 0;
}

void client_rv_text(const json_t *v, char *out, size_t outlen)
{
	if (json_is_integer(v))
		snprintf(out, outlen, "%lld", (long long)json_integer_value(v));
	else if (json_is_string(v))
		snprintf(out, outlen, "%s", json_string_value(v));
	else if (outlen)
		out[0] = 0;
}

int client_read_file(const char *path, struct buf *b, char *err, size_t errlen)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	if (!f)
		return fp_errf(FP_EIO, err, errlen, "cannot open %s: %s", path, strerror(errno));
	char chunk[65536];
	int rc = 0;
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (buf_append(b, chunk, n) < 0) {
			rc = fp_errf(FP_ETOOBIG, err, errlen, "%s is larger than %zu MiB", path,
				     b->max >> 20);
			break;
		}
	}
	if (rc == 0 && ferror(f))
		rc = fp_errf(FP_EIO, err, errlen, "cannot read %s: %s", path, strerror(errno));
	if (f != stdin)
		fclose(f);
	return rc;
}

int client_parse_output_flags(const char *cmd, int argc, char **argv, const char *usage,
			      int allow_wide, enum client_output *o)
{
	static const struct option opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int ch, rc;
	client_getopt_reset();
	while ((ch = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'o':
			if ((rc = client_parse_output(cmd, optarg, allow_wide, o)) != 0)
				return rc;
			break;
		case 'h': fputs(usage, stdout); return 0;
		default: return client_getopt_error(cmd, ch, argv);
		}
	}
	return -1;
}

int client_dispatch(const char *usage, const struct client_verb *verbs, int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage, stderr);
		return CLIENT_EXIT_USAGE;
	}
	const char *verb = argv[1];
	if (!strcmp(verb, "-h") || !strcmp(verb, "--help") || !strcmp(verb, "help")) {
		fputs(usage, stdout);
		return CLIENT_EXIT_OK;
	}
	for (const struct client_verb *v = verbs; v->name; v++)
		if (!strcmp(verb, v->name) || (v->alias && !strcmp(verb, v->alias)))
			return v->fn(argc - 1, argv + 1);
	return -1;
}

int client_unknown_verb(const char *noun, const char *verb)
{
	return client_usage_error(noun, "unknown verb '%s' for '%s'", verb, noun);
}
