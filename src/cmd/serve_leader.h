/* serve_leader.h - `serve --store etcd://...`: the standby phase and leadership of one serve
 * (docs/etcd.md). Before the fleet is built, serve_leader_begin opens an election store, answers
 * on the API address as a standby (serve_standby.h) and blocks until this serve is elected;
 * then the fleet's own store is fenced with the leadership as it opens (fleet_config
 * store_opened). On losing leadership the process logs why and re-executes itself: the new
 * image starts as a standby, and the next leader treats whatever was in flight as after a crash
 * (a BMC call with unknown outcome is never blindly repeated: the lifecycle's crash recovery). */
#ifndef FP_CMD_SERVE_LEADER_H
#define FP_CMD_SERVE_LEADER_H

struct serve_opts;
struct fleet_config;
struct serve_leader;

/* Returns NULL when the store is not etcd (nothing to do), else the leadership once held (the
 * fleet config's store hook set). Exits the process with 1 on a fatal error (bad URI). */
struct serve_leader *serve_leader_begin(const struct serve_opts *so, struct fleet_config *sv);
/* Marks the serve as stopping (after its stop signal): a lost leadership then ends quietly
 * instead of re-executing. NULL is a no-op. */
void serve_leader_stopping(struct serve_leader *sl);
/* Resigns (revokes the lease so a standby takes over at once) and frees. NULL is a no-op. Call
 * after the fleet is freed. */
void serve_leader_end(struct serve_leader *sl);

#endif
