/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp.h - OTLP profiles (opentelemetry.proto.profiles.v1development,
 * v1.10/v1.11 layout, docs/formats.md "OTLP profiles messages") protobuf decoder and encoder
 * of ExportProfilesServiceRequest (wire-identical to ProfilesData).
 *
 * Mapping to the model: each OTLP Profile becomes one model_profile with
 * one sample type; its attrs hold the resource attributes, then the scope
 * attributes, then the profile's own attributes. Samples with several
 * values/timestamps become one model sample per observation (value 1 per
 * timestamp when there are no values) sharing one stack range and one label range.
 * Attributes with a home in the model move there (semantic conventions,
 * docs/formats.md "OTLP attributes"): Mapping `process.executable.build_id.gnu` ->
 * build_id, `pprof.mapping.has_*` -> has_* flags, Location
 * `profile.frame.type` -> frame_type, `pprof.location.is_folded`, Profile
 * `pprof.profile.comment|drop_frames|keep_frames`, `profd.profile.name`
 * (the model's profile name, profd's own key), scope
 * `pprof.scope.default_sample_type`; the encoder writes them back the
 * same way, so pprof -> OTLP -> pprof loses nothing the model holds.
 * Other Mapping/Location attributes are dropped. Resource and scope
 * attributes given by reference (key_strindex, string_value_strindex) are
 * resolved against the request's dictionary. Non-string attribute values
 * other than ints become text ("true", "1.5", hex for bytes, JSON for
 * arrays and kvlists).
 */
#ifndef PROF_FORMAT_OTLP_H
#define PROF_FORMAT_OTLP_H

#include "base/buf.h"
#include "base/err.h"
#include "model/profile.h"

struct fmt_otlp_batch {
	struct model_profile *profiles; /* owned; n entries */
	size_t n;
	bool shared_dict; /* profiles[1..n) borrow profiles[0]'s dictionary (fmt_otlp_decode_shared) */
	/* fmt_otlp_decode_pending: the decoder's state behind the profiles'
	 * pending stacks, until fmt_otlp_batch_release; NULL otherwise */
	struct fmt_otlp_pending *pending;
};

/*
 * Bytes the decoded profiles of an @n-byte request may take when the
 * caller limits samples: 64 times the request plus 16 MiB. Real requests
 * stay far below it (our corpus: 1.5x to 7.5x; 50 profiles repeating one
 * dictionary, mkotlp --count 50: 21x); a sample's labels are shared by
 * its observations (otlp.h top), so only profiles x dictionary entries
 * can multiply.
 */
#define FMT_OTLP_DECODED_RATIO	64
#define FMT_OTLP_DECODED_FLOOR	((size_t)16 << 20)
#define FMT_OTLP_DECODED_MAX(n) (FMT_OTLP_DECODED_RATIO * (size_t)(n) + FMT_OTLP_DECODED_FLOOR)

/**
 * fmt_otlp_profile_bytes() - an estimate of the memory @p holds, in
 * bytes: the struct itself, every table's capacity and the string
 * table's arrays, index and chunks, each allocation with malloc's
 * overhead (so a request of many tiny profiles counts what each costs).
 * What FMT_OTLP_DECODED_MAX is checked against.
 */
size_t fmt_otlp_profile_bytes(const struct model_profile *p);

/**
 * fmt_otlp_decode() - decode an ExportProfilesServiceRequest (raw
 * protobuf; the caller inflates gzip) into @out (overwritten; release it
 * with fmt_otlp_batch_release; on error it is left empty). Every index is
 * checked against its table. Errors: -PROF_ECORRUPT with @err naming the
 * table/field and index (e.g. "otlp: profile 0 sample 3: stack_index 9 out
 * of range (4 stacks)", "otlp: location_table[7].lines[0].function_index
 * 12 out of range (9 functions)") or the byte offset of malformed protobuf;
 * -PROF_ETOOBIG when decoded data would exceed @max_samples model samples
 * in all (0 = no limit), nesting is deeper than FMT_PB_MAX_DEPTH or the
 * input would unpack to far more memory than its size (format/pbcheck.h).
 * With @max_samples set (input from the network), also when the decoded
 * profiles would take more than FMT_OTLP_DECODED_MAX(@n) bytes
 * (fmt_otlp_profile_bytes): each profile of a request gets its own copy
 * of the dictionary entries it uses, so profiles x dictionary could
 * otherwise turn a request of a few hundred KiB into gigabytes. Callers
 * that decode what was accepted before (WAL replay, store check) pass 0.
 * Never reads outside @data. Thread-safe (no shared state). Tries
 * fmt_otlp_decode_direct_err first and falls back to fmt_otlp_decode_pbc.
 */
int fmt_otlp_decode(const void *data, size_t n, size_t max_samples, struct fmt_otlp_batch *out,
		    struct prof_err *err);

/**
 * fmt_otlp_decode_pbc() - fmt_otlp_decode through protobuf-c alone
 * (fmt_pb_check, protobuf_c_message_unpack, then conversion): the
 * reference the direct decoder is tested against, and what gives
 * fmt_otlp_decode the errors of malformed bytes and of the shapes the
 * direct decoder leaves to it. Same contract as fmt_otlp_decode.
 */
int fmt_otlp_decode_pbc(const void *data, size_t n, size_t max_samples, struct fmt_otlp_batch *out,
			struct prof_err *err);

/**
 * fmt_otlp_decode_shared() - fmt_otlp_decode for the store: when the
 * direct decoder takes the request, every profile uses one copy of the
 * request's dictionary, translated once (the first profile's tables,
 * holding every entry some profile uses, borrowed by the others:
 * model_profile_borrow_dict; @out->shared_dict is set when there are
 * several). The tables must not be added to. Profiles then carry
 * dictionary entries they do not use, so this is not for conversions that
 * write each profile out alone. Same contract otherwise; the protobuf-c
 * fallback gives unshared profiles.
 */
int fmt_otlp_decode_shared(const void *data, size_t n, size_t max_samples,
			   struct fmt_otlp_batch *out, struct prof_err *err);

/**
 * fmt_otlp_decode_pending() - fmt_otlp_decode_shared for the store's
 * ingest path: when the direct decoder takes the request, the profiles'
 * stacks are keyed from the wire bytes (model/stackkey.h) but their
 * locations, functions and the strings only they use are not translated:
 * every profile's @pending is set (struct model_pending, profile.h). The
 * store's head looks the keys up and translates nothing for stacks it
 * knows; whoever needs the locations calls fmt_otlp_batch_resolve first
 * (the store does before re-encoding a profile, the server before
 * signal-control rules). Every check fmt_otlp_decode_shared makes is made
 * here, so resolving cannot fail. @data must stay alive and unchanged
 * until @out is resolved or released (the decoder's state points into
 * it); that state is a set of decoder pools, held by @out until then.
 * The protobuf-c
 * fallback gives resolved, unshared profiles as fmt_otlp_decode_shared.
 */
int fmt_otlp_decode_pending(const void *data, size_t n, size_t max_samples,
			    struct fmt_otlp_batch *out, struct prof_err *err);

/**
 * fmt_otlp_batch_resolve() - translate the pending stacks of @b's
 * profiles (fmt_otlp_decode_pending), after which they are what
 * fmt_otlp_decode_shared gives for the same request. No-op when none are
 * pending. Cannot fail (allocation failure aborts, as everywhere).
 */
void fmt_otlp_batch_resolve(struct fmt_otlp_batch *b);

/* Internal to the module (fmt_otlp_batch_release): give @b's pending state back. */
void fmt_otlp_pending_release(struct fmt_otlp_batch *b);

/**
 * Returned by fmt_otlp_decode_direct(_err) when only the protobuf-c path
 * can answer: a negative code like every error (the 0/-errno rule), one
 * no decoder error uses (-ENOTSUP: "not supported here"), so a caller
 * tells it from a real error by equality. No @err message goes with it.
 */
#define FMT_OTLP_FALLBACK (-ENOTSUP)

/**
 * fmt_otlp_decode_direct() - the fast path of fmt_otlp_decode
 * (otlp_direct.c): wire bytes to model profiles in one pass, with no
 * per-field allocation. Returns 0 with @out holding exactly what
 * fmt_otlp_decode_pbc would produce, or FMT_OTLP_FALLBACK with @out empty
 * when the input is malformed, over a limit, or uses a shape it leaves to
 * protobuf-c (a singular message field repeated, kvlist or nested array attribute
 * values, over-long tags or length prefixes, requests over 1 GiB).
 * Errors that protobuf-c's path words too (fmt_otlp_decode_direct_err)
 * are FMT_OTLP_FALLBACK here as well.
 * Never reads outside @data. Thread-safe: parse pools are kept between
 * calls (base/mem.h spares: at most 16, each up to 4 MiB of capacity).
 */
int fmt_otlp_decode_direct(const void *data, size_t n, size_t max_samples,
			   struct fmt_otlp_batch *out);

/**
 * fmt_otlp_decode_direct_err() - fmt_otlp_decode_direct, except that a
 * request that parses (well-formed, in the shapes the direct decoder
 * reads) but fails conversion - an index out of range, values vs
 * timestamps counts, a link id's size, @max_samples, the decoded size
 * limit - gets its error here: the negative code and @err message
 * fmt_otlp_decode_pbc gives for it, word for word, found by converting
 * again one profile at a time as otlp.c does (no protobuf-c unpacking,
 * one profile held at a time). FMT_OTLP_FALLBACK with @out empty for the
 * rest (malformed bytes, shapes left to protobuf-c, an error without a
 * message). fmt_otlp_decode, _shared and _pending answer this way.
 */
int fmt_otlp_decode_direct_err(const void *data, size_t n, size_t max_samples,
			       struct fmt_otlp_batch *out, struct prof_err *err);

/** fmt_otlp_batch_release() - free the profiles of @b; @b is left empty. NULL ok. */
void fmt_otlp_batch_release(struct fmt_otlp_batch *b);

/**
 * fmt_otlp_encode() - encode @n profiles (each passing
 * model_profile_validate) as one ExportProfilesServiceRequest with one
 * shared, deduplicated dictionary (entry 0 of each table the zero value),
 * appended to @out. Profiles with identical attrs share one
 * ResourceProfiles; each profile gets its own ScopeProfiles (scope name
 * "profd") holding K OTLP Profiles for its K sample types, in order.
 * Samples with a timestamp that share stack, labels and link become one
 * OTLP Sample with values and timestamps_unix_nano side by side; samples
 * without a timestamp stay one Sample each, so sample counts survive a
 * round trip. Resource attribute keys/values are written as plain strings
 * (receivers that predate key_strindex read them), sample attributes
 * through the attribute table. Returns 0, or -PROF_ETOOBIG when a table
 * would exceed 2^31 entries or @out's cap is reached.
 */
int fmt_otlp_encode(const struct model_profile *const *profiles, size_t n, struct buf *out);

#endif
