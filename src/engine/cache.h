/* cache.h - the informer: an in-memory typed cache of nodes and operations filled by list +
 * watch of the store (Kubernetes client-go informer), indexed by site, rack and phase. The
 * controllers read only from it; JSON exists only at its edge. Handlers registered with
 * cache_on_node are called (from the watch thread, after the cache is updated) with the name of
 * every node that changed, and with the node of every operation that changed, so a controller
 * can enqueue it. The watch thread also keeps a rendered public JSON document per node so the
 * API can answer GET /v1/nodes/{name} without encoding.
 *
 * When the change feed is compacted past the cache's revision, the cache re-lists. Operations in
 * a terminal state are dropped once their node no longer points at them. Thread-safe. */
#ifndef FP_ENGINE_CACHE_H
#define FP_ENGINE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "core/model.h"
#include "store/store.h"

struct cache;

typedef void (*cache_node_fn)(void *arg, const char *node);

enum cache_index {
	CACHE_BY_SITE = 0,
	CACHE_BY_RACK,
	CACHE_BY_PHASE
};

/* Creates a cache over s (borrowed; must outlive the cache). Not started. */
struct cache *cache_new(struct store *s);
/* Registers a handler (before cache_start). At most 8. */
void cache_on_node(struct cache *c, cache_node_fn fn, void *arg);
/* Lists, fills, then starts the watch thread. Returns 0 or a store error with detail in err. */
int cache_start(struct cache *c, char *err, size_t errlen);
/* For single-threaded (virtual time) use instead of the thread: apply every change committed
 * so far. Returns the number of changes applied or a negative error. */
int cache_sync_now(struct cache *c);
/* Stops the watch thread and frees everything. NULL is a no-op. */
/* Stops the watch thread (joins it): no handler of cache_on_node is called after it returns;
 * reads keep working on the state as it was. Idempotent; cache_free calls it. Call it before
 * freeing anything a handler reaches. */
void cache_stop(struct cache *c);
void cache_free(struct cache *c);

/* 1 once the first list has been applied. */
int cache_synced(struct cache *c);
/* The store revision the cache reflects. */
int64_t cache_revision(struct cache *c);
/* Blocks until the cache reflects rev (or timeout_ms passes). 0 or FP_ETIMEDOUT. */
int cache_wait_revision(struct cache *c, int64_t rev, int timeout_ms);

/* Returns a copy of the node (caller frees with node_free), or NULL. Its inventory is in
 * inventory_text (compact JSON), not the inventory tree; node_to_json renders either. */
struct node *cache_node_get(struct cache *c, const char *name);
/* Copies the node's rendered public JSON (no secrets, with resourceVersion) into a new
 * malloc'd string. Returns 0 or FP_ENOTFOUND. */
int cache_node_json(struct cache *c, const char *name, char **json, size_t *len);
/* Same, and the node's resourceVersion (the one in the document's metadata) in *rv. */
int cache_node_json_rv(struct cache *c, const char *name, char **json, size_t *len, int64_t *rv);
/* Copies the node's metadata.uid into uid (len bytes, NUL-terminated; truncated if longer; ""
 * when the node has none). Returns 0 or FP_ENOTFOUND. Read lock only: for the API's poll
 * threads (the agent token's uid check, api/server.h struct api_node_view). */
int cache_node_uid(struct cache *c, const char *name, char *uid, size_t len);
/* A store revision T such that every stored node row with mod_revision <= T that is current
 * in any read begun after this call returns was parsed (jansson, duplicate members refused) and
 * decoded by this cache from that very text; 0 when none can be vouched for (not synced, a
 * relist under way, or some node's newest document did not decode). The list path copies such
 * rows trusted (base/jsontext.h) with one call per page instead of a lookup per row. Why it
 * holds: the cache mirrors the store at its revision R (every change up to R applied or
 * refused, in order; a relist re-reads every node at a revision >= R); a row current at a later
 * snapshot with mod_revision <= R - 1 is the one the cache saw. The mutex, then the read lock. */
int64_t cache_trusted_revision(struct cache *c);
/* The store revision the cached node was decoded from (its resourceVersion) in *rev: 0, or
 * FP_ENOTFOUND when the cache does not hold the node. A node is cached only once its stored
 * text parsed (jansson, duplicate members refused) and decoded, so a match with a stored
 * row's mod_revision vouches for that row's text: the list path copies it trusted
 * (base/jsontext.h). Read lock only, like cache_node_uid. */
int cache_node_rev(struct cache *c, const char *name, int64_t *rev);
/* Returns a copy of the operation, or NULL. */
struct operation *cache_operation_get(struct cache *c, const char *id);

/* Names of nodes whose site/rack/phase equals value (phase by its API name). *names is a new
 * array of new strings; free each and the array. Returns the count. */
size_t cache_node_names(struct cache *c, enum cache_index idx, const char *value, char ***names);
/* Every node name (same ownership as above). */
size_t cache_all_node_names(struct cache *c, char ***names);
void cache_phase_counts(struct cache *c, size_t counts[PHASE__COUNT]);
/* A read-only visitor over the cached nodes: fn returns 0 to go on, anything else stops the
 * walk and is returned. n is the cache's own node (inventory as inventory_text), valid only for
 * the call. fn runs under the cache's read lock: it must not call back into the cache (a
 * writer waiting for the lock would deadlock it) nor into the store, and should be quick. */
typedef int (*cache_visit_fn)(void *arg, const struct node *n);
/* Calls fn for every cached node, in no particular order, without copying. Returns 0 or fn's
 * first non-zero result. */
int cache_visit_nodes(struct cache *c, cache_visit_fn fn, void *arg);
size_t cache_node_count(struct cache *c);
/* Registers the fleetplane_nodes{phase} collector on the metrics registry; cache_free removes
 * it. */
void cache_register_metrics(struct cache *c);

#endif
