/* mhd_errors.c - problem+json for the errors libmicrohttpd answers by itself (issue 16 item 7).
 *
 * libmicrohttpd 0.9.75 answers some requests before any callback of ours runs: a bad request
 * line, HTTP/0.9, a malformed or negative Content-Length, a bad chunk, a missing Host (400), a
 * request line or headers over the connection's memory (414, 431), an HTTP version it does not
 * speak (505). It sends fixed HTML bodies without a Content-Type (connection.c,
 * transmit_error_response_len) and offers no option to change them. Clients of fleetplane, and
 * the API's own promise (docs/api.md "Errors"), expect every error as an RFC 9457 problem.
 *
 * So this file defines MHD_queue_response and MHD_create_response_from_buffer in the program:
 * the dynamic linker binds libmicrohttpd's own calls to them through its PLT (the library is
 * not linked -Bsymbolic: `objdump -R libmicrohttpd.so.12` lists JUMP_SLOT relocations for
 * both), as a program's malloc replaces libc's. Each forwards to the library's function
 * (dlsym RTLD_NEXT). MHD_create_response_from_buffer only notes, per thread, the response it
 * made of one of libmicrohttpd's static HTML messages (persistent memory starting
 * "<html><head><title>", as every message of connection.c does). MHD_queue_response replaces
 * that very response, when it is queued with a status of 400 or more and has no Content-Type,
 * with a problem document of the same status whose detail is the message's text. Everything
 * else passes through unchanged: the API's responses, the boot service's (a 416 with its
 * Content-Range). A libmicrohttpd built without messages sends its empty bodies as before. */
#include <dlfcn.h>
#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api/reply.h"
#include "base/jsonx.h"
#include "base/banned.h"

typedef enum MHD_Result (*queue_fn)(struct MHD_Connection *, unsigned int, struct MHD_Response *);
typedef struct MHD_Response *(*create_fn)(size_t, void *, enum MHD_ResponseMemoryMode);

static pthread_once_t real_once = PTHREAD_ONCE_INIT;
static queue_fn real_queue;
static create_fn real_create;

/* The last response made on this thread from one of libmicrohttpd's static HTML messages,
 * and that message. Only that response is replaced: every other one (ours, the boot
 * service's 416 with its Content-Range) passes untouched. */
static _Thread_local const struct MHD_Response *mhd_error_resp;
static _Thread_local const char *mhd_message;
static _Thread_local size_t mhd_message_len;

static void real_init(void)
{
	real_queue = (queue_fn)dlsym(RTLD_NEXT, "MHD_queue_response");
	real_create = (create_fn)dlsym(RTLD_NEXT, "MHD_create_response_from_buffer");
}

#define MHD_HTML_PREFIX "<html><head><title>"

struct MHD_Response *MHD_create_response_from_buffer(size_t size, void *buffer,
						     enum MHD_ResponseMemoryMode mode)
{
	pthread_once(&real_once, real_init);
	if (!real_create)
		abort(); /* the library the program is linked with has no such function */
	int mhd = mode == MHD_RESPMEM_PERSISTENT && buffer && size >= strlen(MHD_HTML_PREFIX) &&
		  memcmp(buffer, MHD_HTML_PREFIX, strlen(MHD_HTML_PREFIX)) == 0;
	struct MHD_Response *resp = real_create(size, buffer, mode);
	mhd_error_resp = mhd ? resp : NULL;
	mhd_message = mhd ? buffer : NULL;
	mhd_message_len = mhd ? size : 0;
	return resp;
}

/* The text of an HTML message: what is between <body> and </body>, tags dropped, &quot; as ".
 * Writes at most outlen - 1 bytes to out; "" when there is no body. */
static void html_text(const char *html, size_t len, char *out, size_t outlen)
{
	size_t o = 0;
	const char *end = html + len;
	const char *p = html;
	for (const char *q = html; q + 6 <= end; q++)
		if (memcmp(q, "<body>", 6) == 0) {
			p = q + 6;
			break;
		}
	int in_tag = 0;
	for (; p < end && o + 1 < outlen; p++) {
		if (end - p >= 7 && memcmp(p, "</body>", 7) == 0)
			break;
		if (*p == '<')
			in_tag = 1;
		else if (*p == '>')
			in_tag = 0;
		else if (in_tag)
			continue;
		else if (end - p >= 6 && memcmp(p, "&quot;", 6) == 0) {
			out[o++] = '"';
			p += 5;
		} else
			out[o++] = *p;
	}
	out[o] = 0;
}

static const char *status_detail(unsigned status)
{
	switch (status) {
	case 400:
		return "the request is not valid HTTP/1.1 (request line, header, Content-Length, "
		       "chunked encoding or Host)";
	case 413: return "the request is larger than the server takes";
	case 414: return "the request line is longer than the server takes (16 KiB with headers)";
	case 431: return "the request headers are larger than the server takes (16 KiB)";
	case 505: return "HTTP version not supported: use HTTP/1.1 or HTTP/1.0";
	default: return "the server could not process the request";
	}
}

enum MHD_Result MHD_queue_response(struct MHD_Connection *connection, unsigned int status_code,
				   struct MHD_Response *response)
{
	pthread_once(&real_once, real_init);
	if (!real_queue || !real_create)
		abort();
	if (status_code < 400 || !response || response != mhd_error_resp ||
	    MHD_get_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE))
		return real_queue(connection, status_code, response);
	char detail[512];
	html_text(mhd_message, mhd_message_len, detail, sizeof(detail));
	mhd_error_resp = NULL;
	mhd_message = NULL;
	json_t *doc = api_problem_doc((int)status_code,
				      detail[0] ? detail : status_detail(status_code), NULL);
	char *body = jsonx_dumps(doc);
	json_decref(doc);
	size_t len = strlen(body);
	struct MHD_Response *p = real_create(len, body, MHD_RESPMEM_MUST_FREE);
	if (!p) {
		free(body);
		return real_queue(connection, status_code, response);
	}
	MHD_add_response_header(p, MHD_HTTP_HEADER_CONTENT_TYPE, "application/problem+json");
	MHD_add_response_header(p, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	enum MHD_Result ret = real_queue(connection, status_code, p);
	MHD_destroy_response(p);
	if (ret == MHD_YES)
		return ret;
	return real_queue(connection, status_code, response);
}
