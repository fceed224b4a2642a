/* bench/etcd_puts.c - durable writes per second through fleetplane's store on etcd
 * (store_put, store_etcd.c: one Txn per write, returned once its watch event is in the feed)
 * against raw etcd puts (POST /v3/kv/put over keep-alive, libcurl) of the same value size with
 * the same client concurrency. Built and run by bench/etcd.sh:
 *   etcd_puts ENDPOINT THREADS PUTS_PER_THREAD VALUE_BYTES ROUNDS
 * Rounds alternate raw, store, raw, store...; each line: "<kind> round=R writes/s=X". */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/store.h"
#include "store/store_etcd_int.h"

struct job {
	const char *ep;
	struct store *s;
	int id, puts, round;
	const char *value;
	char *b64val;
	int errors;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t sink(char *p, size_t s, size_t n, void *a)
{
	return s * n;
}

static void *raw_main(void *arg)
{
	struct job *j = arg;
	CURL *c = curl_easy_init();
	char url[256], key[64];
	size_t blen = strlen(j->b64val) + 256;
	char *body = malloc(blen);
	snprintf(url, sizeof(url), "http://%s/v3/kv/put", j->ep);
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	for (int i = 0; i < j->puts; i++) {
		snprintf(key, sizeof(key), "/bench/raw/%d/%d/%d", j->round, j->id, i);
		char *k64 = store_etcd_b64(key, strlen(key));
		snprintf(body, blen, "{\"key\":\"%s\",\"value\":\"%s\"}", k64, j->b64val);
		free(k64);
		curl_easy_setopt(c, CURLOPT_URL, url);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
		long code = 0;
		if (curl_easy_perform(c) != CURLE_OK ||
		    (curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code), code != 200))
			j->errors++;
	}
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(body);
	return NULL;
}

static void *store_main(void *arg)
{
	struct job *j = arg;
	char key[64];
	for (int i = 0; i < j->puts; i++) {
		snprintf(key, sizeof(key), "/bench/store/%d/%d/%d", j->round, j->id, i);
		if (store_put(j->s, key, j->value, STORE_ANY, NULL) < 0)
			j->errors++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: etcd_puts ENDPOINT THREADS PUTS VALUE_BYTES ROUNDS\n");
		return 2;
	}
	const char *ep = argv[1];
	int threads = (int)strtol(argv[2], NULL, 10), puts = (int)strtol(argv[3], NULL, 10),
	    vb = (int)strtol(argv[4], NULL, 10), rounds = (int)strtol(argv[5], NULL, 10);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	char *value = malloc((size_t)vb + 1);
	memset(value, 'v', (size_t)vb);
	memcpy(value, "\"", 1);
	value[vb - 1] = '"';
	value[vb] = 0;
	char *b64 = store_etcd_b64(value, (size_t)vb);
	char uri[300], err[256];
	snprintf(uri, sizeof(uri), "etcd://%s/fpbench", ep);
	struct store *s = NULL;
	if (store_open(uri, &s, err, sizeof(err)) < 0) {
		fprintf(stderr, "store_open: %s\n", err);
		return 1;
	}
	pthread_t *th = calloc((size_t)threads, sizeof(*th));
	struct job *jobs = calloc((size_t)threads, sizeof(*jobs));
	for (int r = 0; r < 2 * rounds; r++) {
		int is_store = r % 2;
		double t0 = now_s();
		for (int i = 0; i < threads; i++) {
			jobs[i] = (struct job){ep, s, i, puts, r, value, b64, 0};
			pthread_create(&th[i], NULL, is_store ? store_main : raw_main, &jobs[i]);
		}
		int errors = 0;
		for (int i = 0; i < threads; i++) {
			pthread_join(th[i], NULL);
			errors += jobs[i].errors;
		}
		double dt = now_s() - t0;
		printf("%s round=%d threads=%d value_bytes=%d writes/s=%.0f errors=%d\n",
		       is_store ? "store" : "raw", r / 2 + 1, threads, vb, threads * puts / dt,
		       errors);
		fflush(stdout);
	}
	store_close(s);
	return 0;
}
