/* codec.h - strict JSON codecs for the model (DESIGN.md "Shapes that clients and scripts rely
 * on"). Decoders refuse unknown fields and wrong types with an error naming the field
 * ("spec.gpus.count: expected an integer"); encoders produce the documented shapes.
 *
 * Node document: {"kind":"Node","metadata":{"name","uid","resourceVersion","labels","createdAt"},
 *                 "spec":{"site","rack","provider","pool","bmc":{...},"macs":[...],
 *                         "gpus":{"count","model"},"retire"},
 *                 "status":{"phase","phaseSince","holds":[...],"conditions":[...],
 *                           "operation","lastBoot":{"at","bootId"},
 *                           "validation":{"at","passed"},"inventory":{...}}}
 * Operation document: {"kind":"Operation","metadata":{"name","uid","resourceVersion","createdAt"},
 *                      "spec":{"node","kind","steps","reason","actor","idempotencyKey","params"},
 *                      "status":{"state","step","attempt","deadline","stepDeadline","startedAt",
 *                                "finishedAt","updatedAt","lastError"}} */
#ifndef FP_CORE_CODEC_H
#define FP_CORE_CODEC_H

#include <jansson.h>
#include <stddef.h>

#include "core/model.h"

/* Names: RFC 1123 DNS label rules extended with '.', 1..63 chars, [a-z0-9] at both ends,
 * [a-z0-9.-] inside (Kubernetes object names). Returns 0 or FP_EINVAL with why in err. */
int name_validate(const char *what, const char *name, char *err, size_t errlen);
/* Image store names (boot/image.h, docs/provisioning.md "Images"): 1..63 of [a-z0-9._-],
 * starting with [a-z0-9] - so a name is one path component, never "." or "..". The one rule for
 * `fleetplane image add` and spec.provision.image alike. Returns 0 or FP_EINVAL with
 * "image name \"...\": ..." in err. */
int image_name_validate(const char *name, char *err, size_t errlen);
/* Label keys: 1..63 of [A-Za-z0-9._/-]; values 0..63 of [A-Za-z0-9._-]. */
int label_validate(const char *key, const char *value, char *err, size_t errlen);

enum node_json_mode {
	NODE_JSON_STORE = 0, /* everything, including secrets; no resourceVersion */
	NODE_JSON_PUBLIC = 1 /* for API responses: spec.bmc.password and password_file removed,
			      * resourceVersion included */
};

/* Decodes a full stored document (trusted shape, still checked). rv is the mod_revision to put
 * in resource_version. Returns 0, FP_EINVAL/FP_EPARSE with detail. *out owned by caller. */
int node_from_json(const json_t *doc, int64_t rv, struct node **out, char *err, size_t errlen);
/* Decodes a node for enrollment from an API body: only metadata.name is required; kind, if
 * present, must be "Node"; status is ignored (fleetplane owns it; this lets a document from
 * `node get -o json` be enrolled elsewhere); unknown fields are refused.
 * Defaults: spec.bmc.driver "sim" when spec.bmc is absent. */
int node_from_enroll_json(const json_t *doc, struct node **out, char *err, size_t errlen);
/* Encodes; returns a new reference. */
json_t *node_to_json(const struct node *n, enum node_json_mode mode);
/* The same document as compact text (jsonx_dumps of node_to_json; caller frees). An inventory
 * kept as text (inventory_text, the informer cache's form) is spliced in byte for byte, where
 * node_to_json puts it, instead of parsed into a tree and dumped again (a third of the cost of
 * writing a cached node back). Never NULL. */
char *node_to_text(const struct node *n, enum node_json_mode mode);

int operation_from_json(const json_t *doc, int64_t rv, struct operation **out, char *err,
			size_t errlen);
json_t *operation_to_json(const struct operation *op, int with_rv);

/* Parses a label selector in Kubernetes' syntax (k8s.io/apimachinery labels.Parse): terms
 * separated by ',', each `k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (v1,v2)` or `k notin (v1,v2)`,
 * blanks allowed around tokens; at most 16 terms, 16 values in a set, 4096 bytes. `!=` and
 * notin also match nodes without the label. Stricter than Kubernetes: an empty value inside a
 * set and a trailing comma are refused. Returns 0 or FP_EINVAL (err names the offset). An
 * empty string is an error (DESIGN.md principle 5). */
struct label_selector;
int label_selector_parse(const char *s, struct label_selector **out, char *err, size_t errlen);
int label_selector_match(const struct label_selector *sel, const struct node *n);
/* Same match against a document's metadata.labels object. */
int label_selector_match_json(const struct label_selector *sel, const json_t *labels);
void label_selector_free(struct label_selector *sel);

#endif
