/* alloc.h - allocation helpers that abort on failure (git xmalloc, Redis zmalloc), and
 * overflow-checked growth. Secrets are wiped with fp_free_secret. */
#ifndef FP_BASE_ALLOC_H
#define FP_BASE_ALLOC_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
/* xreallocarray: realloc for nmemb*size with overflow check; aborts on overflow or OOM. */
void *xreallocarray(void *p, size_t nmemb, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* xasprintf returns a newly allocated formatted string; the caller frees it. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* fp_free_secret wipes strlen(s) bytes with explicit_bzero, then frees. NULL is a no-op. */
void fp_free_secret(char *s);

/* ALLOC_GROW(arr, need, alloc): make arr hold at least `need` elements (git ALLOC_GROW). */
#define ALLOC_GROW(arr, need, alloc)                                                 \
	do {                                                                         \
		if ((need) > (alloc)) {                                              \
			size_t alloc_grow_n_ = (alloc) < 8 ? 8 : (alloc)*2;          \
			if (alloc_grow_n_ < (need))                                  \
				alloc_grow_n_ = (need);                              \
			(arr) = xreallocarray((arr), alloc_grow_n_, sizeof(*(arr))); \
			(alloc) = alloc_grow_n_;                                     \
		}                                                                    \
	} while (0)

#endif
