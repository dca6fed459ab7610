/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stackset_int.h - what the three parts of the stack set share and
 * nothing else includes: stackset.c (the set), stackset_cache.c (location
 * translation and the process-wide translation cache) and
 * stackset_collect.c (collection from the store and from a profile).
 * The ss_xc_* state is under ss_xc.mu where its comments say so.
 */
#ifndef PROFD_QUERY_STACKSET_INT_H
#define PROFD_QUERY_STACKSET_INT_H

#include "query/hashmap.h"
#include "query/scratch.h"
#include "query/stackset.h"

#include <pthread.h>

/*
 * VEC_RESERVE for a vector of per-query size (a set's nodes and entries,
 * a collector's totals and sums): room for @extra more from the scratch
 * pool, which keeps such blocks between queries (query/scratch.h);
 * released with query_scratch_give().
 */
#define SS_VEC_RESERVE_SCRATCH(vec, extra)                                           \
	do {                                                                         \
		if ((vec)->n + (extra) > (vec)->cap) {                               \
			size_t c_ = (vec)->n + (extra);                              \
			void *v_ = query_scratch_take(c_, sizeof(*(vec)->v), false); \
                                                                                     \
			if ((vec)->n)                                                \
				memcpy(v_, (vec)->v, (vec)->n * sizeof(*(vec)->v));  \
			query_scratch_give((vec)->v);                                \
			(vec)->v = v_;                                               \
			(vec)->cap = c_;                                             \
		}                                                                    \
	} while (0)

/*
 * A pin keeps one generation of the translation cache's name bytes alive
 * while sets that borrowed them live (see xc_share_names): the cache
 * holds a reference while it owns those string chunks; when it is
 * emptied it hands the chunks to the pin and drops its reference; the
 * last reference frees them.
 */
struct query_ss_pin {
	unsigned long refs;
	char *chunks; /* strtab chunk chain, set when the cache lets go of it */
};

#define FR_HIDDEN 1u
#define FR_MATCH  2u

struct xlator {
	struct query_stackset *ss;
	const struct model_profile *dict;
	struct symbolizer *sym;
	const struct query_filter *filter;
	bool used_sym;	     /* a location was looked up in the symbolizer */
	uint32_t *loc_off;   /* [dict locations]: offset in frames + 1, 0 = not yet */
	bool once;	     /* the caller asks once per location (xc_location): no memo */
	bool trie;	     /* translating for the cache's trie (ss_xc_source): see frames */
	const char *line_fn; /* params.line_fn, or NULL */
	size_t line_fn_len;
	/*
	 * Per location: n, then n x (name id, FR_* flags), outer first. For
	 * the trie (no filter: the flags would be 0) the second word is the
	 * frame's source-location variant instead (ss_xc_variant), and nothing
	 * is noted in the trie's own srcs.
	 */
	VEC(uint32_t) frames;
	struct sym_frame *symbuf; /* SYM_FRAMES_MAX, allocated on first use */
};

struct xc_src {
	uint64_t id;
	bool is_head;
	const struct model_profile *dict;
	const struct symbolizer *sym;
	uint64_t sym_gen;
	bool uses_sym;
	uint32_t *node; /* [n]: store stack id -> trie node */
	size_t n;
	uint64_t fp;
	size_t nlocs, nlines, nfuncs, nmaps, nstrs; /* dictionary sizes fingerprinted */
	uint64_t used;				    /* LRU clock */
	uint32_t *locrec; /* [nlocrec]: location -> its frame record in lwords + 1, 0 = none */
	size_t nlocrec;
	VEC(uint32_t) vstk;   /* stacks (ascending) with a frame of a name of several variants */
	VEC(uint32_t) vnames; /* those names, each once */
	uint64_t vgen;	      /* ss_xc.var_gen and ... */
	size_t vn;	      /* ... n that vstk was made for */
};

/*
 * A location translated for the trie, by content (see "the location
 * cache" in xc_location): its key and frame record in lwords; a record
 * that asked the symbolizer holds for that symbolizer at that generation.
 */
struct xc_loc {
	uint32_t key, klen, frames;
	bool used_sym;
	const struct symbolizer *sym;
	uint64_t sym_gen;
};

struct ss_xc_state {
	pthread_mutex_t mu;
	bool ready;
	uint64_t epoch, clock;
	struct query_stackset trie;
	struct query_ss_pin *pin; /* keeps the trie's name bytes alive for sets sharing them */
	VEC(struct xc_src) src;
	struct qmap lidx; /* the location cache: hash of a location key -> index in lrec */
	VEC(struct xc_loc) lrec;
	VEC(uint32_t) lwords; /* location keys and frame records ([n, name, variant, ...]) */
	/* Source-location variants (see ss_xc_variant). */
	VEC(struct query_ss_srcloc) var; /* id 0: nothing known */
	struct qmap var_idx;		 /* hash of a record (probed on) -> id */
	uint32_t *name_var;		 /* [nname_var]: trie name -> variant + 1, XC_MULTI */
	size_t nname_var;
	size_t nmulti;	  /* names at XC_MULTI */
	uint64_t var_gen; /* moves when a name gets its second variant */
	size_t mapped;
	struct query_ss_cache_stats stats;
	/*
	 * Per-query arrays over the trie's nodes, kept between queries (a
	 * fresh one costs a page fault and a page clear per 4 KiB; over the
	 * 861 k nodes of the fleet of bench/bench_query.sh that was a fifth
	 * of a warm flame graph): ss_xc_extract's ids and marks (used with mu
	 * held; marks all zero between uses), and one spare of a collector's
	 * slot map (all zero while spare).
	 */
	uint32_t *ex_newid;
	uint8_t *ex_mark;
	size_t nex;
	uint32_t *qslot_spare;
	size_t nqslot_spare;
};

/* The process-wide translation cache (stackset_cache.c); fields under mu. */
extern struct ss_xc_state ss_xc;

/* One touched trie node of a cached query: per side, summed values and rows. */
struct qacc {
	uint32_t node;
	int64_t value[2];
	uint64_t count[2];
};

/* Per-name index arrays (raw_of, src_of): index + 1 of @name's record, 0 = none. */
uint32_t ss_of_get(const uint32_t *of, size_t n, uint32_t name);

void ss_of_put(uint32_t **of, size_t *n, uint32_t name, uint32_t v);

/* The source-location record of the strings (may be ""), names interned in @ss. */
void ss_srcloc_make(struct query_stackset *ss, struct query_ss_srcloc *r, const char *file,
		    int64_t line, const char *build_id, const char *mapping, const char *ftype);

/*
 * Note where frame name @name's code is (strings may be ""): of all the
 * records noted for it, the one ss_srcloc_cmp puts first.
 */
void ss_srcloc_note(struct query_stackset *ss, uint32_t name, const char *file, int64_t line,
		    const char *build_id, const char *mapping, const char *ftype);

/* How much @r says: 2 a file, 1 a binary, 0 only a frame type (the most wins). */
int ss_srcloc_rank(const struct query_ss_srcloc *r);

/*
 * The order that picks a name's source location among several, a function
 * of their contents only (not of the order the data is met in, nor of
 * how it is stored): < 0 when @a (strings in @names) comes before @b.
 * Higher ss_srcloc_rank first, then the file, the line (known lines
 * ascending, so the function's start line where the data gives one, else
 * the lowest line met; unknown last), the build ID, the binary and the
 * frame type, strings byte-wise.
 */
int ss_srcloc_cmp(const struct query_ss_srcloc *a, const struct query_ss_srcloc *b,
		  const struct strtab *names);

/* ss_srcloc_cmp of @a against the record the strings would make (ss_srcloc_make). */
int ss_srcloc_cmp_str(const struct query_ss_srcloc *a, const struct strtab *na, const char *file,
		      int64_t line, const char *build_id, const char *mapping, const char *ftype);

struct query_ss_pin *ss_pin_new(void);

struct query_ss_pin *ss_pin_get(struct query_ss_pin *p);

void ss_pin_put(struct query_ss_pin *p);

/* The (parent, name) index of nodes that were set without it (a set built from the cache). */
void ss_child_idx_rebuild(struct query_stackset *ss);

void ss_xlator_init(struct xlator *x, struct query_stackset *ss, const struct model_profile *dict,
		    const struct query_stackset_params *p);

void ss_xlator_release(struct xlator *x);

/* Frames of location @loc: offset of its record in x->frames. */
uint32_t ss_xlator_location(struct xlator *x, uint32_t loc);

/* Append location @loc's visible frames under trie node @at; ORs the stack-filter match. */
uint32_t ss_xlator_apply(struct xlator *x, uint32_t at, uint32_t loc, bool *match);

/*
 * The variant id of source-location record @r (names of the trie; 0 when
 * it knows nothing), the same id for equal records, and @name's variant
 * state updated: the first variant it meets, or XC_MULTI from its second
 * on (ss_xc.var_gen moves then). Called with ss_xc.mu held.
 */
uint32_t ss_xc_variant(uint32_t name, const struct query_ss_srcloc *r);

bool ss_xc_is_multi(uint32_t name);

/*
 * e->vstk for the names at XC_MULTI now: the stacks of @src (ascending)
 * whose location has a frame of such a name, and e->vnames those names.
 * Remade when a name got there or the source grew. Called with ss_xc.mu
 * held.
 */
void ss_xc_variant_stacks(struct xc_src *e, const struct store_source *src);

/*
 * The map of @src, valid and covering all its stacks, translating what is
 * missing; NULL when it cannot be cached (too big). May empty the trie
 * (ss_xc.epoch moves). Called with ss_xc.mu held.
 */
struct xc_src *ss_xc_source(const struct store_source *src, struct symbolizer *sym);

/*
 * Name @name of @from as a name of @to (interned; @memo[name] caches id +
 * 1), with its raw-frame and source-location records.
 */
uint32_t ss_copy_name(struct query_stackset *to, const struct query_stackset *from, uint32_t *memo,
		      uint32_t name);

/*
 * Copy the touched trie nodes @acc[@n] and their ancestors into @ss (an
 * empty set) in trie id order, with their entries (side s in bucket s),
 * and apply the stack filter @f. Names are shared with the trie
 * (xc_share_names), so a node keeps its trie name id; @qvar[@nqvar] as
 * xc_copy_records. Called with ss_xc.mu held.
 */
int ss_xc_extract(const struct qacc *acc, size_t n, bool pair, const struct query_filter *f,
		  const uint32_t *qvar, size_t nqvar, struct query_stackset *ss);

#endif
