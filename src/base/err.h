/* err.h - fleetplane's one error space.
 *
 * Every function that can fail returns 0 or a negative enum fp_err. The list is an X-macro so
 * the name, the human message and the HTTP status stay together (libuv UV_ERRNO_MAP, curl
 * CURLcode). Detail for humans goes into a caller-owned buffer passed last. */
#ifndef FP_BASE_ERR_H
#define FP_BASE_ERR_H

#include <stddef.h>

/* X(name, value, http status, message) */
#define FP_ERR_MAP(X)                                          \
	X(FP_OK, 0, 200, "ok")                                 \
	X(FP_EINVAL, -1, 400, "invalid argument")              \
	X(FP_ENOTFOUND, -2, 404, "not found")                  \
	X(FP_EEXIST, -3, 409, "already exists")                \
	X(FP_ECONFLICT, -4, 409, "conflict: resource changed") \
	X(FP_EUNSUPPORTED, -5, 501, "not supported")           \
	X(FP_ETIMEDOUT, -6, 504, "timed out")                  \
	X(FP_EIO, -7, 500, "i/o error")                        \
	X(FP_ENOMEM, -8, 500, "out of memory")                 \
	X(FP_EPERM, -9, 403, "permission denied")              \
	X(FP_EAUTH, -10, 401, "authentication required")       \
	X(FP_EBUSY, -11, 409, "busy")                          \
	X(FP_ETOOBIG, -12, 413, "too large")                   \
	X(FP_ECOMPACTED, -13, 410, "revision compacted")       \
	X(FP_ESTATE, -14, 409, "invalid state transition")     \
	X(FP_EBMC, -15, 502, "BMC error")                      \
	X(FP_ECLOSED, -16, 503, "closed")                      \
	X(FP_EAGAIN, -17, 503, "try again")                    \
	X(FP_EPARSE, -18, 400, "parse error")                  \
	X(FP_ENOSPC, -19, 507, "out of storage space")

enum fp_err {
#define FP_ERR_ENUM(name, val, http, msg) name = val,
	FP_ERR_MAP(FP_ERR_ENUM)
#undef FP_ERR_ENUM
};

/* fp_err_name returns the symbolic name ("FP_ENOTFOUND") of rc, or "FP_UNKNOWN". Static string. */
const char *fp_err_name(int rc);
/* fp_err_msg returns a short human message for rc. Static string, never NULL. */
const char *fp_err_msg(int rc);
/* fp_err_http returns the HTTP status code the API answers for rc (RFC 9110 section 15). */
int fp_err_http(int rc);

/* fp_errf writes a formatted message into a caller-owned buffer (may be NULL/0) and returns rc,
 * so callers can write `return fp_errf(FP_EINVAL, err, errlen, "bad name %s", n);`. */
int fp_errf(int rc, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* BUG_ON aborts with file:line when an impossible state is reached; always compiled in. */
void fp_bug(const char *file, int line, const char *cond) __attribute__((noreturn));
#define BUG_ON(cond)                                       \
	do {                                               \
		if (cond)                                  \
			fp_bug(__FILE__, __LINE__, #cond); \
	} while (0)

#endif
