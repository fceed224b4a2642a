/* bench/listc.c - one full list of the API's nodes over one keep-alive connection.
 *
 *   listc URL TOKEN LIMIT
 *
 * GETs URL/v1/nodes?limit=LIMIT and then every continue page, as a client library would
 * (kubectl, client-go and the Python client reuse one connection), counts the items and bytes,
 * and prints "seconds=S bytes=B items=N pages=P": the time from the first request to the end of
 * the last body, less the harness's own item counting. Bodies are kept in memory, one page at a time (no file writes, no process per
 * page: bench/list.sh's curl-per-page figure pays ~10 ms of exec per page on this machine).
 * The continue token is read from the page's last 512 bytes, where metadata follows the items
 * (api_list_text, src/api/reply.c). Built and run by bench/list.sh. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct resp {
	char *p;
	size_t n, cap;
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
	size_t add = s * n;
	if (r->n + add + 1 > r->cap) {
		size_t cap = r->cap ? r->cap : 1 << 20;
		while (cap < r->n + add + 1)
			cap *= 2;
		char *q = realloc(r->p, cap);
		if (!q)
			return 0;
		r->p = q;
		r->cap = cap;
	}
	memcpy(r->p + r->n, p, add);
	r->n += add;
	r->p[r->n] = 0;
	return add;
}

/* Counts the items of one page: each node item starts with {"kind":"Node","metadata". */
static long count_items(const char *p)
{
	long n = 0;
	for (const char *q = p; (q = strstr(q, "\"kind\":\"Node\",\"metadata\"")); q++)
		n++;
	return n;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: listc URL TOKEN LIMIT\n");
		return 2;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	CURL *c = curl_easy_init();
	char auth[512];
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", argv[2]);
	struct curl_slist *h = curl_slist_append(NULL, auth);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	struct resp r = {0};
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
	char cont[512] = "", url[2048];
	long items = 0, pages = 0;
	double bytes = 0, t_count = 0;
	double t0 = now_s();
	for (;;) {
		snprintf(url, sizeof(url), "%s/v1/nodes?limit=%s%s%s", argv[1], argv[3],
			 cont[0] ? "&continue=" : "", cont);
		curl_easy_setopt(c, CURLOPT_URL, url);
		r.n = 0;
		CURLcode cc = curl_easy_perform(c);
		long code = 0;
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
		if (cc != CURLE_OK || code != 200) {
			fprintf(stderr, "listc: page %ld: %s, HTTP %ld\n", pages + 1,
				curl_easy_strerror(cc), code);
			return 1;
		}
		pages++;
		bytes += (double)r.n;
		double tc = now_s(); /* counting is the harness's work: off the clock */
		items += count_items(r.p);
		t_count += now_s() - tc;
		const char *tail = r.n > 512 ? r.p + r.n - 512 : r.p;
		const char *k = strstr(tail, "\"continue\":\"");
		if (!k)
			break;
		k += strlen("\"continue\":\"");
		size_t len = strcspn(k, "\"");
		if (len >= sizeof(cont)) {
			fprintf(stderr, "listc: continue token of %zu bytes\n", len);
			return 1;
		}
		memcpy(cont, k, len);
		cont[len] = 0;
	}
	double t1 = now_s();
	printf("seconds=%.3f bytes=%.0f items=%ld pages=%ld\n", t1 - t0 - t_count, bytes, items,
	       pages);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(r.p);
	return 0;
}
