/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stackkey.h - content keys of locations and stacks.
 *
 * A stack's key names it by what its frames say, independent of any
 * profile's or head's table indexes, so a decoder can key the stacks of
 * a request straight from the wire and the store's head can find the
 * ones it has seen without building a model of their locations
 * (fmt_otlp_decode_pending, store_head_add_batch). Both sides build keys
 * with these functions only, so the same content gives the same key:
 *
 *   string    XXH3-128 of its bytes;
 *   mapping   XXH3-128 of memory start, limit, file offset, the keys of
 *             its file name and build ID and its four has_* flags
 *             ({0, 0} for "no mapping");
 *   location  without lines and not folded (an unsymbolized frame):
 *             XXH3-128 of the mapping key, the frame type key and the
 *             address; else XXH3-128 of the mapping key, address, line
 *             count, folded flag, frame type key, per line its
 *             function's start line, whether it has a function, the
 *             line, column and the lengths of the function's name,
 *             system name and file name, then the bytes of those names,
 *             line after line;
 *   stack     XXH3-128 of its location keys, root first; {0, 0} is the
 *             empty stack.
 *
 * Each kind hashes with its own seed, drawn at random when the process
 * starts: keys live only in memory, in one process, so an outsider can
 * neither aim inputs at a key (XXH3 is not collision resistant against
 * someone who knows its seed: long inputs can be built to collide) nor
 * make a string's key equal a mapping's by spelling its fields. Two
 * different contents then share a key with probability about 2^-128
 * per pair. Source of the hash: xxHash (libxxhash, Debian package
 * libxxhash-dev), XXH3_128bits_withSeed.
 */
#ifndef PROF_MODEL_STACKKEY_H
#define PROF_MODEL_STACKKEY_H

#include "base/compat.h"

struct model_key {
	uint64_t lo, hi;
};

/* One line of a location; its function's strings by their bytes. */
struct model_key_line {
	const void *name, *system_name, *filename; /* NULL when the length is 0 */
	uint32_t name_len, system_name_len, filename_len;
	int64_t start_line;
	bool has_function; /* function index != 0 */
	int64_t line, column;
};

/** model_key_bytes() - the key of the string @p[@n] (@p may be NULL when @n is 0). */
struct model_key model_key_bytes(const void *p, size_t n);

/**
 * model_key_mapping() - the key of a mapping with these fields and the
 * keys of its file name and build ID strings; @flags holds has_functions,
 * has_filenames, has_line_numbers and has_inline_frames as bits 0..3.
 */
struct model_key model_key_mapping(uint64_t start, uint64_t limit, uint64_t offset,
				   struct model_key filename, struct model_key build_id,
				   unsigned flags);

/**
 * model_key_location() - the key of a location: @mapping is the mapping's
 * key ({0, 0} for none), @frame_type the key of its frame type string
 * ("" when it has none), @lines[@nlines] innermost first. A location with
 * no lines that is not folded gets the cheap key of the header comment.
 */
struct model_key model_key_location(struct model_key mapping, uint64_t address, bool folded,
				    struct model_key frame_type, const struct model_key_line *lines,
				    uint32_t nlines);

/**
 * model_key_stack() - the key of the stack whose location keys, root
 * first, are @locs[@n] ({0, 0} when @n is 0).
 */
struct model_key model_key_stack(const struct model_key *locs, uint32_t n);

#endif
