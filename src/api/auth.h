/* auth.h - bearer-token authentication for the HTTP API (DESIGN.md "API"; RFC 6750 bearer
 * tokens, RFC 9110 section 11 HTTP authentication).
 *
 * A token is a secret "fpt_" + base64url(32 random bytes from libsodium randombytes_buf), shown
 * once when it is created. The store keeps only its BLAKE2b hash (crypto_generichash, 32 bytes,
 * hex) at /tokens/<name>:
 *   {"kind":"Token","metadata":{"name","createdAt"},"role","node"?,"nodeUid"?,"hash"}
 * Roles rank admin > operator > viewer; `agent` tokens are scoped to one node and do not rank
 * above anything (the route table says which routes an agent may use). An agent token is bound
 * to the node's identity, not its name: "nodeUid" is the node's metadata.uid when the token was
 * made (the node must exist then), and the server refuses the token once the node of that name
 * has another uid (deleted and re-created) or is gone (issue 16 item 12). Agent tokens stored
 * by older versions have no "nodeUid": they load, but the server refuses them with a detail
 * telling the operator to make a new one. The server keeps an
 * in-memory hash -> token map, loaded at start, updated on create/revoke, and refreshed from the
 * store when /tokens/ changed (a token created or revoked by another process sharing the store
 * is seen on the next miss, and within about a second on a hit). Hashes are compared with
 * sodium_memcmp (constant time). Secrets are never logged and are wiped after use. */
#ifndef FP_API_AUTH_H
#define FP_API_AUTH_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct store;
struct api_auth;

enum api_role {
	API_ROLE_NONE = 0,
	API_ROLE_AGENT,
	API_ROLE_VIEWER,
	API_ROLE_OPERATOR,
	API_ROLE_ADMIN
};

#define API_TOKEN_PREFIX "fpt_"
#define API_NAME_MAX 64
#define API_UID_MAX 64 /* a node's metadata.uid (a UUID, 36 characters) and its NUL */

/* Who made a request: the token's name, role and (agent only) node and that node's uid when
 * the token was made ("" for an agent token stored without one). Plain data, no ownership. */
struct api_principal {
	char name[API_NAME_MAX];
	enum api_role role;
	char node[API_NAME_MAX];
	char node_uid[API_UID_MAX];
};

/* "admin" | "operator" | "viewer" | "agent" | "none". Static string. */
const char *api_role_name(enum api_role r);
/* Parses a role name (not "none"). Returns 0 or FP_EINVAL. */
int api_role_parse(const char *s, enum api_role *out);

/* Loads every /tokens/ document of st into memory (an agent token without nodeUid is logged at
 * warn: it loads but the server refuses it). st is borrowed and must outlive the auth.
 * Returns NULL with detail in err when the store cannot be read. */
struct api_auth *api_auth_new(struct store *st, char *err, size_t errlen);
/* Frees the map. NULL is a no-op. */
void api_auth_free(struct api_auth *a);

/* First-start admin token: if <data_dir>/admin.token does not exist, creates it (open
 * O_CREAT|O_EXCL, mode 0600), creates the token "admin" with role admin in the store (replacing
 * a stale /tokens/admin whose secret was lost) and writes the secret plus "\n" into the file. If
 * the file exists, does nothing (the token is kept across restarts). data_dir NULL: nothing.
 * Returns 0, FP_EIO (file or store error; a half-made file is removed) with detail in err. */
int api_auth_bootstrap(struct api_auth *a, const char *data_dir, int64_t wall_ms, uint64_t rnd,
		       char *err, size_t errlen);

/* Authenticates a presented secret (the part after "Bearer "). Returns 0 and fills *who, or
 * FP_EAUTH for an unknown or malformed token. Refreshes the map from the store when needed. */
int api_auth_check(struct api_auth *a, const char *secret, struct api_principal *who);
/* The same without touching the store: a hit in the in-memory map (read lock only), FP_EAGAIN
 * when the answer needs a refresh from the store (a miss, or the once-a-second check for
 * tokens changed by another process is due): the caller then uses api_auth_check where it may
 * block. For the server's poll threads. */
int api_auth_check_fast(struct api_auth *a, const char *secret, struct api_principal *who);

/* Creates a token: validates name (core name rules), role, node and node_uid (both required
 * for agent tokens, refused otherwise; node_uid is the node's metadata.uid, which the caller
 * read from the store: this function does not check that the node exists), writes /tokens/<name> create-if-absent together with an audit event
 * "TokenCreated" by actor in one store transaction, and returns the secret in *secret (caller
 * frees with fp_free_secret) and the public document (no hash) in *doc (new reference).
 * Returns 0, FP_EINVAL (detail in err), FP_EEXIST, or a store error. */
int api_auth_token_create(struct api_auth *a, const char *name, enum api_role role,
			  const char *node, const char *node_uid, const char *actor,
			  int64_t wall_ms, uint64_t rnd, char **secret, json_t **doc, char *err,
			  size_t errlen);

/* Revokes (deletes) /tokens/<name> with an audit event "TokenRevoked" in the same transaction
 * and drops it from the map. Returns 0, FP_ENOTFOUND or a store error. */
int api_auth_token_revoke(struct api_auth *a, const char *name, const char *actor, int64_t wall_ms,
			  uint64_t rnd);

/* Public form of a stored token document: kind, metadata, role, node, nodeUid; never the hash.
 * Returns a new reference. */
json_t *api_auth_token_public(const json_t *stored);

#endif
