// SPDX-License-Identifier: Apache-2.0
/*
 * stackkey.c - content keys of locations and stacks (see stackkey.h).
 */
#include "model/stackkey.h"

#include "base/mem.h"

#include <xxhash.h>

static struct model_key key_of(const void *p, size_t n)
{
	XXH128_hash_t v = XXH3_128bits(p, n);

	return (struct model_key){ v.low64, v.high64 };
}

struct model_key model_key_bytes(const void *p, size_t n)
{
	return key_of(n ? p : "", n);
}

struct model_key model_key_mapping(uint64_t start, uint64_t limit, uint64_t offset,
				   struct model_key filename, struct model_key build_id,
				   unsigned flags)
{
	uint64_t w[8] = { start,       limit,	    offset,	 filename.lo,
			  filename.hi, build_id.lo, build_id.hi, flags };

	return key_of(w, sizeof(w));
}

/* Words a location with lines hashes: a header and ten per line. */
#define LOC_HEAD_WORDS	6
#define LINE_WORDS	10
#define LOC_STACK_LINES 16

struct model_key model_key_location(struct model_key mapping, uint64_t address, bool folded,
				    struct model_key frame_type, const struct model_key_line *lines,
				    uint32_t nlines)
{
	uint64_t stackbuf[LOC_HEAD_WORDS + LINE_WORDS * LOC_STACK_LINES], *w = stackbuf;
	struct model_key k;
	size_t n = 0;

	if (!nlines && !folded)
		return (struct model_key){ mapping.lo ^ frame_type.lo ^ ~0ULL,
					   (mapping.hi ^ frame_type.hi) +
						   address * 0x9e3779b97f4a7c15ULL };
	if (nlines > LOC_STACK_LINES)
		w = xmalloc(sizeof(*w) * (LOC_HEAD_WORDS + LINE_WORDS * (size_t)nlines));
	w[n++] = mapping.lo;
	w[n++] = mapping.hi;
	w[n++] = address;
	w[n++] = (uint64_t)nlines << 1 | folded;
	w[n++] = frame_type.lo;
	w[n++] = frame_type.hi;
	for (uint32_t i = 0; i < nlines; i++) {
		const struct model_key_line *l = &lines[i];

		w[n++] = l->name.lo;
		w[n++] = l->name.hi;
		w[n++] = l->system_name.lo;
		w[n++] = l->system_name.hi;
		w[n++] = l->filename.lo;
		w[n++] = l->filename.hi;
		w[n++] = (uint64_t)l->start_line;
		w[n++] = l->has_function;
		w[n++] = (uint64_t)l->line;
		w[n++] = (uint64_t)l->column;
	}
	k = key_of(w, n * sizeof(*w));
	if (w != stackbuf)
		free(w);
	return k;
}

struct model_key model_key_stack(const struct model_key *locs, uint32_t n)
{
	if (!n)
		return (struct model_key){ 0, 0 };
	return key_of(locs, sizeof(*locs) * n);
}
