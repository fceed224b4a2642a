/* memtrim.c - see memtrim.h. */
#include "base/memtrim.h"

#include <malloc.h>
#include <stdatomic.h>

#include "base/banned.h"

static atomic_size_t noted;
static _Atomic int64_t last_ms;

void memtrim_note(size_t bytes)
{
	atomic_fetch_add_explicit(&noted, bytes, memory_order_relaxed);
}

int memtrim_run(int64_t now_ms)
{
	if (atomic_load_explicit(&noted, memory_order_relaxed) < MEMTRIM_THRESHOLD)
		return 0;
	int64_t last = atomic_load(&last_ms);
	if (last && now_ms - last < MEMTRIM_MIN_GAP_MS)
		return 0;
	if (!atomic_compare_exchange_strong(&last_ms, &last, now_ms))
		return 0; /* another thread trims */
	atomic_store(&noted, 0);
	malloc_trim(0);
	return 1;
}
