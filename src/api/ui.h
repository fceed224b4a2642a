/* ui.h - the fleet page (ui.c): the handlers that serve its static assets, compiled into the
 * binary from web/ (scripts/embed.c), under /ui/. Routed by server.c; not for use outside
 * src/api/. The page itself is a client of the API (docs/operations.md, "The fleet page"). */
#ifndef FP_API_UI_H
#define FP_API_UI_H

struct api_req;

/* GET /ui/ (index.html) and GET /ui/{name}: the asset with its Content-Type, a strong ETag
 * (304 for a matching If-None-Match), Cache-Control no-cache (revalidate: the names are not
 * versioned), a Content-Security-Policy that allows only this origin's script, style and
 * fetch (no inline script), X-Content-Type-Options nosniff and Referrer-Policy no-referrer.
 * An unknown name is a 404 problem. No token needed: the page holds no data; every API call it
 * makes carries the token the user pastes. Runs on the poll thread (no store access). */
void api_ui_asset(struct api_req *r);
/* GET /ui: 301 to /ui/ (relative asset URLs resolve under /ui/). */
void api_ui_slash(struct api_req *r);
/* GET /: 302 to /ui/ for a browser (Accept names text/html); anything else gets the 404
 * problem every unrouted path gets, as before the page existed, so API clients see no change. */
void api_ui_root(struct api_req *r);

#endif
