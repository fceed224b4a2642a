/* check.h - typed assertions over cmocka for the unit tests: a failure prints the expressions
 * and both values by name, so a failed phase reads "n->phase == PHASE_AVAILABLE: validating !=
 * available", an HTTP status "status == 201: 409 Conflict != 201 Created" and a store result
 * "rc == 0: FP_ECONFLICT (-4) != 0 (OK)" instead of cmocka's "0x4 != 0x5" (libuv's
 * test/task.h ASSERT_EQ is the model). Include it after <cmocka.h>, and after core/model.h for
 * ASSERT_EQ_PHASE (each macro needs only the layer whose names it prints).
 *
 *   ASSERT_EQ_INT(a, b)    integers (as long long)
 *   ASSERT_EQ_STR(a, b)    C strings; NULL equals only NULL and prints as (null)
 *   ASSERT_EQ_ERR(a, b)    fp_err codes (base/err.h), printed with fp_err_name
 *   ASSERT_OK(rc)          ASSERT_EQ_ERR(rc, 0)
 *   ASSERT_EQ_HTTP(a, b)   HTTP status codes with their RFC 9110 reason phrases
 *   ASSERT_EQ_PHASE(a, b)  node phases (core/model.h), printed with node_phase_name */
#ifndef FP_TESTS_CHECK_H
#define FP_TESTS_CHECK_H

#include <stdio.h>
#include <string.h>

#include "base/err.h"

#define CHECK_FAIL_(...)                   \
	do {                               \
		print_error(__VA_ARGS__);  \
		_fail(__FILE__, __LINE__); \
	} while (0)

#define ASSERT_EQ_INT(a, b)                                                                  \
	do {                                                                                 \
		long long check_a_ = (long long)(a), check_b_ = (long long)(b);              \
		if (check_a_ != check_b_)                                                    \
			CHECK_FAIL_("%s == %s: %lld != %lld\n", #a, #b, check_a_, check_b_); \
	} while (0)

#define ASSERT_EQ_STR(a, b)                                                 \
	do {                                                                \
		const char *check_a_ = (a), *check_b_ = (b);                \
		if ((check_a_ == NULL) != (check_b_ == NULL) ||             \
		    (check_a_ && strcmp(check_a_, check_b_) != 0))          \
			CHECK_FAIL_("%s == %s: \"%s\" != \"%s\"\n", #a, #b, \
				    check_a_ ? check_a_ : "(null)",         \
				    check_b_ ? check_b_ : "(null)");        \
	} while (0)

static inline const char *check_err_name_(int rc)
{
	return rc == 0 ? "OK" : fp_err_name(rc);
}

#define ASSERT_EQ_ERR(a, b)                                                   \
	do {                                                                  \
		int check_a_ = (int)(a), check_b_ = (int)(b);                 \
		if (check_a_ != check_b_)                                     \
			CHECK_FAIL_("%s == %s: %s (%d) != %s (%d)\n", #a, #b, \
				    check_err_name_(check_a_), check_a_,      \
				    check_err_name_(check_b_), check_b_);     \
	} while (0)

#define ASSERT_OK(rc) ASSERT_EQ_ERR(rc, 0)

/* RFC 9110 section 15 reason phrases of the statuses the API answers. */
static inline const char *check_http_reason_(int status)
{
	switch (status) {
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 204: return "No Content";
	case 304: return "Not Modified";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 406: return "Not Acceptable";
	case 409: return "Conflict";
	case 410: return "Gone";
	case 412: return "Precondition Failed";
	case 413: return "Content Too Large";
	case 415: return "Unsupported Media Type";
	case 422: return "Unprocessable Content";
	case 428: return "Precondition Required";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "?";
	}
}

#define ASSERT_EQ_HTTP(a, b)                                                        \
	do {                                                                        \
		int check_a_ = (int)(a), check_b_ = (int)(b);                       \
		if (check_a_ != check_b_)                                           \
			CHECK_FAIL_("%s == %s: %d %s != %d %s\n", #a, #b, check_a_, \
				    check_http_reason_(check_a_), check_b_,         \
				    check_http_reason_(check_b_));                  \
	} while (0)

#ifdef FP_CORE_MODEL_H
#define ASSERT_EQ_PHASE(a, b)                                                                  \
	do {                                                                                   \
		enum node_phase check_a_ = (a), check_b_ = (b);                                \
		if (check_a_ != check_b_)                                                      \
			CHECK_FAIL_("%s == %s: %s != %s\n", #a, #b, node_phase_name(check_a_), \
				    node_phase_name(check_b_));                                \
	} while (0)
#endif

#endif
