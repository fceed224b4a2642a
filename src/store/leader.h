/* leader.h - leader election on an etcd lease (DESIGN.md "Store"; docs/etcd.md). Several
 * `fleetplane serve` processes share one etcd store; one leads: it holds the key <ns>:leader,
 * attached to a lease it renews, and only it runs controllers and executes operations. Every
 * write of a fenced store carries a compare on that key's create_revision, so a deposed
 * leader's late writes fail in etcd, and a leader that could not renew within the renewal
 * deadline (below the TTL, so before etcd can expire the lease) refuses writes locally and is
 * told it lost. The others are standbys: they poll the key, learn who leads, and campaign when
 * it is gone. */
#ifndef FP_STORE_LEADER_H
#define FP_STORE_LEADER_H

#include <stddef.h>

struct store;
struct leader;

struct leader_config {
	const char *id; /* what the leader key holds: this serve's API URL (standbys answer
			  * it); borrowed for leader_new, 1..255 printable bytes */
	int ttl_s;      /* lease TTL in seconds, 2..60 (etcd's minimum is 2 with its default
			  * election timeout); renewals every ttl/4, deadline ttl - 0.6 s */
	/* Called once, from the election thread or a writing thread, when leadership is lost
	 * (lease expired or not renewed in time, key gone, a write refused for the fence); why is a
	 * human sentence. Writes of the fenced stores are refused (FP_EAGAIN) from then on. */
	void (*lost)(void *arg, const char *why);
	void *arg;
};

/* Starts campaigning on s (an etcd store: FP_EUNSUPPORTED otherwise; borrowed, must outlive
 * the leader) on a thread of its own. *out: free with leader_free. FP_EINVAL for a bad
 * config. Also registers the metrics fleetplane_leader_is_leader and fleetplane_leader{leader}. */
int leader_new(struct store *s, const struct leader_config *cfg, struct leader **out, char *err,
	       size_t errlen);

/* Blocks until this process leads (0) or timeout_ms passes (FP_ETIMEDOUT). */
int leader_wait(struct leader *l, int timeout_ms);

/* 1 while this process leads. */
int leader_is_leader(struct leader *l);

/* The current leader's id (its API URL) into buf, "" when none is known. */
void leader_holder(struct leader *l, char *buf, size_t len);

/* Fences the etcd store s (another instance opened by the same process) with the current
 * leadership: its writes then carry the compare and the renewal deadline. Returns 0,
 * FP_EUNSUPPORTED (not etcd) or FP_EAGAIN (not leading). At most 4 stores. */
int leader_fence(struct leader *l, struct store *s);

/* Stops the thread; a leader revokes its lease so a standby takes over at once: call it after
 * the fenced stores' writers stopped (they may be closed by then; they are not touched). NULL is
 * a no-op. */
void leader_free(struct leader *l);

#endif
