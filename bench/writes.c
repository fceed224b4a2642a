/* bench/writes.c - durable writes per second, fleetplane's API against etcd's, one harness.
 *
 *   writes fp   URL TOKEN CLIENTS SECS     PUT /v1/nodes/bench-<i> with If-Match (CAS)
 *   writes etcd ENDPOINT CLIENTS SECS      POST /v3/kv/put /bench/<i> (etcd v3 JSON gateway)
 *
 * CLIENTS threads, each with its own keep-alive connection (libcurl easy handle) and its own
 * object, write back to back for SECS seconds; one line "<kind> clients=C writes=N secs=S
 * writes/s=X conflicts=K errors=E" is printed. fp: each client GETs its node once, then PUTs
 * the same document with the label bench=<n> changed, under If-Match of the resourceVersion the
 * last PUT returned, so every write is a compare-and-swap (a 409 re-reads and counts a conflict).
 * etcd: a put of a 1,000-byte value (about a node document's size) to the client's own key.
 * Both acknowledge a write only once it is on disk (fleetplane: SQLite COMMIT with
 * synchronous=FULL in WAL mode, docs/architecture.md; etcd: its WAL fsync before the reply).
 * Built and run by bench/writes.sh. */
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct resp {
	char *p;
	size_t n;
};

struct client {
	int id;
	const char *kind, *base, *token;
	double secs;
	long writes, conflicts, errors;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t collect(char *p, size_t s, size_t n, void *a)
{
	struct resp *r = a;
	char *q = realloc(r->p, r->n + s * n + 1);
	if (!q)
		return 0;
	memcpy(q + r->n, p, s * n);
	r->n += s * n;
	q[r->n] = 0;
	r->p = q;
	return s * n;
}

/* One request; returns the HTTP status (0 on a transport error) with the body in *out. */
static long request(CURL *c, const char *method, const char *url, struct curl_slist *h,
		    const char *body, struct resp *out)
{
	free(out->p);
	out->p = NULL;
	out->n = 0;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	if (!body)
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
	if (curl_easy_perform(c) != CURLE_OK)
		return 0;
	long code = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	return code;
}

/* GETs the client's node; returns the document (owned) or NULL. */
static json_t *fp_get(CURL *c, const char *url, struct curl_slist *h, struct resp *rs)
{
	if (request(c, "GET", url, h, NULL, rs) != 200)
		return NULL;
	return json_loads(rs->p, 0, NULL);
}

static void *fp_main(void *arg)
{
	struct client *cl = arg;
	CURL *c = curl_easy_init();
	char url[512], auth[600];
	snprintf(url, sizeof(url), "%s/v1/nodes/bench-%03d", cl->base, cl->id);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", cl->token);
	struct curl_slist *h = curl_slist_append(NULL, auth);
	h = curl_slist_append(h, "Content-Type: application/json");
	struct resp rs = {0};
	json_t *doc = fp_get(c, url, h, &rs);
	double end = now_s() + cl->secs;
	while (doc && now_s() < end) {
		char rv[32];
		snprintf(rv, sizeof(rv), "%s",
			 json_string_value(json_object_get(json_object_get(doc, "metadata"),
							   "resourceVersion")));
		char val[32];
		snprintf(val, sizeof(val), "%ld", cl->writes);
		json_t *labels = json_object_get(json_object_get(doc, "metadata"), "labels");
		if (!json_is_object(labels)) {
			labels = json_object();
			json_object_set_new(json_object_get(doc, "metadata"), "labels", labels);
		}
		json_object_set_new(labels, "bench", json_string(val));
		char *body = json_dumps(doc, JSON_COMPACT);
		char ifm[64];
		snprintf(ifm, sizeof(ifm), "If-Match: \"%s\"", rv);
		struct curl_slist *hh = curl_slist_append(NULL, auth);
		hh = curl_slist_append(hh, "Content-Type: application/json");
		hh = curl_slist_append(hh, ifm);
		long code = request(c, "PUT", url, hh, body, &rs);
		curl_slist_free_all(hh);
		free(body);
		json_decref(doc);
		doc = NULL;
		if (code == 200) {
			cl->writes++;
			doc = json_loads(rs.p, 0, NULL);
		} else {
			if (code == 409)
				cl->conflicts++;
			else
				cl->errors++;
			doc = fp_get(c, url, h, &rs);
		}
	}
	if (!doc)
		cl->errors++;
	json_decref(doc);
	free(rs.p);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return NULL;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void b64enc(const char *in, size_t n, char *out)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned char)in[i] << 16;
		if (i + 1 < n)
			v |= (unsigned char)in[i + 1] << 8;
		if (i + 2 < n)
			v |= (unsigned char)in[i + 2];
		out[o++] = b64[(v >> 18) & 63];
		out[o++] = b64[(v >> 12) & 63];
		out[o++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? b64[v & 63] : '=';
	}
	out[o] = 0;
}

static void *etcd_main(void *arg)
{
	struct client *cl = arg;
	CURL *c = curl_easy_init();
	char url[512], key[64], k64[128], value[1001], v64[1400], body[1700];
	snprintf(url, sizeof(url), "http://%s/v3/kv/put", cl->base);
	snprintf(key, sizeof(key), "/bench/%03d", cl->id);
	b64enc(key, strlen(key), k64);
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	struct resp rs = {0};
	double end = now_s() + cl->secs;
	while (now_s() < end) {
		memset(value, 'a' + (int)(cl->writes % 26), 1000);
		b64enc(value, 1000, v64);
		snprintf(body, sizeof(body), "{\"key\":\"%s\",\"value\":\"%s\"}", k64, v64);
		long code = request(c, "POST", url, h, body, &rs);
		if (code == 200 && rs.p && strstr(rs.p, "\"header\""))
			cl->writes++;
		else
			cl->errors++;
	}
	free(rs.p);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return NULL;
}

int main(int argc, char **argv)
{
	int fp = argc == 6 && strcmp(argv[1], "fp") == 0;
	int et = argc == 5 && strcmp(argv[1], "etcd") == 0;
	if (!fp && !et) {
		fprintf(stderr, "usage: writes fp URL TOKEN CLIENTS SECS | writes etcd ENDPOINT "
				"CLIENTS SECS\n");
		return 2;
	}
	int n = atoi(argv[fp ? 4 : 3]);
	double secs = atof(argv[fp ? 5 : 4]);
	if (n < 1 || n > 1000 || secs <= 0) {
		fprintf(stderr, "writes: CLIENTS must be 1..1000 and SECS > 0\n");
		return 2;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	struct client *cl = calloc((size_t)n, sizeof(*cl));
	pthread_t *th = calloc((size_t)n, sizeof(*th));
	double t0 = now_s();
	for (int i = 0; i < n; i++) {
		cl[i] = (struct client){.id = i + 1,
					.kind = argv[1],
					.base = argv[2],
					.token = fp ? argv[3] : NULL,
					.secs = secs};
		pthread_create(&th[i], NULL, fp ? fp_main : etcd_main, &cl[i]);
	}
	long w = 0, k = 0, e = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		w += cl[i].writes;
		k += cl[i].conflicts;
		e += cl[i].errors;
	}
	double el = now_s() - t0;
	printf("%s clients=%d writes=%ld secs=%.2f writes/s=%.0f conflicts=%ld errors=%ld\n",
	       argv[1], n, w, el, (double)w / el, k, e);
	free(cl);
	free(th);
	curl_global_cleanup();
	return e > w / 100 ? 1 : 0;
}
