/* bmc_ipmi.c - the "ipmi" BMC driver over libfreeipmi (see bmc_ipmi.h, docs/driver-ipmi.md).
 *
 * The instance keeps a list of sessions, one per BMC address + user. A call takes its session
 * (creating the entry if needed), holds the session's lock for the whole call (calls to one BMC
 * run one at a time; calls to different BMCs run in parallel), and before every IPMI command
 * makes sure the session is open and able to give up before the call's deadline.
 *
 * Timeouts. FreeIPMI fixes a session's timeouts when it opens it: it resends a request after
 * rt, rt, 2rt, 2rt, 3rt, 3rt, ... ms (IPMI_LAN_BACKOFF_COUNT 2 in libfreeipmi's
 * ipmi-lan-session-common.c) and gives up at the first resend point more than st ms after the
 * last packet it received (seen against a SIGSTOPped ipmi_sim: st 2000/rt 250 -> 2.25 s,
 * st 5000/rt 500 -> 6.0 s). session_fit() picks st and rt from the time left so that this give-up
 * point falls before the deadline; a session is reused only while its give-up point still fits
 * in the time the call has left, else it is closed and reopened with shorter timeouts (a Close
 * Session to a dead BMC costs one rt: FreeIPMI does not resend it).
 *
 * Idle limit. FreeIPMI itself treats a session as dead once nothing has been received on it for
 * st (the next command fails at once: seen with st 1000 after 2 s idle), and BMCs end sessions
 * after their inactivity timeout (IPMI 2.0 section 6.12.15: 60 s +/- 3 s by default, shorter on
 * some BMCs). A session idle for more than min(st / 2, 30 s) is therefore reopened before use:
 * st / 2 leaves the next command at least half its timeout, and 30 s stays well inside the
 * spec's default inactivity timeout. Entries idle for more than a minute are closed and dropped
 * at the start of later calls, so open sockets stay bounded by the BMCs used in the last minute.
 *
 * Passwords live only in the session entry (wiped on free) and in FreeIPMI's context; no error
 * text is built from them. */
#include "driver/bmc_ipmi.h"
#include "driver/bmc_ipmi_parse.h"

#include <freeipmi/freeipmi.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/timefmt.h"

#define IPMI_DEFAULT_PORT 623
#define IPMI_DEFAULT_CIPHER 3
#define CALL_DEFAULT_MS 30000        /* a call without a deadline (deadline 0) */
#define CALL_MIN_MS 200              /* less than this left: do not start an exchange */
#define DEADLINE_GUARD_MS 100        /* give up this long before the deadline */
#define SESSION_TIMEOUT_MAX_MS 20000 /* FreeIPMI's own default session timeout */
#define RETRANSMIT_MIN_MS 100
#define RETRANSMIT_MAX_MS 1000 /* FreeIPMI's default retransmission timeout */
#define IDLE_MAX_MS 30000
#define SWEEP_IDLE_MS 60000
#define ADDRESS_MAX 255
#define USERNAME_MAX IPMI_MAX_USER_NAME_LENGTH    /* 16: IPMI 2.0 section 13.31 */
#define PASSWORD_MAX IPMI_2_0_MAX_PASSWORD_LENGTH /* 20: IPMI 2.0 section 13.31 */
#define SEL_MAX_ENTRIES 4096                      /* most entries one sel_read returns */
#define SEL_WALK_MAX 65535 /* record ids are 16 bits; 0xffff ends the chain */
#define SEL_RECORD_LEN IPMI_SEL_RECORD_LEN

struct ipmi_sess {
	char *address; /* as given: host or host:port */
	char *username;
	char *password; /* secret: wiped on free */
	int cipher;
	unsigned want_flags;   /* workaround flags the caller's quirks asked for */
	unsigned flags;        /* workaround flags the session was opened with */
	unsigned learned;      /* BMC_QUIRK_* found necessary when it was opened */
	ipmi_ctx_t ctx;        /* NULL: closed */
	unsigned st_ms, rt_ms; /* session / retransmission timeouts it was opened with */
	int64_t last_used;     /* clock ms of the last answer */
	int users;             /* calls holding or waiting for mu (under the driver's mu) */
	pthread_mutex_t mu;    /* serialises calls to this BMC */
	struct ipmi_sess *next;
};

struct ipmi_drv {
	pthread_mutex_t mu; /* the list and the counters */
	struct ipmi_sess *sessions;
	struct bmc_ipmi_stats stats;
};

/* One call in progress. */
struct call {
	struct bmc *b;
	struct ipmi_drv *d;
	struct ipmi_sess *s;
	const struct bmc_target *t;
	int64_t deadline;
	char *err;
	size_t errlen;
};

static struct ipmi_drv *drv_of(struct bmc *b)
{
	return b->impl;
}

/* ---- quirks and timeouts ---- */

static const struct {
	unsigned quirk, flag;
} quirk_flags[] = {
	{BMC_QUIRK_IPMI_OPEN_SESSION_PRIVILEGE,
	 IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_OPEN_SESSION_PRIVILEGE},
	{BMC_QUIRK_IPMI_AUTHENTICATION_CAPABILITIES,
	 IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_AUTHENTICATION_CAPABILITIES},
	{BMC_QUIRK_IPMI_INTEL_2_0, IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_INTEL_2_0_SESSION},
	{BMC_QUIRK_IPMI_SUPERMICRO_2_0, IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_SUPERMICRO_2_0_SESSION},
	{BMC_QUIRK_IPMI_SUN_2_0, IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_SUN_2_0_SESSION},
	{BMC_QUIRK_IPMI_NON_EMPTY_INTEGRITY_CHECK_VALUE,
	 IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_NON_EMPTY_INTEGRITY_CHECK_VALUE},
	{BMC_QUIRK_IPMI_NO_CHECKSUM_CHECK, IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_NO_CHECKSUM_CHECK},
};

static unsigned flags_of_quirks(unsigned quirks)
{
	unsigned f = 0;
	for (size_t i = 0; i < sizeof(quirk_flags) / sizeof(quirk_flags[0]); i++)
		if (quirks & quirk_flags[i].quirk)
			f |= quirk_flags[i].flag;
	return f;
}

/* When FreeIPMI gives up on a command sent on a session opened with st/rt (see the top of the
 * file), in ms after the last packet received. */
static int64_t give_up_ms(unsigned st, unsigned rt)
{
	int64_t t = 0;
	for (unsigned k = 0;; k++) {
		t += (int64_t)rt * (k / 2 + 1);
		if (t > st)
			return t;
	}
}

/* Picks session/retransmission timeouts whose give-up point is at most left - guard ms away.
 * Returns 0, or -1 when left is too short for any exchange. */
static int session_fit(int64_t left, unsigned *st, unsigned *rt)
{
	if (left < CALL_MIN_MS)
		return -1;
	int64_t r = left / 10;
	r = r < RETRANSMIT_MIN_MS   ? RETRANSMIT_MIN_MS
	    : r > RETRANSMIT_MAX_MS ? RETRANSMIT_MAX_MS
				    : r;
	int64_t budget = left - DEADLINE_GUARD_MS;
	if (budget > SESSION_TIMEOUT_MAX_MS)
		budget = SESSION_TIMEOUT_MAX_MS;
	int64_t t = 0, best = 0;
	for (unsigned k = 0;; k++) {
		t += r * (k / 2 + 1);
		if (t > budget)
			break;
		best = t;
	}
	if (best <= r) /* FreeIPMI wants st > rt; give it at least one resend */
		return -1;
	*st = (unsigned)(best - 1);
	*rt = (unsigned)r;
	return 0;
}

static int64_t idle_limit_ms(const struct ipmi_sess *s)
{
	int64_t l = s->st_ms / 2;
	return l < IDLE_MAX_MS ? l : IDLE_MAX_MS;
}

/* ---- target checks (the same code at enroll/PUT through bmc_ipmi_ops.validate and at call
 * time through check_target) ---- */

/* The quirks this driver knows: every ipmi_* name in core/model.h. */
static unsigned ipmi_quirk_mask(void)
{
	unsigned m = 0;
	for (size_t i = 0; i < sizeof(quirk_flags) / sizeof(quirk_flags[0]); i++)
		m |= quirk_flags[i].quirk;
	return m;
}

/* "host" or "host:port": host letters, digits, '.', '-', '_' (a DNS name or IPv4 address);
 * port 1-65535. FreeIPMI takes the same string (it resolves the host with getaddrinfo for
 * AF_INET only, so IPv6 is refused here with a clear message). A byte that is not printable
 * ASCII is named as 0x%02x, never copied into err (half a UTF-8 character would make the text
 * invalid). */
static int check_address(const char *a, char *err, size_t errlen)
{
	if (!a || !a[0])
		return fp_errf(
			FP_EINVAL, err, errlen,
			"spec.bmc.address: required for the ipmi driver (host or host:port)");
	size_t n = strnlen(a, ADDRESS_MAX + 1);
	if (n > ADDRESS_MAX)
		return fp_errf(FP_EINVAL, err, errlen,
			       "spec.bmc.address: longer than %d characters", ADDRESS_MAX);
	if (strchr(a, '@'))
		return fp_errf(FP_EINVAL, err, errlen,
			       "spec.bmc.address: user info ('@') is not allowed; use "
			       "spec.bmc.username and spec.bmc.password");
	if (strstr(a, "://"))
		return fp_errf(FP_EINVAL, err, errlen,
			       "spec.bmc.address: a URL is not an IPMI address; want host or "
			       "host:port (URLs are for the redfish driver)");
	const char *colon = strchr(a, ':');
	if (a[0] == '[' || (colon && strchr(colon + 1, ':')))
		return fp_errf(FP_EINVAL, err, errlen,
			       "spec.bmc.address: IPv6 addresses are not supported by the ipmi "
			       "driver; want an IPv4 address or DNS name, optionally with :port");
	size_t hostlen = colon ? (size_t)(colon - a) : n;
	if (hostlen == 0)
		return fp_errf(FP_EINVAL, err, errlen, "spec.bmc.address: no host before ':'");
	for (size_t i = 0; i < hostlen; i++) {
		unsigned char c = (unsigned char)a[i];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '.' || c == '-' || c == '_')
			continue;
		if (c == ' ' || c < 0x20 || c >= 0x7f)
			return fp_errf(
				FP_EINVAL, err, errlen,
				"spec.bmc.address: byte 0x%02x at offset %zu is not allowed in "
				"a host name or IPv4 address",
				c, i);
		return fp_errf(FP_EINVAL, err, errlen,
			       "spec.bmc.address: character '%c' at offset %zu is not allowed in a "
			       "host name or IPv4 address",
			       c, i);
	}
	if (colon) {
		const char *p = colon + 1;
		long port = 0;
		if (!*p)
			return fp_errf(FP_EINVAL, err, errlen,
				       "spec.bmc.address: no port after ':'");
		for (; *p; p++) {
			if (*p < '0' || *p > '9' || port > 65535)
				return fp_errf(
					FP_EINVAL, err, errlen,
					"spec.bmc.address: the port must be a number 1-65535");
			port = port * 10 + (*p - '0');
		}
		if (port < 1 || port > 65535)
			return fp_errf(FP_EINVAL, err, errlen,
				       "spec.bmc.address: the port must be a number 1-65535");
	}
	return 0;
}

/* The credentials and options of one spec, wherever they come from. */
struct ipmi_spec {
	const char *address, *username, *password;
	int cipher_suite; /* < 0: the default */
};

/* Checks s; on error *field names the spec.bmc field. User names: at most 16 ASCII bytes
 * (IPMI 2.0 section 13.20 RAKP Message 1 "User Name Length" 0-16; section 22.28 Set User Name:
 * "16 bytes maximum", ASCII), printable. Passwords: at most 20 bytes (IPMI 2.0 section 13.31:
 * K_UID, the key a password is, is 20 bytes for RAKP-HMAC-SHA1; section 22.30 Set User
 * Password: 16- or 20-byte passwords), no control character; the message never shows the
 * password or any of its bytes. */
static int check_spec(const struct ipmi_spec *s, const char **field, int *cipher, char *err,
		      size_t errlen)
{
	*field = "spec.bmc.address";
	int rc = check_address(s->address, err, errlen);
	if (rc < 0)
		return rc;
	*field = "spec.bmc.username";
	if (!s->username || !s->username[0])
		return fp_errf(FP_EINVAL, err, errlen,
			       "spec.bmc.username: required for the ipmi driver (anonymous IPMI "
			       "logins are not supported)");
	{
		size_t n = strnlen(s->username, USERNAME_MAX + 1);
		if (n > USERNAME_MAX)
			return fp_errf(FP_EINVAL, err, errlen,
				       "spec.bmc.username: longer than %d bytes (IPMI 2.0 limit)",
				       USERNAME_MAX);
		for (size_t i = 0; i < n; i++) {
			unsigned char c = (unsigned char)s->username[i];
			if (c < 0x20 || c == 0x7f)
				return fp_errf(FP_EINVAL, err, errlen,
					       "spec.bmc.username: control character 0x%02x at "
					       "offset %zu",
					       c, i);
			if (c > 0x7f)
				return fp_errf(
					FP_EINVAL, err, errlen,
					"spec.bmc.username: byte 0x%02x at offset %zu is not "
					"ASCII (IPMI user names are ASCII)",
					c, i);
		}
	}
	*field = "spec.bmc.password";
	if (s->password) {
		size_t n = strnlen(s->password, PASSWORD_MAX + 1);
		if (n > PASSWORD_MAX)
			return fp_errf(FP_EINVAL, err, errlen,
				       "spec.bmc.password: longer than %d bytes (IPMI 2.0 limit)",
				       PASSWORD_MAX);
		for (size_t i = 0; i < n; i++) {
			unsigned char c = (unsigned char)s->password[i];
			if (c < 0x20 || c == 0x7f)
				return fp_errf(FP_EINVAL, err, errlen,
					       "spec.bmc.password: has a control character");
		}
	}
	*field = "spec.bmc.cipher_suite";
	*cipher = s->cipher_suite < 0 ? IPMI_DEFAULT_CIPHER : s->cipher_suite;
	if (*cipher > 255 || !IPMI_CIPHER_SUITE_ID_SUPPORTED(*cipher))
		return fp_errf(FP_EINVAL, err, errlen,
			       "spec.bmc.cipher_suite: %d is not one FreeIPMI supports "
			       "(0-3, 6-8, 11-12, 15-17; ipmi_sim offers only 3)",
			       s->cipher_suite);
	*field = NULL;
	return 0;
}

static int check_target(const struct bmc_target *t, int *cipher, char *err, size_t errlen)
{
	struct ipmi_spec s = {t->address, t->username, t->password, t->cipher_suite};
	const char *field;
	return check_spec(&s, &field, cipher, err, errlen);
}

/* bmc_driver_ops.validate: spec.bmc at enroll/PUT, through check_spec. */
static int ipmi_validate(const struct node_bmc *spec, const char **field, char *err, size_t errlen)
{
	struct ipmi_spec s = {spec->address, spec->username, spec->password, spec->cipher_suite};
	int cipher;
	int rc = check_spec(&s, field, &cipher, err, errlen);
	if (rc < 0)
		return rc;
	/* the password itself is resolved at call time (password_file, sealed text) */
	*field = "spec.bmc.password";
	if (!spec->password && !spec->password_file && !spec->password_sealed)
		return fp_errf(FP_EINVAL, err, errlen,
			       "spec.bmc.password: required for the ipmi driver (or "
			       "spec.bmc.password_file)");
	if (spec->password && !spec->password[0])
		return fp_errf(
			FP_EINVAL, err, errlen,
			"spec.bmc.password: empty (anonymous IPMI logins are not supported)");
	/* calls ignore quirks of other drivers; a spec that names one is a mistake */
	*field = "spec.bmc.quirks";
	unsigned other = spec->quirks & ~ipmi_quirk_mask();
	if (other) {
		const char *name = bmc_quirk_name(other & -other);
		return fp_errf(
			FP_EINVAL, err, errlen,
			"spec.bmc.quirks: \"%s\" is not an ipmi quirk (the ipmi driver takes "
			"only ipmi_* quirks)",
			name[0] ? name : "?");
	}
	/* Redfish-only settings: this driver would ignore them (and a ca_file would be looked
	 * for at every call), so a spec that sets one is a mistake */
	static const char redfish_only[] = "a redfish setting; the ipmi driver has none";
	*field = "spec.bmc.ca_file";
	if (spec->ca_file)
		return fp_errf(FP_EINVAL, err, errlen, "spec.bmc.ca_file: %s", redfish_only);
	*field = "spec.bmc.tls_verify";
	if (!spec->tls_verify)
		return fp_errf(FP_EINVAL, err, errlen, "spec.bmc.tls_verify: %s (IPMI is not TLS)",
			       redfish_only);
	*field = "spec.bmc.system";
	if (spec->system)
		return fp_errf(FP_EINVAL, err, errlen, "spec.bmc.system: %s", redfish_only);
	*field = NULL;
	return 0;
}

/* ---- sessions ---- */

static void session_close(struct ipmi_drv *d, struct ipmi_sess *s)
{
	if (!s->ctx)
		return;
	ipmi_ctx_close(s->ctx); /* Close Session (IPMI 2.0 section 22.19); not resent */
	ipmi_ctx_destroy(s->ctx);
	s->ctx = NULL;
	pthread_mutex_lock(&d->mu);
	d->stats.sessions_open--;
	pthread_mutex_unlock(&d->mu);
}

static void session_free(struct ipmi_sess *s)
{
	free(s->address);
	free(s->username);
	fp_free_secret(s->password);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

/* Drops entries nobody uses that have been idle for over a minute (d->mu held). Their sessions
 * are past FreeIPMI's own timeout (st <= 20 s), so closing them sends nothing that waits. */
static void sweep_locked(struct ipmi_drv *d, int64_t now)
{
	struct ipmi_sess **pp = &d->sessions;
	while (*pp) {
		struct ipmi_sess *s = *pp;
		if (s->users == 0 && now - s->last_used > SWEEP_IDLE_MS) {
			*pp = s->next;
			if (s->ctx) {
				ipmi_ctx_destroy(s->ctx);
				d->stats.sessions_open--;
			}
			session_free(s);
			continue;
		}
		pp = &s->next;
	}
}

static int call_begin(struct bmc *b, const struct bmc_target *t, int64_t deadline, struct call *c,
		      char *err, size_t errlen)
{
	int cipher;
	int rc = check_target(t, &cipher, err, errlen);
	if (rc < 0)
		return rc;
	struct ipmi_drv *d = drv_of(b);
	const char *user = t->username ? t->username : "";
	pthread_mutex_lock(&d->mu);
	sweep_locked(d, clock_now_ms(b->clock));
	struct ipmi_sess *s = d->sessions;
	while (s && !(strcmp(s->address, t->address) == 0 && strcmp(s->username, user) == 0))
		s = s->next;
	if (!s) {
		s = xcalloc(1, sizeof(*s));
		s->address = xstrdup(t->address);
		s->username = xstrdup(user);
		s->password = xstrdup("");
		s->last_used = clock_now_ms(b->clock);
		pthread_mutex_init(&s->mu, NULL);
		s->next = d->sessions;
		d->sessions = s;
	}
	s->users++;
	pthread_mutex_unlock(&d->mu);
	pthread_mutex_lock(&s->mu);
	*c = (struct call){b, d, s, t, deadline, err, errlen};
	return 0;
}

static void call_end(struct call *c)
{
	pthread_mutex_unlock(&c->s->mu);
	pthread_mutex_lock(&c->d->mu);
	c->s->users--;
	pthread_mutex_unlock(&c->d->mu);
}

static int64_t time_left(struct call *c)
{
	if (!c->deadline)
		return CALL_DEFAULT_MS;
	return c->deadline - clock_now_ms(c->b->clock);
}

/* Maps a failed open or command to an fp_err with a message naming `what`. rs (may be NULL)
 * holds the completion code of a command the BMC answered. Never mentions the password. */
static int ipmi_failed(struct call *c, ipmi_ctx_t ctx, const char *what, fiid_obj_t rs)
{
	int e = ipmi_ctx_errnum(ctx);
	const char *addr = c->s->address;
	switch (e) {
	case IPMI_ERR_USERNAME_INVALID:
	case IPMI_ERR_PASSWORD_INVALID:
	case IPMI_ERR_K_G_INVALID:
	case IPMI_ERR_AUTHENTICATION_TYPE_UNAVAILABLE:
		return fp_errf(FP_EAUTH, c->err, c->errlen,
			       "BMC %s refused the user name or password for user \"%s\" (%s)",
			       addr, c->s->username, ipmi_ctx_strerror(e));
	case IPMI_ERR_PRIVILEGE_LEVEL_INSUFFICIENT:
	case IPMI_ERR_PRIVILEGE_LEVEL_CANNOT_BE_OBTAINED:
		return fp_errf(
			FP_EAUTH, c->err, c->errlen,
			"BMC %s: user \"%s\" cannot get the ADMINISTRATOR privilege %s needs (%s)",
			addr, c->s->username, what, ipmi_ctx_strerror(e));
	case IPMI_ERR_CONNECTION_TIMEOUT:
	case IPMI_ERR_SESSION_TIMEOUT:
	case IPMI_ERR_MESSAGE_TIMEOUT:
	case IPMI_ERR_DRIVER_TIMEOUT:
	case IPMI_ERR_PASSWORD_VERIFICATION_TIMEOUT:
		return fp_errf(FP_ETIMEDOUT, c->err, c->errlen,
			       "BMC %s did not answer %s in time (%s)", addr, what,
			       ipmi_ctx_strerror(e));
	case IPMI_ERR_HOSTNAME_INVALID:
		return fp_errf(FP_EIO, c->err, c->errlen,
			       "BMC address %s: the host name cannot be resolved", addr);
	case IPMI_ERR_CIPHER_SUITE_ID_UNAVAILABLE:
		return fp_errf(FP_EINVAL, c->err, c->errlen,
			       "BMC %s does not offer cipher suite %d (spec.bmc.cipher_suite)",
			       addr, c->s->cipher);
	case IPMI_ERR_BMC_BUSY:
		return fp_errf(FP_EAGAIN, c->err, c->errlen, "BMC %s is busy: %s (%s)", addr, what,
			       ipmi_ctx_strerror(e));
	case IPMI_ERR_BAD_COMPLETION_CODE:
	case IPMI_ERR_COMMAND_INVALID_OR_UNSUPPORTED: {
		uint64_t cc = 0;
		char text[IPMI_ERR_STR_MAX_LEN];
		if (rs && FIID_OBJ_GET(rs, "comp_code", &cc) == 1 &&
		    ipmi_completion_code_strerror_cmd_r(rs, IPMI_NET_FN_APP_RS, text,
							sizeof(text)) == 0)
			; /* text set */
		else
			snprintf(text, sizeof(text), "%s", ipmi_ctx_strerror(e));
		return fp_errf(FP_EBMC, c->err, c->errlen,
			       "BMC %s refused %s: completion code 0x%02" PRIx64 " (%s)", addr,
			       what, cc, text);
	}
	case IPMI_ERR_BAD_RMCPPLUS_STATUS_CODE:
	case IPMI_ERR_IPMI_2_0_UNAVAILABLE:
	case IPMI_ERR_IPMI_ERROR:
		return fp_errf(FP_EBMC, c->err, c->errlen, "BMC %s: %s failed (%s)", addr, what,
			       ipmi_ctx_strerror(e));
	case IPMI_ERR_PARAMETERS:
		return fp_errf(FP_EINVAL, c->err, c->errlen, "BMC %s: %s: bad parameters (%s)",
			       addr, what, ipmi_ctx_strerror(e));
	default:
		return fp_errf(FP_EIO, c->err, c->errlen, "BMC %s: %s failed (%s)", addr, what,
			       ipmi_ctx_strerror(e));
	}
}

static int open_once(struct call *c, int cipher, unsigned flags, ipmi_ctx_t *out)
{
	int64_t left = time_left(c);
	unsigned st, rt;
	if (session_fit(left, &st, &rt) < 0)
		return fp_errf(
			FP_ETIMEDOUT, c->err, c->errlen,
			"BMC %s: %lld ms left before the deadline, too little to open a session",
			c->s->address, (long long)(left > 0 ? left : 0));
	ipmi_ctx_t ctx = ipmi_ctx_create();
	if (!ctx)
		return fp_errf(FP_ENOMEM, c->err, c->errlen, "ipmi_ctx_create failed");
	const struct bmc_target *t = c->t;
	if (ipmi_ctx_open_outofband_2_0(ctx, t->address, c->s->username,
					t->password ? t->password : "", NULL, 0,
					IPMI_PRIVILEGE_LEVEL_ADMIN, (uint8_t)cipher, st, rt, flags,
					IPMI_FLAGS_DEFAULT) < 0) {
		*out = ctx; /* the caller reads errnum, then destroys it */
		return -1;
	}
	c->s->st_ms = st;
	c->s->rt_ms = rt;
	*out = ctx;
	return 0;
}

/* Makes sure c's session is open, for these credentials, not idle too long, and able to give up
 * before the deadline; opens it (learning the open-session-privilege quirk) if not. */
static int session_ready(struct call *c)
{
	struct ipmi_sess *s = c->s;
	const struct bmc_target *t = c->t;
	int cipher = t->cipher_suite < 0 ? IPMI_DEFAULT_CIPHER : t->cipher_suite;
	unsigned want = flags_of_quirks(t->quirks);
	const char *pw = t->password ? t->password : "";
	int64_t left = time_left(c);
	if (left <= 0)
		return fp_errf(FP_ETIMEDOUT, c->err, c->errlen,
			       "deadline passed before the command");
	if (s->ctx) {
		int64_t now = clock_now_ms(c->b->clock);
		if (strcmp(s->password, pw) == 0 && s->cipher == cipher && s->want_flags == want &&
		    now - s->last_used <= idle_limit_ms(s) &&
		    give_up_ms(s->st_ms, s->rt_ms) <= left)
			goto ready;
		session_close(c->d, s);
	}
	ipmi_ctx_t ctx = NULL;
	unsigned flags = want, learned = 0;
	s->cipher = cipher;
	int rc = open_once(c, cipher, flags, &ctx);
	if (rc == -1 && ipmi_ctx_errnum(ctx) == IPMI_ERR_PRIVILEGE_LEVEL_CANNOT_BE_OBTAINED &&
	    !(flags & IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_OPEN_SESSION_PRIVILEGE)) {
		/* What ipmi_sim and many real BMCs need: they answer the RMCP+ Open Session
		 * Request with maximum privilege 0 (hardware-peers.md, "FreeIPMI tools"). */
		ipmi_ctx_destroy(ctx);
		ctx = NULL;
		flags |= IPMI_WORKAROUND_FLAGS_OUTOFBAND_2_0_OPEN_SESSION_PRIVILEGE;
		learned = BMC_QUIRK_IPMI_OPEN_SESSION_PRIVILEGE;
		rc = open_once(c, cipher, flags, &ctx);
	}
	if (rc == -1) {
		rc = ipmi_failed(c, ctx, "open session", NULL);
		ipmi_ctx_destroy(ctx);
		return rc;
	}
	if (rc < 0)
		return rc;
	s->ctx = ctx;
	s->want_flags = want;
	s->flags = flags;
	s->learned = learned;
	if (strcmp(s->password, pw) != 0) {
		fp_free_secret(s->password);
		s->password = xstrdup(pw);
	}
	s->last_used = clock_now_ms(c->b->clock);
	pthread_mutex_lock(&c->d->mu);
	c->d->stats.sessions_opened++;
	c->d->stats.sessions_open++;
	pthread_mutex_unlock(&c->d->mu);
ready:
	if (t->observed)
		t->observed->learned_quirks |= s->learned & ~t->quirks;
	pthread_mutex_lock(&c->d->mu);
	c->d->stats.commands++;
	pthread_mutex_unlock(&c->d->mu);
	return 0;
}

/* After a command: 0 and the session marked used, or the mapped error. A command the BMC
 * answered with a completion code leaves the session open; anything else closes it. */
static int cmd_done(struct call *c, int r, const char *what, fiid_obj_t rs)
{
	if (r >= 0) {
		c->s->last_used = clock_now_ms(c->b->clock);
		return 0;
	}
	int e = ipmi_ctx_errnum(c->s->ctx);
	int rc = ipmi_failed(c, c->s->ctx, what, rs);
	if (e == IPMI_ERR_BAD_COMPLETION_CODE || e == IPMI_ERR_COMMAND_INVALID_OR_UNSUPPORTED ||
	    e == IPMI_ERR_BMC_BUSY)
		c->s->last_used = clock_now_ms(c->b->clock);
	else
		session_close(c->d, c->s);
	return rc;
}

static int get_u(fiid_obj_t o, const char *field, uint64_t *v)
{
	*v = 0;
	return FIID_OBJ_GET(o, field, v) == 1 ? 0 : -1;
}

static fiid_obj_t obj_new(fiid_template_t tmpl)
{
	fiid_obj_t o = fiid_obj_create(tmpl);
	if (!o)
		abort(); /* only on OOM, like xmalloc */
	return o;
}

static int bad_answer(struct call *c, const char *what, const char *field)
{
	return fp_errf(FP_EBMC, c->err, c->errlen, "BMC %s: %s answer has no %s", c->s->address,
		       what, field);
}

/* ---- power (IPMI 2.0 sections 28.2 Get Chassis Status, 28.3 Chassis Control) ---- */

static int chassis_status_raw(struct call *c, fiid_obj_t rs)
{
	int rc = session_ready(c);
	if (rc < 0)
		return rc;
	return cmd_done(c, ipmi_cmd_get_chassis_status(c->s->ctx, rs), "Get Chassis Status", rs);
}

static int ipmi_power_get(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			  enum bmc_power *out, char *err, size_t errlen)
{
	struct call c;
	int rc = call_begin(b, t, deadline, &c, err, errlen);
	if (rc < 0)
		return rc;
	fiid_obj_t rs = obj_new(tmpl_cmd_get_chassis_status_rs);
	rc = chassis_status_raw(&c, rs);
	uint64_t on;
	if (rc == 0 && get_u(rs, "current_power_state.power_is_on", &on) < 0) {
		if (t->observed)
			snprintf(t->observed->power_reason, sizeof(t->observed->power_reason),
				 "PowerStateMissing");
		rc = bad_answer(&c, "Get Chassis Status", "power state");
	}
	if (rc == 0)
		*out = on ? BMC_POWER_ON : BMC_POWER_OFF;
	fiid_obj_destroy(rs);
	call_end(&c);
	return rc;
}

static int ipmi_power_set(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			  enum bmc_power_action a, char *err, size_t errlen)
{
	uint8_t code;
	switch (a) {
	case BMC_ACTION_ON: code = IPMI_CHASSIS_CONTROL_POWER_UP; break;
	case BMC_ACTION_OFF: code = IPMI_CHASSIS_CONTROL_POWER_DOWN; break;
	case BMC_ACTION_CYCLE: code = IPMI_CHASSIS_CONTROL_POWER_CYCLE; break;
	case BMC_ACTION_RESET: code = IPMI_CHASSIS_CONTROL_HARD_RESET; break;
	case BMC_ACTION_SOFT: code = IPMI_CHASSIS_CONTROL_INITIATE_SOFT_SHUTDOWN; break;
	default: return fp_errf(FP_EINVAL, err, errlen, "unknown power action %d", (int)a);
	}
	struct call c;
	int rc = call_begin(b, t, deadline, &c, err, errlen);
	if (rc < 0)
		return rc;
	fiid_obj_t rs = obj_new(tmpl_cmd_chassis_control_rs);
	char what[48];
	snprintf(what, sizeof(what), "Chassis Control (%s)", bmc_action_name(a));
	rc = session_ready(&c);
	if (rc == 0) {
		if (t->observed) /* from here on, no answer does not mean nothing was done */
			t->observed->maybe_acted = 1;
		rc = cmd_done(&c, ipmi_cmd_chassis_control(c.s->ctx, code, rs), what, rs);
	}
	fiid_obj_destroy(rs);
	call_end(&c);
	return rc;
}

/* ---- boot flags (IPMI 2.0 section 28.13, System Boot Options parameter 5) ---- */

static int boot_flags_read(struct call *c, fiid_obj_t rs)
{
	int rc = session_ready(c);
	if (rc < 0)
		return rc;
	return cmd_done(c,
			ipmi_cmd_get_system_boot_options_boot_flags(
				c->s->ctx, IPMI_SYSTEM_BOOT_OPTIONS_NO_SET_SELECTOR,
				IPMI_SYSTEM_BOOT_OPTIONS_NO_BLOCK_SELECTOR, rs),
			"Get System Boot Options (boot flags)", rs);
}

static int ipmi_boot_get(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			 struct bmc_boot *out, char *err, size_t errlen)
{
	struct call c;
	int rc = call_begin(b, t, deadline, &c, err, errlen);
	if (rc < 0)
		return rc;
	fiid_obj_t rs = obj_new(tmpl_cmd_get_system_boot_options_boot_flags_rs);
	rc = boot_flags_read(&c, rs);
	uint64_t dev, valid, persist, type;
	if (rc == 0 &&
	    (get_u(rs, "boot_device", &dev) < 0 || get_u(rs, "boot_flags_valid", &valid) < 0 ||
	     get_u(rs, "boot_flags_persistent", &persist) < 0 ||
	     get_u(rs, "bios_boot_type", &type) < 0))
		rc = bad_answer(&c, "Get System Boot Options", "boot flags");
	if (rc == 0) {
		/* The device selector is reported even with the valid bit clear: ipmi_sim keeps
		 * only the device and always reads back "invalid, next boot, legacy"; persistent
		 * and UEFI are believed only with the valid bit set (docs/driver-ipmi.md). */
		out->device =
			dev == IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_BOOT_DEVICE_FORCE_PXE
				? BMC_BOOT_PXE
			: dev == IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_BOOT_DEVICE_FORCE_HARD_DRIVE
				? BMC_BOOT_DISK
				: BMC_BOOT_UNKNOWN;
		out->persistent = valid && persist;
		out->mode = !valid ? BMC_BOOT_MODE_UNKNOWN
			    : type == IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_BOOT_TYPE_EFI
				    ? BMC_BOOT_MODE_UEFI
				    : BMC_BOOT_MODE_LEGACY;
	}
	fiid_obj_destroy(rs);
	call_end(&c);
	return rc;
}

static int ipmi_boot_set(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			 const struct bmc_boot *want, char *err, size_t errlen)
{
	uint8_t dev;
	if (want->device == BMC_BOOT_PXE)
		dev = IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_BOOT_DEVICE_FORCE_PXE;
	else if (want->device == BMC_BOOT_DISK)
		dev = IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_BOOT_DEVICE_FORCE_HARD_DRIVE;
	else
		return fp_errf(FP_EINVAL, err, errlen, "boot device to set is unknown");
	struct call c;
	int rc = call_begin(b, t, deadline, &c, err, errlen);
	if (rc < 0)
		return rc;
	fiid_obj_t rs = NULL;
	uint8_t type = IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_BOOT_TYPE_PC_COMPATIBLE;
	if (want->mode == BMC_BOOT_MODE_UEFI) {
		type = IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_BOOT_TYPE_EFI;
	} else if (want->mode == BMC_BOOT_MODE_UNKNOWN) {
		/* leave the firmware mode as it is: read it first */
		rs = obj_new(tmpl_cmd_get_system_boot_options_boot_flags_rs);
		rc = boot_flags_read(&c, rs);
		uint64_t v = 0;
		if (rc == 0 && get_u(rs, "bios_boot_type", &v) == 0 &&
		    v == IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_BOOT_TYPE_EFI)
			type = IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_BOOT_TYPE_EFI;
		fiid_obj_destroy(rs);
		rs = NULL;
	}
	if (rc == 0)
		rc = session_ready(&c);
	if (rc == 0) {
		rs = obj_new(tmpl_cmd_set_system_boot_options_rs);
		int r = ipmi_cmd_set_system_boot_options_boot_flags(
			c.s->ctx, IPMI_SYSTEM_BOOT_OPTIONS_PARAMETER_VALID_UNLOCKED, type,
			want->persistent ? IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_VALID_PERSISTENTLY
					 : IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_VALID_FOR_NEXT_BOOT,
			IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_VALID, 0, 0, dev, 0, 0,
			IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_CONSOLE_REDIRECTION_DEFAULT, 0, 0, 0,
			IPMI_SYSTEM_BOOT_OPTION_BOOT_FLAG_FIRMWARE_BIOS_VERBOSITY_DEFAULT, 0, 0, 0,
			0, rs);
		rc = cmd_done(&c, r, "Set System Boot Options (boot flags)", rs);
		fiid_obj_destroy(rs);
	}
	call_end(&c);
	return rc;
}

/* ---- chassis status JSON ---- */

static const char *restore_policy_name(uint64_t p)
{
	/* IPMI 2.0 section 28.2, byte 1 bits 6:5 */
	return p == 0 ? "AlwaysOff" : p == 1 ? "Previous" : p == 2 ? "AlwaysOn" : "Unknown";
}

static int ipmi_chassis_status(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			       json_t **out, char *err, size_t errlen)
{
	struct call c;
	int rc = call_begin(b, t, deadline, &c, err, errlen);
	if (rc < 0)
		return rc;
	fiid_obj_t rs = obj_new(tmpl_cmd_get_chassis_status_rs);
	rc = chassis_status_raw(&c, rs);
	uint64_t on, fault, overload, interlock, ctl_fault, policy, intrusion, drive, fan;
	if (rc == 0 && (get_u(rs, "current_power_state.power_is_on", &on) < 0 ||
			get_u(rs, "current_power_state.power_fault", &fault) < 0 ||
			get_u(rs, "current_power_state.power_overload", &overload) < 0 ||
			get_u(rs, "current_power_state.interlock", &interlock) < 0 ||
			get_u(rs, "current_power_state.power_control_fault", &ctl_fault) < 0 ||
			get_u(rs, "current_power_state.power_restore_policy", &policy) < 0 ||
			get_u(rs, "misc_chassis_state.chassis_intrusion_active", &intrusion) < 0 ||
			get_u(rs, "misc_chassis_state.drive_fault", &drive) < 0 ||
			get_u(rs, "misc_chassis_state.cooling_fan_fault_detected", &fan) < 0))
		rc = bad_answer(&c, "Get Chassis Status", "power or chassis state");
	if (rc == 0) {
		const char *health = (fault || overload || ctl_fault)           ? "Critical"
				     : (drive || fan || intrusion || interlock) ? "Warning"
										: "OK";
		*out = json_pack("{s:s, s:b, s:b, s:b, s:b, s:s, s:b, s:b, s:b, s:s}", "power",
				 on ? "on" : "off", "powerFault", (int)fault, "powerOverload",
				 (int)overload, "powerInterlock", (int)interlock,
				 "powerControlFault", (int)ctl_fault, "powerRestorePolicy",
				 restore_policy_name(policy), "intrusion", (int)intrusion,
				 "driveFault", (int)drive, "coolingFault", (int)fan, "health",
				 health);
		if (!*out)
			abort();
	}
	fiid_obj_destroy(rs);
	call_end(&c);
	return rc;
}

/* ---- inventory (IPMI 2.0 section 20.1, Get Device ID) ---- */

static int ipmi_inventory(struct bmc *b, const struct bmc_target *t, int64_t deadline, json_t **out,
			  char *err, size_t errlen)
{
	struct call c;
	int rc = call_begin(b, t, deadline, &c, err, errlen);
	if (rc < 0)
		return rc;
	fiid_obj_t rs = obj_new(tmpl_cmd_get_device_id_rs);
	rc = session_ready(&c);
	if (rc == 0)
		rc = cmd_done(&c, ipmi_cmd_get_device_id(c.s->ctx, rs), "Get Device ID", rs);
	uint64_t dev_id, mfg, product, major, minor, vmaj, vmin;
	if (rc == 0 &&
	    (get_u(rs, "device_id", &dev_id) < 0 || get_u(rs, "manufacturer_id.id", &mfg) < 0 ||
	     get_u(rs, "product_id", &product) < 0 ||
	     get_u(rs, "firmware_revision1.major_revision", &major) < 0 ||
	     get_u(rs, "firmware_revision2.minor_revision", &minor) < 0 ||
	     get_u(rs, "ipmi_version_major", &vmaj) < 0 ||
	     get_u(rs, "ipmi_version_minor", &vmin) < 0))
		rc = bad_answer(&c, "Get Device ID", "device fields");
	if (rc == 0) {
		/* Get Device ID names the BMC, not the host: the manufacturer is an IANA
		 * enterprise number (FreeIPMI's table gives the name), the product an id with no
		 * name; the minor firmware revision is BCD. IPMI cannot list GPUs: no "gpus". */
		char mname[128], prod[16], fw[16], ver[16];
		if (IPMI_IANA_ENTERPRISE_ID_RECOGNIZED(mfg) && ipmi_iana_enterprise_numbers[mfg])
			snprintf(mname, sizeof(mname), "%s", ipmi_iana_enterprise_numbers[mfg]);
		else
			snprintf(mname, sizeof(mname), "IANA %" PRIu64, mfg);
		snprintf(prod, sizeof(prod), "0x%04" PRIx64, product);
		snprintf(fw, sizeof(fw), "%" PRIu64 ".%02" PRIx64, major, minor);
		snprintf(ver, sizeof(ver), "%" PRIu64 ".%" PRIu64, vmaj, vmin);
		*out = json_pack("{s:{s:s, s:I, s:s, s:I, s:s, s:I, s:s}}", "system",
				 "manufacturer", mname, "manufacturerId", (json_int_t)mfg,
				 "product", prod, "productId", (json_int_t)product, "firmware", fw,
				 "deviceId", (json_int_t)dev_id, "ipmiVersion", ver);
		if (!*out)
			abort();
	}
	fiid_obj_destroy(rs);
	call_end(&c);
	return rc;
}

/* ---- SEL (IPMI 2.0 sections 31.2 Get SEL Info, 31.5 Get SEL Entry, 32 record formats) ---- */

static const char *event_class_name(uint8_t type_code)
{
	switch (ipmi_event_reading_type_code_class(type_code)) {
	case IPMI_EVENT_READING_TYPE_CODE_CLASS_THRESHOLD: return "threshold";
	case IPMI_EVENT_READING_TYPE_CODE_CLASS_GENERIC_DISCRETE: return "generic-discrete";
	case IPMI_EVENT_READING_TYPE_CODE_CLASS_SENSOR_SPECIFIC_DISCRETE: return "sensor-specific";
	case IPMI_EVENT_READING_TYPE_CODE_CLASS_OEM: return "oem";
	default: return "unknown";
	}
}

/* One 16-byte SEL record as the JSON entry bmc.h describes (bmc_ipmi_parse.h). */
json_t *ipmi_sel_entry_json(ipmi_sel_ctx_t sc, const uint8_t *rec)
{
	char raw[2 * SEL_RECORD_LEN + 1];
	for (int i = 0; i < SEL_RECORD_LEN; i++)
		snprintf(raw + 2 * i, 3, "%02x", rec[i]);
	uint16_t id = (uint16_t)(rec[0] | rec[1] << 8);
	uint8_t rtype = rec[2];
	json_t *e = json_pack("{s:I}", "id", (json_int_t)id);
	uint32_t ts = 0;
	json_t *jts = json_null();
	if (ipmi_sel_record_type_class(rtype) !=
		    IPMI_SEL_RECORD_TYPE_CLASS_NON_TIMESTAMPED_OEM_RECORD &&
	    ipmi_sel_parse_read_timestamp(sc, rec, SEL_RECORD_LEN, &ts) == 0 && ts > 0x20000000u &&
	    ts != 0xffffffffu) {
		/* 0x00000000-0x20000000: seconds since BMC start, not a date (section 37.1) */
		char buf[FP_TIME_LEN];
		fp_time_format((int64_t)ts * 1000, buf);
		json_decref(jts);
		jts = json_string(buf);
	}
	json_object_set_new(e, "timestamp", jts);
	char msg[256] = "";
	if (ipmi_sel_record_type_class(rtype) == IPMI_SEL_RECORD_TYPE_CLASS_SYSTEM_EVENT_RECORD) {
		uint8_t stype = 0, snum = 0, etype = 0;
		ipmi_sel_parse_read_sensor_type(sc, rec, SEL_RECORD_LEN, &stype);
		ipmi_sel_parse_read_sensor_number(sc, rec, SEL_RECORD_LEN, &snum);
		ipmi_sel_parse_read_event_type_code(sc, rec, SEL_RECORD_LEN, &etype);
		const char *sname = ipmi_get_sensor_type_string(stype);
		json_object_set_new(e, "sensorType", json_string(sname ? sname : "Unknown"));
		json_object_set_new(e, "sensorNumber", json_integer(snum));
		json_object_set_new(e, "eventType", json_string(event_class_name(etype)));
		if (ipmi_sel_parse_read_record_string(
			    sc, "%E", rec, SEL_RECORD_LEN, msg, sizeof(msg) - 1,
			    IPMI_SEL_STRING_FLAGS_IGNORE_UNAVAILABLE_FIELD) < 0)
			msg[0] = '\0';
		msg[sizeof(msg) - 1] = '\0';
		uint8_t dir = 0;
		ipmi_sel_parse_read_event_direction(sc, rec, SEL_RECORD_LEN, &dir);
		char full[320];
		snprintf(full, sizeof(full), "%s #%u: %s%s", sname ? sname : "Unknown", snum,
			 msg[0] ? msg : "event",
			 dir == 1 ? " (deasserted)" : "" /* event dir bit: 1 = deassertion */);
		json_object_set_new(e, "message", json_string(full));
	} else {
		json_object_set_new(e, "sensorType", json_string("OEM"));
		snprintf(msg, sizeof(msg), "OEM record type 0x%02x", rtype);
		json_object_set_new(e, "message", json_string(msg));
	}
	json_object_set_new(e, "raw", json_string(raw));
	return e;
}

static int ipmi_sel_read(struct bmc *b, const struct bmc_target *t, int64_t deadline,
			 size_t max_entries, json_t **out, char *err, size_t errlen)
{
	if (max_entries > SEL_MAX_ENTRIES)
		max_entries = SEL_MAX_ENTRIES;
	struct call c;
	int rc = call_begin(b, t, deadline, &c, err, errlen);
	if (rc < 0)
		return rc;
	uint8_t(*ring)[SEL_RECORD_LEN] = max_entries ? xcalloc(max_entries, SEL_RECORD_LEN) : NULL;
	size_t nring = 0, head = 0; /* head: the oldest kept entry when the ring is full */
	fiid_obj_t info = obj_new(tmpl_cmd_get_sel_info_rs);
	fiid_obj_t rs = obj_new(tmpl_cmd_get_sel_entry_rs);
	uint64_t entries = 0;
	rc = session_ready(&c);
	if (rc == 0)
		rc = cmd_done(&c, ipmi_cmd_get_sel_info(c.s->ctx, info), "Get SEL Info", info);
	if (rc == 0 && get_u(info, "entries", &entries) < 0)
		rc = bad_answer(&c, "Get SEL Info", "entry count");
	uint16_t rid = IPMI_SEL_GET_RECORD_ID_FIRST_ENTRY;
	for (uint64_t walked = 0; rc == 0 && entries && walked < SEL_WALK_MAX; walked++) {
		rc = session_ready(&c);
		if (rc < 0)
			break;
		fiid_obj_clear(rs);
		int r = ipmi_cmd_get_sel_entry(c.s->ctx, 0, rid, 0,
					       IPMI_SEL_READ_ENTIRE_RECORD_BYTES_TO_READ, rs);
		if (r < 0 &&
		    ipmi_check_completion_code(
			    rs, IPMI_COMP_CODE_REQUESTED_SENSOR_DATA_OR_RECORD_NOT_PRESENT) == 1) {
			c.s->last_used = clock_now_ms(b->clock);
			break; /* cleared between Get SEL Info and here */
		}
		char what[40];
		snprintf(what, sizeof(what), "Get SEL Entry 0x%04x", rid);
		rc = cmd_done(&c, r, what, rs);
		if (rc < 0)
			break;
		uint64_t next;
		uint8_t rec[SEL_RECORD_LEN];
		if (get_u(rs, "next_record_id", &next) < 0 ||
		    fiid_obj_get_data(rs, "record_data", rec, sizeof(rec)) != SEL_RECORD_LEN) {
			rc = bad_answer(&c, what, "16-byte record");
			break;
		}
		if (max_entries) {
			if (nring < max_entries) {
				memcpy(ring[nring++], rec, SEL_RECORD_LEN);
			} else {
				memcpy(ring[head], rec, SEL_RECORD_LEN);
				head = (head + 1) % max_entries;
			}
		}
		if (next == IPMI_SEL_GET_RECORD_ID_LAST_ENTRY || next == rid)
			break;
		rid = (uint16_t)next;
	}
	if (rc == 0) {
		ipmi_sel_ctx_t sc = ipmi_sel_ctx_create(c.s->ctx, NULL);
		if (!sc)
			abort();
		json_t *arr = json_array();
		for (size_t i = 0; i < nring; i++)
			json_array_append_new(arr,
					      ipmi_sel_entry_json(sc,
								  ring[(head + i) % max_entries]));
		ipmi_sel_ctx_destroy(sc);
		*out = arr;
	}
	fiid_obj_destroy(rs);
	fiid_obj_destroy(info);
	free(ring);
	call_end(&c);
	return rc;
}

/* ---- instance ---- */

static void ipmi_free(struct bmc *b)
{
	struct ipmi_drv *d = drv_of(b);
	struct ipmi_sess *s = d->sessions;
	while (s) {
		struct ipmi_sess *next = s->next;
		if (s->ctx) {
			ipmi_ctx_close(
				s->ctx); /* Close Session; at most one rt if the BMC is gone */
			ipmi_ctx_destroy(s->ctx);
		}
		session_free(s);
		s = next;
	}
	pthread_mutex_destroy(&d->mu);
	free(d);
	free(b);
}

const struct bmc_driver_ops bmc_ipmi_ops = {
	.name = "ipmi",
	.caps = BMC_CAP_POWER | BMC_CAP_BOOT_DEVICE | BMC_CAP_INVENTORY | BMC_CAP_SEL,
	.power_get = ipmi_power_get,
	.power_set = ipmi_power_set,
	.boot_get = ipmi_boot_get,
	.boot_set = ipmi_boot_set,
	.inventory = ipmi_inventory,
	.chassis_status = ipmi_chassis_status,
	.sel_read = ipmi_sel_read,
	.firmware_update = NULL,
	.validate = ipmi_validate,
	.free = ipmi_free,
};

struct bmc *bmc_ipmi_new(struct fp_clock *clock)
{
	struct bmc *b = xcalloc(1, sizeof(*b));
	struct ipmi_drv *d = xcalloc(1, sizeof(*d));
	pthread_mutex_init(&d->mu, NULL);
	b->ops = &bmc_ipmi_ops;
	b->clock = clock;
	b->impl = d;
	return b;
}

void bmc_ipmi_stats(struct bmc *b, struct bmc_ipmi_stats *out)
{
	struct ipmi_drv *d = drv_of(b);
	pthread_mutex_lock(&d->mu);
	*out = d->stats;
	pthread_mutex_unlock(&d->mu);
}
