/* agent/bootclient.h - the node side's HTTP calls to fleetplane's /boot routes (issue 11,
 * the boot contract "Agent HTTP calls"): JSON in, JSON out, over libcurl. These routes take no
 * bearer token: the per-attempt token T travels in the body or the query, so this is not the
 * CLI's client (cmd/client.h, which needs FLEETPLANE_TOKEN and /v1 paths). Answers are
 * bounded (BOOTCLIENT_MAX_BODY); the token is never printed by these functions. */
#ifndef FP_AGENT_BOOTCLIENT_H
#define FP_AGENT_BOOTCLIENT_H

#include <jansson.h>
#include <stddef.h>

#define BOOTCLIENT_MAX_BODY ((size_t)4 << 20)
#define BOOTCLIENT_CONNECT_TIMEOUT_MS 10000L
#define BOOTCLIENT_TIMEOUT_MS 60000L
#define BOOTCLIENT_TOKEN_MAX 128

struct bootclient {
	const char *server; /* base URL U, "http://10.77.0.1:7070", no trailing '/'; borrowed */
	long connect_timeout_ms, timeout_ms; /* 0: the defaults above */
};

/* Checks a server URL (http:// or https://, at most 2048 bytes, no control bytes or spaces)
 * and a token (contract: [A-Za-z0-9_-], 1 to 128 bytes). Return 0 or FP_EINVAL with why. */
int bootclient_url_check(const char *url, char *why, size_t whylen);
int bootclient_token_check(const char *token, char *why, size_t whylen);

/* Sends method ("GET", "POST") to server + path (path starts with '/' and carries its query,
 * escaped by the caller: see bootclient_escape), with body as compact JSON (Content-Type:
 * application/json) when non-NULL. Returns 0 when a server answered, whatever the status:
 * *status is the HTTP status and *out the parsed answer when it is JSON (new reference; NULL
 * otherwise or when empty). Returns FP_EIO when no server could be reached (refused,
 * unresolvable, connect timeout: the CLI's exit 3); FP_ETIMEDOUT, FP_EAGAIN (the exchange broke
 * after connecting), FP_ETOOBIG (over BOOTCLIENT_MAX_BODY) or FP_EPARSE (a 2xx answer that is
 * not JSON) for a server that answered badly; err says which. A non-2xx text answer comes back
 * as {"error": "<its first line>"}. */
int bootclient_request(const struct bootclient *c, const char *method, const char *path,
		       const json_t *body, long *status, json_t **out, char *err, size_t errlen);

/* POST /boot/inspect {"node","token","inventory"} (inventory borrowed). Returns 0 when the
 * answer is 200 {"accepted": true} (msg "accepted"), FP_EIO when the server cannot be reached,
 * FP_EINVAL for any other answer (msg: "POST /boot/inspect refused: HTTP 403: <error>"). */
int bootclient_inspect(const struct bootclient *c, const char *node, const char *token,
		       const json_t *inventory, char *msg, size_t msglen);

/* One line for a non-2xx answer: "HTTP 403: <error of {"error": ..}>" (200 bytes at most of
 * the server's text). */
void bootclient_describe(long status, const json_t *answer, char *out, size_t outlen);

/* Percent-escaped malloc'd copy of s for a query value (RFC 3986 unreserved kept). Never
 * NULL. */
char *bootclient_escape(const char *s);

#endif
