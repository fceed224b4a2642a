/* watch.h - watch streams (watch.c): the hub that parks idle watch connections, and the
 * handler half of a ?watch=1 request. server.c owns the hub's life (start, stop, free around
 * the daemon); resource handlers call api_watch. Uses api/reply.h, never server.c. Not for use
 * outside src/api/. */
#ifndef FP_API_WATCH_H
#define FP_API_WATCH_H

#include <stddef.h>

#include "api/reply.h"

struct api_server;
struct api_req;

/* The watch hub: one thread fills the streams of idle (suspended) watch connections from the
 * store and resumes them; one thread turns store_wait into wake-ups. api_watch_hub_start: call
 * before the daemon starts; returns 0, or FP_EIO (err filled) when a thread cannot start.
 * Shut down in two phases around MHD_stop_daemon, because a poll thread may still be reading
 * a stream (and looking at the hub) until the daemon has stopped:
 *  1. api_watch_hub_stop, before MHD_stop_daemon (no connection may stay suspended then): parks
 *     nothing more, resumes every parked watch (each ends its stream when next read) and joins
 *     the hub's threads. The hub stays allocated; a second call does nothing.
 *  2. api_watch_hub_free, after MHD_stop_daemon has returned: stops it if 1. was not called,
 *     frees it and sets srv->hub to NULL. NULL srv->hub: both are no-ops. */
int api_watch_hub_start(struct api_server *srv, char *err, size_t errlen);
void api_watch_hub_stop(struct api_server *srv);
void api_watch_hub_free(struct api_server *srv);
/* Answers a ?watch=1 request: streams {"type","object"} lines for keys under prefix from
 * resourceVersion (query) on, or the current objects as ADDED first when it is absent/0. */
void api_watch(struct api_req *r, const char *prefix, const char *kind, api_keep_fn keep, void *arg,
	       api_render_fn render);
/* api_watch whose event objects text renders without a tree where it can (api_text_fn,
 * reply.h; the same bytes as render's): the node watch serves the stored text. Watches of
 * the Kubernetes API (their own object shapes) always use render. */
void api_watch_text(struct api_req *r, const char *prefix, const char *kind, api_keep_fn keep,
		    void *arg, api_render_fn render, api_text_fn text);

#endif
