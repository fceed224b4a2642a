/* reply.h - the request-side helpers of the API (reply.c): the request arena, request
 * accessors, JSON/raw/problem replies, body parsing and the helpers every resource shares
 * (resourceVersion, audit event ops, UUIDs, one stored document, paged lists). Every handler and
 * watch.c use them; they call nothing else in src/api/. struct api_req is in api_int.h. Not for
 * use outside src/api/. */
#ifndef FP_API_REPLY_H
#define FP_API_REPLY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct buf;
struct store_kv;

struct api_req;
struct api_server;
struct store_op;

/* --- arena (reply.c) --- */
/* Registers p (malloc'd) to be freed at request end; returns p. */
void *api_own(struct api_req *r, void *p);
/* Registers p to be released with fn(p) at request end; returns p. */
void *api_own_fn(struct api_req *r, void *p, void (*fn)(void *));
char *api_strdup(struct api_req *r, const char *s);
/* Registers a jansson reference to be released at request end; returns v. */
json_t *api_own_json(struct api_req *r, json_t *v);
char *api_printf(struct api_req *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* --- request accessors (reply.c) --- */
/* Query argument (percent-decoded by MHD) or NULL. Borrowed for the request. */
const char *api_query(struct api_req *r, const char *key);
/* Request header (case-insensitive name) or NULL. Borrowed for the request. */
const char *api_header(struct api_req *r, const char *key);
int64_t api_now(struct api_req *r);
uint64_t api_rand(struct api_req *r);
/* Suffix for event_id: a per-server counter (random start), so the events one server writes in
 * the same millisecond still list in the order they were made. */
uint64_t api_event_seq(struct api_req *r);
/* "operator:<token name>" (or "agent:<name>"), arena string: actor of audit events and owner
 * of holds made through the API. */
const char *api_actor(struct api_req *r);

/* The RFC 9457 problem document {type, title, status, detail[, instance]} for an HTTP status
 * (type https://fleetplane.dev/problems/<slug>, title the status's reason phrase; RFC 9110
 * section 15). Bytes of detail and instance that are not UTF-8 are written as "\xNN".
 * instance NULL = left out. New reference, never NULL. */
json_t *api_problem_doc(int status, const char *detail, const char *instance);

/* --- replies (reply.c); each sets the whole response, a later call replaces it --- */
/* 2xx/any JSON document; steals v. */
void api_reply_json(struct api_req *r, int status, json_t *v);
/* Takes data (malloc'd, len bytes) as the body: handed to MHD without a copy. */
void api_reply_take(struct api_req *r, int status, const char *ctype, char *data, size_t len);
/* Raw bytes with a content type (copied). */
void api_reply_raw(struct api_req *r, int status, const char *ctype, const char *data, size_t len);
/* RFC 9457 problem: {"type","title","status","detail","instance"} plus the members of ext
 * (stolen, may be NULL). */
void api_problem_ext(struct api_req *r, int status, json_t *ext, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
#define api_problem(r, status, ...) api_problem_ext((r), (status), NULL, __VA_ARGS__)
/* Reads the free-text member `field` of body: a string that passes jsonx_text_check (1..max
 * characters; no control, C1 or bidirectional control characters). required 0: absent is
 * fine (*out NULL). *out borrows from body. Answers 422 naming the field and returns -1. */
int api_text_member(struct api_req *r, const json_t *body, const char *field, size_t max,
		    int required, const char **out);
/* Problem for an fp_err, status from fp_err_http. */
void api_problem_rc(struct api_req *r, int rc, const char *detail);
/* Adds a response header; value copied. */
void api_add_header(struct api_req *r, const char *key, const char *value);

/* Parses the request body as a JSON object. On error answers 400 (with "line" and "column"
 * members for malformed JSON), 415 for a non-JSON Content-Type, and returns -1. */
int api_body_object(struct api_req *r, json_t **out);
/* api_body_object, the object owned by r, and 422 "unknown field KEY" (member "field": KEY cut to
 * 128 bytes on a UTF-8 boundary) for a key not in the NULL-terminated keys. Returns 0 with *out
 * set, or -1 when the response is already sent. */
int api_body_keys(struct api_req *r, const char *const *keys, json_t **out);

/* --- helpers shared by resources --- */
/* metadata.resourceVersion in the documented form (decimal string, as Kubernetes). */
json_t *api_rv_json(int64_t rv);
/* Sets doc.metadata.resourceVersion (creating metadata if absent). */
void api_set_rv(json_t *doc, int64_t rv);
/* Reads a resourceVersion given as JSON string or integer (> 0). Returns 0 or FP_EINVAL. */
int api_rv_parse_json(const json_t *v, int64_t *out);
/* Reads a decimal revision from text; also accepts an RFC 9110 section 8.8.3 entity-tag
 * ("\"12\""). Returns 0 or FP_EINVAL. */
int api_rv_parse_str(const char *s, int64_t *out);
/* New audit event op for a transaction: fills op (strings in the arena). */
void api_event_op(struct api_req *r, struct store_op *op, const char *type, const char *object,
		  const char *reason, const char *message);
/* A random UUIDv4 in the arena (RFC 9562 section 5.4). */
char *api_uuid(struct api_req *r);

/* 1 when the request asks for a watch (?watch=true or ?watch=1). api_list answers 400 for any
 * other value than those and false/0, so a typo never turns a watch into a list. */
int api_is_watch(struct api_req *r);

/* Generic list with paging (limit default 500, max 5000; continue = base64url of the last
 * key). A resourceVersion or watch that is not well formed is a 400 naming it. keep (may be NULL) returns 1 to include a stored document; render returns a new
 * reference for the response or NULL to answer 500. */
typedef int (*api_keep_fn)(struct api_req *r, const json_t *doc, void *arg);
typedef json_t *(*api_render_fn)(struct api_req *r, const json_t *doc, int64_t mod_rev);
void api_list(struct api_req *r, const char *prefix, api_keep_fn keep, void *arg,
	      api_render_fn render);
/* Appends the list item for one stored document to out as JSON text - the bytes render's tree
 * would dump to - without a tree (issue 17 item 4: the stored text with its resourceVersion
 * spliced in, base/jsontext.h). Returns 0, or < 0 with out unchanged to have api_list_text
 * parse and render that document instead. kv is borrowed. */
typedef int (*api_text_fn)(struct api_req *r, const struct store_kv *kv, struct buf *out);
/* api_list that builds the body as text with text (NULL: as api_list): documents are parsed
 * only when keep needs them or text declines. Requests of the Kubernetes API (their own list
 * kinds) always take the tree path. The body is byte for byte what api_list would send. */
void api_list_text(struct api_req *r, const char *prefix, api_keep_fn keep, void *arg,
		   api_render_fn render, api_text_fn text);
/* Reads and parses one stored document. Returns 0, FP_ENOTFOUND, FP_EIO (corrupt). */
int api_get_doc(struct api_req *r, const char *key, json_t **doc, int64_t *mod_rev);

/* --- used by server.c --- */
/* Drops the response prepared so far (body, handed-over body, headers); status stays. */
void api_reply_reset(struct api_req *r);
/* Wall-clock Unix ms of srv: its cfg.clock, or CLOCK_REALTIME without one. */
int64_t api_wall_ms(const struct api_server *srv);

#endif
