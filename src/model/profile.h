/* SPDX-License-Identifier: Apache-2.0 */
/*
 * profile.h - the canonical in-memory profile every format decodes into.
 *
 * The model is the union of pprof (profile.proto) and OTLP profiles
 * (opentelemetry.proto.profiles.v1development, v1.10/v1.11 layout; see
 * docs and docs/formats.md "OTLP profiles messages", "pprof profile.proto"):
 *
 *   - dictionary tables: strings (interned, id 0 = ""), mappings,
 *     functions, locations (each with an inline chain of lines, lines[0]
 *     innermost as in both formats), links (trace/span ids);
 *   - N sample types (value columns, pprof style). An OTLP Profile has one
 *     sample type; pprof may have several;
 *   - samples: a stack (location indexes, *leaf first*), one value per
 *     sample type, labels (key -> string or number), an optional
 *     timestamp and link. Stacks are ranges of @stack_locs, and several
 *     samples may share one range (decoders intern stacks);
 *   - profile-level attributes (@attrs): OTLP resource/scope/profile
 *     attributes such as process.pid, service.name; pprof has none.
 *
 * Invariants (checked by model_profile_validate):
 *   - index 0 of mappings, functions, locations and links is the zero
 *     entry meaning "none", as in OTLP's dictionary;
 *   - every index held by an entry is in range; every string id < strings.n;
 *   - values.n == samples.n * sample_types.n (sample i's values start at
 *     samples.v[i].value_off).
 *
 * Ownership: the profile owns everything in it; strings returned by
 * model_str stay valid until model_profile_release. Not thread-safe.
 */
#ifndef PROF_MODEL_PROFILE_H
#define PROF_MODEL_PROFILE_H

#include "base/compat.h"
#include "base/err.h"
#include "base/mem.h"
#include "base/strtab.h"
#include "model/stackkey.h"

struct model_value_type {
	uint32_t type; /* string id, e.g. "cpu" */
	uint32_t unit; /* string id, e.g. "nanoseconds" */
};

struct model_mapping {
	uint64_t memory_start, memory_limit, file_offset;
	uint32_t filename; /* string id: path or pseudo name such as [vdso] */
	uint32_t build_id; /* string id: GNU build ID in lowercase hex, or "" */
	bool has_functions, has_filenames, has_line_numbers, has_inline_frames;
};

/* The has_* flags of @m as bits 0..3, in that order (model_key_mapping's @flags). */
static inline unsigned model_mapping_flags(const struct model_mapping *m)
{
	return (unsigned)m->has_functions | (unsigned)m->has_filenames << 1 |
	       (unsigned)m->has_line_numbers << 2 | (unsigned)m->has_inline_frames << 3;
}

struct model_function {
	uint32_t name, system_name, filename; /* string ids */
	int64_t start_line;
};

struct model_line {
	uint32_t function; /* index into functions, 0 = none */
	int64_t line, column;
};

struct model_location {
	uint32_t mapping;	   /* index into mappings, 0 = unknown */
	uint64_t address;	   /* as the producer gave it (docs/design.md) */
	uint32_t line_off, nlines; /* range of lines; lines[line_off] innermost */
	bool is_folded;
	uint32_t frame_type; /* string id of profile.frame.type ("native", "kernel", ...) or 0 */
};

struct model_label {
	uint32_t key; /* string id */
	uint32_t str; /* string id, 0 when numeric */
	int64_t num;
	uint32_t num_unit; /* string id */
};

struct model_link {
	uint8_t trace_id[16];
	uint8_t span_id[8];
};

struct model_sample {
	uint32_t stack_off, nstack;  /* range of stack_locs, leaf first */
	uint32_t value_off;	     /* first of sample_types.n values in @values */
	uint32_t label_off, nlabels; /* range of @labels */
	uint32_t link;		     /* index into links, 0 = none */
	int64_t timestamp_ns;	     /* unix ns, 0 = unknown */
};

/*
 * Stacks a decoder has keyed but not translated yet
 * (fmt_otlp_decode_pending): while a profile's @pending is set, each
 * sample's stack_off is the decoder's id of its stack and its nstack is 0;
 * the stack's content key (model_key_stack) is key[stack_off], {0, 0}
 * for the empty stack. The profiles of one request share one. resolve()
 * translates the stacks of every profile sharing it into their (shared)
 * dictionary: their samples then hold ranges of stack_locs as usual and
 * their @pending is NULL. Owned by the decoder's batch.
 */
struct model_pending {
	const struct model_key *key; /* nkeys entries, by the decoder's stack id */
	size_t nkeys;
	void (*resolve)(struct model_pending *pd);
};

/*
 * What a decoder left out because it could not read it, while it read the
 * rest (docs/formats.md, "Skipped, not refused"): @n items in all, what
 * they are (a plural noun phrase: "invalid lines", "jdk.ActiveSetting
 * events") and the first one's reason with its position. Kept in the
 * profile itself, not in its string table, so it is never stored or
 * exported as data; the ingest answer and `profd top` report it.
 */
struct model_skipped {
	uint64_t n;
	char what[48];
	char first[208];
};

struct model_profile {
	struct strtab strings;
	VEC(struct model_mapping) mappings;
	VEC(struct model_function) functions;
	VEC(struct model_location) locations;
	VEC(struct model_line) lines;
	VEC(struct model_link) links;
	VEC(struct model_value_type) sample_types;
	VEC(struct model_sample) samples;
	VEC(uint32_t) stack_locs;
	VEC(int64_t) values;
	VEC(struct model_label) labels;
	VEC(struct model_label) attrs; /* profile-level (resource) attributes */
	VEC(uint32_t) comments;	       /* string ids */

	struct model_value_type period_type;
	int64_t period;
	int64_t time_ns, duration_ns;
	uint32_t default_sample_type;	   /* string id of the type name, 0 = unset */
	uint32_t drop_frames, keep_frames; /* string ids of regexes, 0 = unset */
	uint32_t name; /* string id of the profile name ("process_cpu", "memory"), 0 = derive */

	struct model_pending *pending; /* stacks not translated yet, or NULL (see above) */
	struct model_skipped skipped;  /* what the decoder skipped (see above) */

	/* private: hash index for model_function_intern */
	uint32_t *fn_slots;
	uint32_t fn_nslots;
	size_t fn_indexed;
};

/** model_profile_init() - empty profile with the zero entries in place. */
void model_profile_init(struct model_profile *p);
/** model_profile_release() - free everything; the struct may be re-inited. NULL ok. */
void model_profile_release(struct model_profile *p);

static inline const char *model_str(const struct model_profile *p, uint32_t id)
{
	return strtab_get(&p->strings, id);
}
static inline uint32_t model_intern(struct model_profile *p, const char *s)
{
	return strtab_intern_cstr(&p->strings, s);
}
static inline uint32_t model_intern_n(struct model_profile *p, const char *s, size_t n)
{
	return strtab_intern(&p->strings, s, n);
}

/** model_sample_type_add() - append a value column; returns its index. Only before samples. */
uint32_t model_sample_type_add(struct model_profile *p, const char *type, const char *unit);
/** model_mapping_add() - append a mapping; returns its index (>= 1). */
uint32_t model_mapping_add(struct model_profile *p, const struct model_mapping *m);
/**
 * model_build_id_checked() - @id (a string id of @p) when it is "" or a
 * build ID parse_build_id_ok accepts, else 0 (""). Decoders pass every
 * mapping's build ID through it: a value such as "../../etc" is dropped
 * at ingest, so the mapping is kept but never matched to a file by it.
 */
uint32_t model_build_id_checked(const struct model_profile *p, uint32_t id);
/** model_function_add() - append a function; returns its index (>= 1). */
uint32_t model_function_add(struct model_profile *p, const struct model_function *f);
/**
 * model_function_intern() - index of the function with these name,
 * system name, file and start line, adding it if new (linear hash on the
 * tuple). Use it from decoders whose input has no function table.
 */
uint32_t model_function_intern(struct model_profile *p, uint32_t name, uint32_t system_name,
			       uint32_t filename, int64_t start_line);
/**
 * model_location_add() - append a location with @nlines lines (copied,
 * innermost first); returns its index (>= 1).
 */
uint32_t model_location_add(struct model_profile *p, uint32_t mapping, uint64_t address,
			    const struct model_line *lines, uint32_t nlines);
/**
 * model_stack_add() - copy @n location indexes (leaf first) into
 * stack_locs and return the offset; pass it to model_sample_add so
 * samples can share one stack.
 */
uint32_t model_stack_add(struct model_profile *p, const uint32_t *locs, uint32_t n);
/**
 * model_labels_add() - copy @n labels into labels and return the offset,
 * for samples that share one label range (set their label_off / nlabels
 * to it, as model_stack_add's range is shared): the OTLP decoders give all
 * observations of a wire sample one copy, so labels x timestamps cannot
 * expand a small request.
 */
uint32_t model_labels_add(struct model_profile *p, const struct model_label *l, size_t n);
/**
 * model_sample_add() - append a sample over the stack range
 * (@stack_off, @nstack) with sample_types.n @values (copied) and @nlabels
 * labels (copied). Returns the sample index.
 */
uint32_t model_sample_add(struct model_profile *p, uint32_t stack_off, uint32_t nstack,
			  const int64_t *values, const struct model_label *labels, uint32_t nlabels,
			  int64_t timestamp_ns, uint32_t link);
/** model_attr_add_str() / _num() - add a profile-level attribute. */
void model_attr_add_str(struct model_profile *p, const char *key, const char *value);
void model_attr_add_num(struct model_profile *p, const char *key, int64_t value);
/** model_attr_get() - string value of profile attribute @key, or NULL. */
const char *model_attr_get(const struct model_profile *p, const char *key);

/**
 * model_profile_skip() - record that a decoder skipped @n unreadable items
 * of kind @what (a plural noun phrase, copied) and read the rest. The
 * first call's @what and reason (printf @fmt, copied, cut at 207 bytes)
 * are kept; a later call of another kind makes @what "items". @n 0 is a
 * no-op.
 */
void model_profile_skip(struct model_profile *p, uint64_t n, const char *what, const char *fmt, ...)
	PROF_PRINTF(4, 5);

/**
 * model_skipped_add() - add the skip record @src to @dst (counts summed,
 * the first reason of @dst kept, else @src's), as merging profiles does.
 */
void model_skipped_add(struct model_skipped *dst, const struct model_skipped *src);

/**
 * model_skipped_text() - "skipped N WHAT (first: REASON)" into @out (always
 * NUL-terminated when @outsz > 0; cut to fit); "" when nothing was
 * skipped. Returns the length written.
 */
size_t model_skipped_text(const struct model_skipped *s, char *out, size_t outsz);

/**
 * model_profile_validate() - check the invariants above; 0 or
 * -PROF_ECORRUPT with @err naming the table, entry and field. A sample of
 * a profile with pending stacks must have nstack 0 and a stack id below
 * the pending key count.
 */
int model_profile_validate(const struct model_profile *p, struct prof_err *err);

/**
 * model_profile_validate_samples() - the part of model_profile_validate
 * that is not about the dictionary tables (strings, mappings, functions,
 * locations, lines, stack entries): values, samples, labels and sample
 * types, checked against those tables. For profiles that share a
 * dictionary already checked (model_profile_same_dict). Same errors.
 */
int model_profile_validate_samples(const struct model_profile *p, struct prof_err *err);

/**
 * model_profile_borrow_dict() - make @p use the dictionary tables of
 * @from (strings, mappings, functions, locations, lines, links,
 * stack_locs; @p's own are freed): the profiles of one OTLP request
 * share its dictionary (fmt_otlp_decode_shared). Lent: @from must
 * outlive @p's use, nobody may add to those tables of either profile, and
 * @p must be given back with model_profile_unborrow_dict before
 * model_profile_release.
 */
void model_profile_borrow_dict(struct model_profile *p, const struct model_profile *from);

/** model_profile_unborrow_dict() - forget the borrowed tables of @p (left empty). */
void model_profile_unborrow_dict(struct model_profile *p);

/**
 * model_profile_same_dict() - do @a and @b use the same dictionary tables
 * (one borrowed from the other, or both from a third)?
 */
bool model_profile_same_dict(const struct model_profile *a, const struct model_profile *b);

/**
 * model_profile_type_id() - "name:type:unit:period_type:period_unit" for
 * value column @idx (the Pyroscope/Parca convention), written to @out.
 * The name is p->name when set, else derived from the period/sample type:
 * cpu -> process_cpu, space/bytes -> memory, contentions -> mutex or block
 * (delay), goroutine -> goroutine, off_cpu -> off_cpu, else the sample type.
 */
void model_profile_type_id(const struct model_profile *p, uint32_t idx, char *out, size_t outsz);

/**
 * model_location_name() - display name of line @line_idx of a location:
 * the function name, else its system name, else "[basename of mapping]"
 * when there is a mapping file, else "<unknown>" (go tool pprof -top's
 * rule in graph.go NameComponents, at function granularity).
 * Returns a string lent from @p, a static string, or @tmp (which
 * receives the bracketed basename; 256 bytes is plenty).
 */
const char *model_frame_name(const struct model_profile *p, const struct model_location *loc,
			     uint32_t line_idx, char *tmp, size_t tmpsz);

#endif
