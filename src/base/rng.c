/* rng.c - xoshiro256** (Blackman & Vigna, https://prng.di.unimi.it/) seeded via splitmix64. */
#include "base/clock.h"

#include <sys/random.h>

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void fp_rng_init(struct fp_rng *r, uint64_t seed)
{
	if (seed == 0 && getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = 0x5eed;
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
	pthread_mutex_init(&r->mu, NULL);
}

void fp_rng_release(struct fp_rng *r)
{
	pthread_mutex_destroy(&r->mu);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t fp_rng_u64(struct fp_rng *r)
{
	pthread_mutex_lock(&r->mu);
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	pthread_mutex_unlock(&r->mu);
	return result;
}

uint64_t fp_rng_below(struct fp_rng *r, uint64_t n)
{
	return n ? fp_rng_u64(r) % n : 0;
}

double fp_rng_double(struct fp_rng *r)
{
	return (double)(fp_rng_u64(r) >> 11) * 0x1.0p-53;
}
