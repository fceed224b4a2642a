/* memtrim.h - giving freed heap back to the kernel after bursts (issue 17 item 6). glibc's
 * malloc keeps memory freed in the middle of its heaps and arenas for reuse; after a burst (a
 * list of thousands of documents, a bulk enroll) serve's RSS stays at the burst's peak.
 * malloc_trim(3) returns the free pages (madvise MADV_DONTNEED) of every arena. It walks all of
 * them under their locks, so it is not run on a hot path: callers note how much a burst freed
 * (memtrim_note, cheap, any thread) and one housekeeping thread calls memtrim_run, which trims
 * once MEMTRIM_THRESHOLD bytes were noted and at most once per MEMTRIM_MIN_GAP_MS. */
#ifndef FP_BASE_MEMTRIM_H
#define FP_BASE_MEMTRIM_H

#include <stddef.h>
#include <stdint.h>

#define MEMTRIM_THRESHOLD (16u << 20) /* bytes freed by bursts before a trim is worth it */
#define MEMTRIM_MIN_GAP_MS 1000

/* Notes that about `bytes` of heap were just freed by a burst. Thread-safe, lock-free. */
void memtrim_note(size_t bytes);

/* Trims when due (see above); now_ms is a monotonic clock in ms. Returns 1 when it trimmed.
 * Thread-safe; meant for one housekeeping thread. */
int memtrim_run(int64_t now_ms);

#endif
