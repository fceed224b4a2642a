/* api/api_secrets.h - sealing the plaintext BMC passwords an older store holds, once at serve's
 * start (core/secret.h): the API seals every password it is sent before the node is written,
 * but a store written by an older serve, or by a writer without a key, may still hold
 * spec.bmc.password in clear text, and nothing else writes it sealed (the codec holds no key).
 * serve runs this before the informer cache lists the nodes, so no decoded node holds it. */
#ifndef FP_API_API_SECRETS_H
#define FP_API_API_SECRETS_H

#include <stddef.h>

#include "core/secret.h"
#include "store/store.h"

/* api_seal_stored_passwords rewrites every /nodes/ document whose spec.bmc.password is a string:
 * the password sealed under k (borrowed) into spec.bmc.password_sealed, spec.bmc.password
 * removed, everything else in the document kept as it was. Each write is a compare-and-swap on
 * the document's mod_revision (a node written meanwhile is left for the API's next write).
 * *sealed (may be NULL) receives the number of documents rewritten. Returns 0, or the store's
 * error (FP_EIO, FP_ECLOSED, ...) or FP_ETOOBIG for a password over SECRET_MAX_PLAIN bytes,
 * with the node's name (never the password) in err. */
int api_seal_stored_passwords(struct store *s, const struct secret_key *k, size_t *sealed,
			      char *err, size_t errlen);

#endif
