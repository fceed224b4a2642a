/* ui.c - serves the fleet page's static assets (see ui.h). The bytes come from
 * $(BUILD)/gen/ui_assets.h, which the Makefile generates from web/ with scripts/embed.c. */
#include "api/ui.h"

#include <microhttpd.h>
#include <stddef.h>
#include <string.h>

#include "api/api_int.h"
#include "api/reply.h"
#include "base/banned.h"

struct ui_asset {
	const char *name;  /* file name under /ui/ */
	const char *ctype; /* Content-Type */
	const unsigned char *data;
	size_t len;
	const char *etag; /* quoted strong entity-tag */
};

#include "ui_assets.h"

/* Only this origin's script, style, images and API calls; no inline script or style, no
 * plugins, no framing, no form posts, no <base>. */
#define UI_CSP                                                                      \
	"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " \
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

static const struct ui_asset *ui_find(const char *name)
{
	for (size_t i = 0; i < UI_NASSETS; i++)
		if (strcmp(ui_assets[i].name, name) == 0)
			return &ui_assets[i];
	return NULL;
}

/* 1 when an If-None-Match list (RFC 9110 section 13.1.2: "*" or entity-tags separated by
 * commas, weak ones compared weakly) names etag. */
static int etag_matches(const char *inm, const char *etag)
{
	size_t el = strlen(etag);
	const char *p = inm;
	while (*p) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (*p == '*')
			return 1;
		if (p[0] == 'W' && p[1] == '/')
			p += 2;
		if (strncmp(p, etag, el) == 0 &&
		    (p[el] == 0 || p[el] == ',' || p[el] == ' ' || p[el] == '\t'))
			return 1;
		p = strchr(p, ',');
		if (!p)
			break;
	}
	return 0;
}

void api_ui_asset(struct api_req *r)
{
	const char *name = r->params[0] ? r->params[0] : "index.html";
	const struct ui_asset *a = ui_find(name);
	if (!a) {
		api_problem(r, 404, "no asset %s in the fleet page", name);
		return;
	}
	const char *inm = api_header(r, MHD_HTTP_HEADER_IF_NONE_MATCH);
	if (inm && etag_matches(inm, a->etag))
		api_reply_raw(r, 304, a->ctype, "", 0);
	else
		api_reply_raw(r, 200, a->ctype, (const char *)a->data, a->len);
	api_add_header(r, MHD_HTTP_HEADER_ETAG, a->etag);
	api_add_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	api_add_header(r, "Content-Security-Policy", UI_CSP);
	api_add_header(r, "X-Content-Type-Options", "nosniff");
	api_add_header(r, "Referrer-Policy", "no-referrer");
}

void api_ui_slash(struct api_req *r)
{
	api_reply_raw(r, 301, "text/plain; charset=utf-8", "/ui/\n", 5);
	api_add_header(r, MHD_HTTP_HEADER_LOCATION, "/ui/");
}

void api_ui_root(struct api_req *r)
{
	const char *accept = api_header(r, MHD_HTTP_HEADER_ACCEPT);
	if (!accept || !strstr(accept, "text/html")) {
		api_problem(r, 404, "no route for %.16s %.64s", r->method, r->path);
		return;
	}
	api_reply_raw(r, 302, "text/plain; charset=utf-8", "/ui/\n", 5);
	api_add_header(r, MHD_HTTP_HEADER_LOCATION, "/ui/");
}
