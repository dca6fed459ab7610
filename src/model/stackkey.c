// SPDX-License-Identifier: Apache-2.0
/*
 * stackkey.c - content keys of locations and stacks (see stackkey.h).
 */
#include "model/stackkey.h"

#include "base/mem.h"
#include "base/parse.h"

#include <pthread.h>
#include <sys/random.h>
#include <unistd.h>
#include <xxhash.h>

/*
 * Each kind of key hashes with its own seed, all drawn at random once per
 * process: keys never leave the process, so nobody outside can aim at
 * one (XXH3 without a secret seed lets anyone build colliding inputs), and
 * equal bytes of two kinds (a string spelling a mapping's fields) give
 * unrelated keys.
 */
enum { K_STR, K_MAP, K_LOC, K_PLAIN, K_STACK, K_KINDS };
static uint64_t seeds[K_KINDS];
static pthread_once_t seeds_once = PTHREAD_ONCE_INIT;

static void seeds_init(void)
{
	uint64_t r[K_KINDS];

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		/* no entropy source: still unpredictable enough to an outsider */
		uint64_t t = (uint64_t)prof_now_ns() ^ ((uint64_t)getpid() << 32) ^ (uintptr_t)&t;

		for (int i = 0; i < K_KINDS; i++)
			r[i] = XXH3_64bits_withSeed(&t, sizeof(t), (uint64_t)i);
	}
	memcpy(seeds, r, sizeof(seeds));
}

static struct model_key key_of(int kind, const void *p, size_t n)
{
	XXH128_hash_t v;

	pthread_once(&seeds_once, seeds_init);
	v = XXH3_128bits_withSeed(p, n, seeds[kind]);
	return (struct model_key){ v.low64, v.high64 };
}

struct model_key model_key_bytes(const void *p, size_t n)
{
	return key_of(K_STR, n ? p : "", n);
}

struct model_key model_key_mapping(uint64_t start, uint64_t limit, uint64_t offset,
				   struct model_key filename, struct model_key build_id,
				   unsigned flags)
{
	uint64_t w[8] = { start,       limit,	    offset,	 filename.lo,
			  filename.hi, build_id.lo, build_id.hi, flags };

	return key_of(K_MAP, w, sizeof(w));
}

/* Words of a location with lines before its names: a header and seven per line. */
#define LOC_HEAD_WORDS 6
#define LINE_WORDS     7

struct model_key model_key_location(struct model_key mapping, uint64_t address, bool folded,
				    struct model_key frame_type, const struct model_key_line *lines,
				    uint32_t nlines)
{
	uint64_t stackbuf[256], *w = stackbuf;
	size_t bytes = sizeof(*w) * (LOC_HEAD_WORDS + LINE_WORDS * (size_t)nlines), n = 0;
	struct model_key k;
	char *c;

	if (!nlines && !folded) {
		uint64_t p[5] = { mapping.lo, mapping.hi, frame_type.lo, frame_type.hi, address };

		return key_of(K_PLAIN, p, sizeof(p));
	}
	for (uint32_t i = 0; i < nlines; i++)
		bytes += (size_t)lines[i].name_len + lines[i].system_name_len +
			 lines[i].filename_len;
	if (bytes > sizeof(stackbuf))
		w = xmalloc(bytes);
	w[n++] = mapping.lo;
	w[n++] = mapping.hi;
	w[n++] = address;
	w[n++] = (uint64_t)nlines << 1 | folded;
	w[n++] = frame_type.lo;
	w[n++] = frame_type.hi;
	for (uint32_t i = 0; i < nlines; i++) {
		const struct model_key_line *l = &lines[i];

		w[n++] = (uint64_t)l->start_line;
		w[n++] = l->has_function;
		w[n++] = (uint64_t)l->line;
		w[n++] = (uint64_t)l->column;
		w[n++] = l->name_len;
		w[n++] = l->system_name_len;
		w[n++] = l->filename_len;
	}
	c = (char *)(w + n);
	for (uint32_t i = 0; i < nlines; i++) {
		const struct model_key_line *l = &lines[i];

		if (l->name_len)
			c = (char *)memcpy(c, l->name, l->name_len) + l->name_len;
		if (l->system_name_len)
			c = (char *)memcpy(c, l->system_name, l->system_name_len) +
			    l->system_name_len;
		if (l->filename_len)
			c = (char *)memcpy(c, l->filename, l->filename_len) + l->filename_len;
	}
	k = key_of(K_LOC, w, bytes);
	if (w != stackbuf)
		free(w);
	return k;
}

struct model_key model_key_stack(const struct model_key *locs, uint32_t n)
{
	if (!n)
		return (struct model_key){ 0, 0 };
	return key_of(K_STACK, locs, sizeof(*locs) * n);
}
