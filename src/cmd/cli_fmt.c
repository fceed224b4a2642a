/* cli_fmt.c - list formats, --sort-by, --since and the watch bar's throttle (see cli_fmt.h). */
#include "cmd/cli_fmt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "base/alloc.h"
#include "base/jsonx.h"
#include "base/timefmt.h"

#include "base/banned.h"

int cli_opt_list(const char *cmd, int ch, char **argv, const char *usage, struct cli_listfmt *f)
{
	char err[128];
	if (ch == 'o') {
		static const struct {
			const char *name;
			enum client_output o;
		} fmts[] = {
			{"table", CLIENT_OUT_TABLE}, {"json", CLIENT_OUT_JSON},
			{"wide", CLIENT_OUT_WIDE},   {"yaml", CLIENT_OUT_YAML},
			{"name", CLIENT_OUT_NAME},
		};
		for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
			if (strcmp(optarg, fmts[i].name) == 0) {
				f->o = fmts[i].o;
				return CLI_GO_ON;
			}
		}
		return client_usage_error(cmd,
					  "unknown output format '%s' (want table, json, wide, "
					  "yaml or name)",
					  optarg);
	}
	if (ch == CLI_OPT_NO_HEADERS) {
		f->no_headers = 1;
		return CLI_GO_ON;
	}
	if (ch == CLI_OPT_SORT_BY) {
		if (!cli_sort_path_ok(optarg, err, sizeof(err)))
			return client_usage_error(cmd, "flag '--sort-by': bad field path '%s': %s",
						  optarg, err);
		f->sort_by = optarg;
		return CLI_GO_ON;
	}
	return cli_opt_default(cmd, ch, argv, usage, 1, NULL);
}

/* ---- field paths ---- */

/* The path without kubectl's braces: [*b, *e). */
static void sort_strip(const char *path, const char **b, const char **e)
{
	size_t n = strlen(path);
	*b = path;
	*e = path + n;
	if (n >= 2 && path[0] == '{' && path[n - 1] == '}') {
		(*b)++;
		(*e)--;
	}
}

int cli_sort_path_ok(const char *path, char *err, size_t errlen)
{
	const char *p, *e;
	if (strlen(path) > CLI_SORT_MAX_PATH) {
		snprintf(err, errlen, "longer than %d bytes", CLI_SORT_MAX_PATH);
		return 0;
	}
	sort_strip(path, &p, &e);
	if (p == e || *p != '.') {
		snprintf(err, errlen, "must start with '.', as in .metadata.name");
		return 0;
	}
	for (int field = 1; p < e; field++) {
		p++; /* the '.' */
		size_t n = 0;
		while (p + n < e && (((p[n] | 0x20) >= 'a' && (p[n] | 0x20) <= 'z') ||
				     (p[n] >= '0' && p[n] <= '9') || p[n] == '_' || p[n] == '-'))
			n++;
		if (n == 0 || n > 63) {
			snprintf(err, errlen, "field %d %s", field,
				 n ? "is longer than 63 characters"
				   : "is empty or has a bad character");
			return 0;
		}
		p += n;
		if (p < e && *p == '[') {
			size_t d = 0;
			p++;
			while (p + d < e && p[d] >= '0' && p[d] <= '9')
				d++;
			if (d == 0 || d > 6 || p + d >= e || p[d] != ']') {
				snprintf(err, errlen, "field %d: expected [N] with 1..6 digits",
					 field);
				return 0;
			}
			p += d + 1;
		}
		if (p < e && *p != '.') {
			snprintf(err, errlen, "unexpected '%c' after field %d", *p, field);
			return 0;
		}
	}
	return 1;
}

const json_t *cli_sort_value(const json_t *doc, const char *path)
{
	const char *p, *e;
	sort_strip(path, &p, &e);
	const json_t *v = doc;
	while (p < e && v) {
		char key[64];
		size_t n = 0;
		p++;
		while (p + n < e && p[n] != '.' && p[n] != '[')
			n++;
		if (n >= sizeof(key))
			return NULL;
		memcpy(key, p, n);
		key[n] = 0;
		v = json_is_object(v) ? json_object_get(v, key) : NULL;
		p += n;
		if (p < e && *p == '[') {
			size_t idx = (size_t)strtoul(p + 1, NULL, 10);
			v = json_is_array(v) ? json_array_get(v, idx) : NULL;
			p = strchr(p, ']') + 1;
		}
	}
	return v;
}

struct sort_ent {
	const json_t *key; /* NULL: the item has no such field */
	json_t *item;
	size_t pos;
};

static int sort_rank(const json_t *v)
{
	if (!v)
		return 0;
	switch (json_typeof(v)) {
	case JSON_NULL: return 1;
	case JSON_FALSE:
	case JSON_TRUE: return 2;
	case JSON_INTEGER:
	case JSON_REAL: return 3;
	case JSON_STRING: return 4;
	default: return 5;
	}
}

static int sort_cmp(const void *a, const void *b)
{
	const struct sort_ent *x = a, *y = b;
	int rx = sort_rank(x->key), ry = sort_rank(y->key), c = 0;
	if (rx != ry)
		return rx < ry ? -1 : 1;
	if (rx == 2)
		c = json_is_true(x->key) - json_is_true(y->key);
	else if (rx == 3) {
		double dx = json_number_value(x->key), dy = json_number_value(y->key);
		c = dx < dy ? -1 : dx > dy;
	} else if (rx == 4)
		c = strcmp(json_string_value(x->key), json_string_value(y->key));
	else if (rx == 5) {
		char *sx = json_dumps(x->key, JSON_COMPACT | JSON_SORT_KEYS);
		char *sy = json_dumps(y->key, JSON_COMPACT | JSON_SORT_KEYS);
		c = strcmp(sx ? sx : "", sy ? sy : "");
		free(sx);
		free(sy);
	}
	if (c)
		return c < 0 ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos; /* stable */
}

int cli_sort_items(json_t *items, const char *path)
{
	size_t n = json_array_size(items), found = 0;
	if (n == 0)
		return 0;
	struct sort_ent *v = xcalloc(n, sizeof(*v));
	for (size_t i = 0; i < n; i++) {
		v[i].item = json_incref(json_array_get(items, i));
		v[i].key = cli_sort_value(v[i].item, path);
		v[i].pos = i;
		found += v[i].key != NULL;
	}
	if (found)
		qsort(v, n, sizeof(*v), sort_cmp);
	if (found)
		json_array_clear(items);
	for (size_t i = 0; i < n; i++) {
		if (found)
			json_array_append(items, v[i].item);
		json_decref(v[i].item);
	}
	free(v);
	return found ? 0 : -1;
}

/* ---- YAML ---- */

int cli_yaml_plain_ok(const char *s)
{
	static const char *const words[] = {"true", "false", "yes",  "no",  "on", "off",
					    "y",    "n",     "null", "nil", NULL};
	size_t n = strlen(s);
	if (n == 0 || n > 1024)
		return 0;
	if (!(((s[0] | 0x20) >= 'a' && (s[0] | 0x20) <= 'z') || s[0] == '_'))
		return 0;
	for (size_t i = 1; i < n; i++) {
		char c = s[i];
		if (!(((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '/' || c == '-'))
			return 0;
	}
	for (const char *const *w = words; *w; w++)
		if (strcasecmp(s, *w) == 0)
			return 0;
	return 1;
}

static int y_emit(yaml_emitter_t *em, yaml_event_t *ev)
{
	return yaml_emitter_emit(em, ev) ? 0 : -1;
}

static int y_scalar(yaml_emitter_t *em, const char *s, int plain)
{
	yaml_event_t ev;
	if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), 1, 1,
					  plain ? YAML_PLAIN_SCALAR_STYLE
						: YAML_DOUBLE_QUOTED_SCALAR_STYLE))
		return -1;
	return y_emit(em, &ev);
}

static int y_value(yaml_emitter_t *em, const json_t *v, int depth)
{
	yaml_event_t ev;
	char num[64];
	if (depth > 64)
		return -1; /* jansson parses at most 2048 levels; our documents have < 10 */
	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		const char *k;
		json_t *x;
		int flow = json_object_size(v) == 0;
		if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
							 flow ? YAML_FLOW_MAPPING_STYLE
							      : YAML_BLOCK_MAPPING_STYLE) ||
		    y_emit(em, &ev) < 0)
			return -1;
		json_object_foreach((json_t *)v, k, x) {
			if (y_scalar(em, k, cli_yaml_plain_ok(k)) < 0 ||
			    y_value(em, x, depth + 1) < 0)
				return -1;
		}
		yaml_mapping_end_event_initialize(&ev);
		return y_emit(em, &ev);
	}
	case JSON_ARRAY: {
		size_t i;
		json_t *x;
		int flow = json_array_size(v) == 0;
		if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
							  flow ? YAML_FLOW_SEQUENCE_STYLE
							       : YAML_BLOCK_SEQUENCE_STYLE) ||
		    y_emit(em, &ev) < 0)
			return -1;
		json_array_foreach(v, i, x) {
			if (y_value(em, x, depth + 1) < 0)
				return -1;
		}
		yaml_sequence_end_event_initialize(&ev);
		return y_emit(em, &ev);
	}
	case JSON_STRING: {
		const char *s = json_string_value(v);
		if (strlen(s) != json_string_length(v))
			return -1; /* a NUL inside: YAML cannot carry it, JSON can */
		return y_scalar(em, s, cli_yaml_plain_ok(s));
	}
	case JSON_INTEGER:
		snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
		return y_scalar(em, num, 1);
	case JSON_REAL: {
		char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
		int rc = s ? y_scalar(em, s, 1) : -1;
		free(s);
		return rc;
	}
	case JSON_TRUE: return y_scalar(em, "true", 1);
	case JSON_FALSE: return y_scalar(em, "false", 1);
	default: return y_scalar(em, "null", 1);
	}
}

int cli_yaml_write(const json_t *v, FILE *f)
{
	yaml_emitter_t em;
	yaml_event_t ev;
	int rc = -1;
	if (!yaml_emitter_initialize(&em))
		return -1;
	yaml_emitter_set_output_file(&em, f);
	yaml_emitter_set_unicode(&em, 1);
	yaml_emitter_set_width(&em, -1);
	yaml_emitter_set_indent(&em, 2);
	if (!yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) || y_emit(&em, &ev) < 0)
		goto out;
	if (!yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) || y_emit(&em, &ev) < 0)
		goto out;
	if (y_value(&em, v, 0) < 0)
		goto out;
	if (!yaml_document_end_event_initialize(&ev, 1) || y_emit(&em, &ev) < 0)
		goto out;
	if (!yaml_stream_end_event_initialize(&ev) || y_emit(&em, &ev) < 0)
		goto out;
	rc = yaml_emitter_flush(&em) ? 0 : -1;
out:
	yaml_emitter_delete(&em);
	return rc;
}

/* ---- printing lists ---- */

int cli_print_list(json_t *items, const struct cli_listfmt *f, const struct cli_view *v)
{
	if (f->sort_by && cli_sort_items(items, f->sort_by) < 0) {
		fprintf(stderr, "error: --sort-by: no item has the field '%s'\n", f->sort_by);
		return CLIENT_EXIT_USAGE;
	}
	if (f->o == CLIENT_OUT_YAML) {
		json_t *doc = json_pack("{s:O}", "items", items);
		int rc = cli_yaml_write(doc, stdout);
		json_decref(doc);
		if (rc < 0) {
			fprintf(stderr, "error: cannot write the list as YAML\n");
			return CLIENT_EXIT_API;
		}
		return CLIENT_EXIT_OK;
	}
	if (f->o == CLIENT_OUT_NAME) {
		size_t i;
		json_t *item;
		json_array_foreach(items, i, item) {
			char *n = table_clean(jsonx_str(item, "metadata.name")
						      ? jsonx_str(item, "metadata.name")
						      : "-",
					      0);
			printf("%s/%s\n", f->kind, n);
			free(n);
		}
		return CLIENT_EXIT_OK;
	}
	if (f->o != CLIENT_OUT_TABLE && f->o != CLIENT_OUT_WIDE) {
		cli_print_items(items, f->o, v);
		return CLIENT_EXIT_OK;
	}
	struct table t;
	int64_t now = client_now_ms();
	table_init(&t, f->o == CLIENT_OUT_WIDE);
	t.no_header = f->no_headers;
	table_cols(&t, v->cols);
	if (f->o == CLIENT_OUT_WIDE)
		table_cols(&t, v->wide_cols);
	size_t i;
	json_t *item;
	json_array_foreach(items, i, item)
		v->row(&t, item, f->o, now);
	if (table_rows(&t) == 0)
		fputs(v->none, stderr);
	else
		table_print(&t, stdout);
	table_release(&t);
	return CLIENT_EXIT_OK;
}

int cli_list_print_fmt(const char *path, size_t max, const struct cli_listfmt *f,
		       const struct cli_view *v)
{
	struct client c;
	json_t *items = NULL;
	int rc = client_init(&c);
	if (rc == CLIENT_EXIT_OK)
		rc = client_list(&c, path, max, &items, NULL);
	if (rc == CLIENT_EXIT_OK) {
		while (max && json_array_size(items) > max)
			json_array_remove(items, json_array_size(items) - 1);
		rc = cli_print_list(items, f, v);
	}
	json_decref(items);
	client_release(&c);
	return rc;
}

/* ---- --since ---- */

int cli_parse_since(const char *s, int64_t now_ms, int64_t *out_ms)
{
	int64_t t;
	if (!s || !*s)
		return -1;
	if (fp_time_parse_offset(s, &t, NULL) == 0) {
		*out_ms = t;
		return 0;
	}
	int64_t total = 0;
	const char *p = s;
	while (*p) {
		if (*p < '0' || *p > '9')
			return -1;
		int64_t n = 0;
		int digits = 0;
		while (*p >= '0' && *p <= '9') {
			if (++digits > 7)
				return -1;
			n = n * 10 + (*p++ - '0');
		}
		int64_t unit;
		switch (*p++) {
		case 's': unit = 1000; break;
		case 'm': unit = 60 * 1000; break;
		case 'h': unit = 3600 * 1000; break;
		case 'd': unit = 86400LL * 1000; break;
		default: return -1;
		}
		total += n * unit;
		if (total > 3650LL * 86400 * 1000)
			return -1;
	}
	if (total < 1000 || now_ms - total <= 0)
		return -1;
	*out_ms = now_ms - total;
	return 0;
}

/* ---- --wait ---- */

void cli_op_step_text(const json_t *doc, char *out, size_t outlen)
{
	json_t *st = jsonx_path(doc, "status.step");
	json_t *steps = jsonx_path(doc, "spec.steps");
	size_t n = json_array_size(steps);
	if (json_is_string(st)) {
		snprintf(out, outlen, "%s", json_string_value(st));
	} else if (json_is_integer(st) && json_integer_value(st) >= 0) {
		size_t i = (size_t)json_integer_value(st);
		const char *name = json_string_value(json_array_get(steps, i));
		if (n && i >= n)
			snprintf(out, outlen, "done");
		else if (name)
			snprintf(out, outlen, "%zu/%zu %s", i + 1, n, name);
		else
			snprintf(out, outlen, "%zu", i + 1);
	} else {
		snprintf(out, outlen, "-");
	}
}

void cli_wait_text(const char *id, int64_t elapsed_ms, const json_t *op, char *out, size_t outlen)
{
	char step[160] = "", att[32] = "";
	long long s = elapsed_ms > 0 ? (long long)(elapsed_ms / 1000) : 0;
	const char *st = op ? jsonx_str(op, "status.state") : NULL;
	char *ic = table_clean(id, 64);
	if (!st) {
		snprintf(out, outlen, "waiting %llds for operation %s", s, ic);
		free(ic);
		return;
	}
	char *sc = table_clean(st, 32);
	cli_op_step_text(op, step, sizeof(step));
	char *stc = table_clean(step, 80);
	json_t *a = jsonx_path(op, "status.attempt");
	if (json_is_integer(a) && json_integer_value(a) > 1)
		snprintf(att, sizeof(att), " (attempt %lld)", (long long)json_integer_value(a));
	if (strcmp(st, "pending") == 0)
		snprintf(out, outlen, "waiting %llds for operation %s: pending%s", s, ic,
			 json_is_true(jsonx_path(op, "queued"))
				 ? " (queued behind the node's operation in flight)"
				 : ", not started");
	else
		snprintf(out, outlen, "waiting %llds for operation %s: %s, step %s%s", s, ic, sc,
			 stc, att);
	free(ic);
	free(sc);
	free(stc);
}

/* ---- throttle ---- */

int cli_throttle_due(struct cli_throttle *t, int64_t now_ms, int changed)
{
	if (changed)
		t->pending = 1;
	if (!t->pending)
		return 0;
	if (t->last_ms && now_ms - t->last_ms < t->interval_ms && now_ms >= t->last_ms)
		return 0;
	t->last_ms = now_ms;
	t->pending = 0;
	return 1;
}
