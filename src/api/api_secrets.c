/* api_secrets.c - api_seal_stored_passwords (api/api_secrets.h): one pass over the /nodes/
 * documents at serve's start that seals the clear-text BMC passwords an older store holds. It
 * works on the stored JSON, not through the codec, so no key reaches the codec and a document's
 * other fields are written back byte for byte as they were parsed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_secrets.h"
#include "base/alloc.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/log.h"

#include "base/banned.h"

struct plain_doc {
	char *key;
	int64_t rev;
};

struct plain_list {
	struct plain_doc *v;
	size_t n, cap;
};

/* store_foreach callback: notes the nodes whose stored spec.bmc.password is a string (the walk
 * only reads; the writes come after it). */
static int note_plain(void *arg, const struct store_kv *kv)
{
	struct plain_list *l = arg;
	/* Stored documents are jansson's output, which writes an ASCII key as it is: a node
	 * whose text has no "password" key has nothing to seal, and needs no parse (issue 17:
	 * parsing every node here was a third of a 100k-node start). */
	if (!strstr(kv->value, "\"password\"") && !strstr(kv->value, "\\u"))
		return 0; /* (a name with an escape, "p\u0061ssword", is parsed too) */
	/* duplicate keys refused, as the cache refuses them: a text read with the last of two
	 * "spec" members and written back would lose the first without a word */
	json_t *doc = NULL;
	if (jsonx_parse(kv->value, strlen(kv->value), &doc, NULL, 0) < 0)
		return 0;
	json_t *pw = doc ? json_object_get(jsonx_path(doc, "spec.bmc"), "password") : NULL;
	if (json_is_string(pw)) {
		if (l->n == l->cap) {
			l->cap = l->cap ? 2 * l->cap : 8;
			l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
		}
		l->v[l->n++] = (struct plain_doc){xstrdup(kv->key), kv->mod_revision};
	}
	json_decref(doc);
	return 0;
}

/* Seals one document's password in place and writes it back (CAS). 1 = rewritten, 0 = left
 * (gone, changed meanwhile, no longer plaintext), or a negative error. */
static int seal_one(struct store *s, const struct secret_key *k, const struct plain_doc *p,
		    char *err, size_t errlen)
{
	struct store_kv kv = {0};
	int rc = store_get(s, p->key, &kv);
	if (rc == FP_ENOTFOUND)
		return 0;
	if (rc == FP_EINVAL) { /* a key the store never writes (an etcd key set by hand) */
		char *shown = jsonx_utf8_escaped(p->key);
		log_warn("clear-text BMC password not sealed: the store refuses its key key=\"%s\"",
			 shown);
		free(shown);
		return 0;
	}
	if (rc < 0)
		return fp_errf(rc, err, errlen, "cannot read %s: %s", p->key, fp_err_msg(rc));
	json_t *doc = NULL;
	if (kv.mod_revision == p->rev)
		(void)jsonx_parse(kv.value, strlen(kv.value), &doc, NULL, 0);
	json_t *bmc = doc ? jsonx_path(doc, "spec.bmc") : NULL;
	json_t *pw = json_object_get(bmc, "password");
	char *sealed = NULL, *text = NULL, e[160];
	rc = 0;
	if (json_is_string(pw)) {
		rc = secret_seal(k, json_string_value(pw), &sealed, e, sizeof(e));
		/* wipe the clear text inside the jansson string before it is freed */
		explicit_bzero((char *)json_string_value(pw), json_string_length(pw));
		json_object_del(bmc, "password");
		if (rc < 0) {
			rc = fp_errf(rc, err, errlen, "%s: spec.bmc.password: %s", p->key, e);
		} else {
			json_object_set_new(bmc, "password_sealed", json_string(sealed));
			text = jsonx_dumps(doc);
			rc = store_put(s, p->key, text, p->rev, NULL);
			if (rc == FP_ECONFLICT || rc == FP_ENOTFOUND)
				rc = 0;
			else if (rc < 0)
				rc = fp_errf(rc, err, errlen, "cannot write %s: %s", p->key,
					     fp_err_msg(rc));
			else
				rc = 1;
		}
	}
	free(text);
	free(sealed);
	json_decref(doc);
	/* the stored text held the clear password too */
	fp_free_secret(kv.value);
	kv.value = NULL;
	store_kv_release(&kv);
	return rc;
}

int api_seal_stored_passwords(struct store *s, const struct secret_key *k, size_t *sealed,
			      char *err, size_t errlen)
{
	struct plain_list l = {0};
	size_t done = 0;
	/* note_plain only reads and collects: the rows are borrowed where SQLite holds them */
	int rc = store_foreach_scan(s, "/nodes/", 1000, note_plain, &l, NULL);
	if (rc < 0)
		rc = fp_errf(rc, err, errlen, "cannot read the nodes: %s", fp_err_msg(rc));
	for (size_t i = 0; rc >= 0 && i < l.n; i++) {
		int r = seal_one(s, k, &l.v[i], err, errlen);
		if (r < 0)
			rc = r;
		else
			done += (size_t)r;
	}
	for (size_t i = 0; i < l.n; i++)
		free(l.v[i].key);
	free(l.v);
	if (sealed)
		*sealed = done;
	return rc < 0 ? rc : 0;
}
