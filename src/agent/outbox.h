/* agent/outbox.h - the node agent's bounded on-disk buffer of reports (issue 4: "when the API is
 * down the agent buffers in its --state-dir (bounded) and loses nothing").
 *
 * Layout under the state dir:
 *   outbox/<seq>.json      one report body each, <seq> 20 decimal digits (so names sort in
 *                          send order); written as outbox/<seq>.json.tmp, fsync'd, renamed, and the
 *                          directory fsync'd (rename(2) is atomic; the directory fsync makes the
 *                          name durable, fsync(2) / POSIX.1-2008 rationale), so a crash leaves
 *                          either no file or a whole one;
 *   rejected/<seq>.json    a report the API refused for good (a 4xx other than 409/429), and
 *   rejected/<seq>.answer  the API's answer, for a human: never retried, never silently lost.
 * Leftover .tmp files (a crash mid-write) are removed at open.
 *
 * The bound is in events (the reports' "events" arrays), not files: outbox_full says when the
 * caller must stop reading input. Not thread-safe: the agent's one loop owns it. */
#ifndef FP_AGENT_OUTBOX_H
#define FP_AGENT_OUTBOX_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

#define OUTBOX_MAX_REPORT ((size_t)1 << 20) /* largest report file read back, bytes */

struct outbox_entry {
	uint64_t seq;
	size_t nevents;
};

struct outbox {
	char *dir;                    /* <state>/outbox, owned */
	char *rejected_dir;           /* <state>/rejected, owned */
	uint64_t next_seq;            /* one past the highest seq seen or written */
	size_t max_events;            /* the bound (--max-buffer) */
	size_t nevents;               /* events in pending files */
	struct outbox_entry *pending; /* oldest first, owned */
	size_t npending, alloc;
};

/* Opens (creating with mode 0700 what is missing) <state_dir>/outbox and <state_dir>/rejected,
 * removes leftover .tmp files and indexes the pending <seq>.json files, counting each one's
 * events. A pending file that is not a JSON object with an "events" array (damaged by hand) is
 * moved to rejected/ with an .answer saying why, not sent. max_events 1 .. 10,000,000.
 * Returns 0, FP_EINVAL (bad bound), or FP_EIO naming the path and strerror in err. */
int outbox_open(struct outbox *ob, const char *state_dir, size_t max_events, char *err,
		size_t errlen);
void outbox_close(struct outbox *ob);

/* 1 when the pending files hold max_events events or more (the caller stops reading input). */
int outbox_full(const struct outbox *ob);

/* Durably writes one report body (len bytes) holding nevents events as the newest pending file.
 * The bound is the caller's to respect (outbox_full); a put is never refused for it, so a
 * report already built is never dropped. Returns 0 and *seq, or FP_EIO (err names the path). */
int outbox_put(struct outbox *ob, const char *body, size_t len, size_t nevents, uint64_t *seq,
	       char *err, size_t errlen);

/* Reads the oldest pending report into body (reset first; at most OUTBOX_MAX_REPORT bytes).
 * Returns 0 with *seq, FP_ENOTFOUND when none is pending, or FP_EIO. */
int outbox_peek(struct outbox *ob, uint64_t *seq, struct buf *body, char *err, size_t errlen);

/* Removes pending report seq after the API accepted it (unlink + directory fsync). Returns 0,
 * FP_ENOTFOUND when seq is not pending, or FP_EIO. */
int outbox_remove(struct outbox *ob, uint64_t seq, char *err, size_t errlen);

/* Moves pending report seq to rejected/ and writes rejected/<seq>.answer with "HTTP <status>\n"
 * and answer (borrowed text, may be NULL). Returns 0, FP_ENOTFOUND or FP_EIO. */
int outbox_reject(struct outbox *ob, uint64_t seq, long status, const char *answer, char *err,
		  size_t errlen);

/* Writes data (len bytes) to path durably: path.tmp in the same directory, fsync, rename,
 * directory fsync. Used for the outbox and the agent's cursor file. Returns 0 or FP_EIO. */
int outbox_write_durable(const char *path, const void *data, size_t len, char *err, size_t errlen);

#endif
