/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_keys.h - the well-known OTLP attribute keys that have a home in
 * the model (docs/formats.md, "OTLP attributes"): both OTLP decoders
 * (otlp.c, otlp_direct_convert.c) take them out of the attribute lists,
 * the encoder (otlp_encode.c) writes them back. Keys from the
 * OpenTelemetry semantic conventions (process.executable.build_id.gnu,
 * profile.frame.type) and the pprof-to-OTLP conventions of the
 * OpenTelemetry profiles signal (pprof.*); profd.profile.name is ours.
 */
#ifndef PROFD_FORMAT_OTLP_KEYS_H
#define PROFD_FORMAT_OTLP_KEYS_H

/* Mapping: the GNU build ID (hex), the model's mapping build_id. */
#define KEY_BUILD_ID_GNU "process.executable.build_id.gnu"
/* Location: the frame type (native, kernel, jvm, cpython, ...). */
#define KEY_FRAME_TYPE "profile.frame.type"
/* Location: pprof's is_folded. */
#define KEY_IS_FOLDED "pprof.location.is_folded"
/* Mapping: pprof's has_functions, has_filenames, has_line_numbers, has_inline_frames. */
#define KEY_HAS_FUNCTIONS "pprof.mapping.has_functions"
#define KEY_HAS_FILENAMES "pprof.mapping.has_filenames"
#define KEY_HAS_LINES	  "pprof.mapping.has_line_numbers"
#define KEY_HAS_INLINE	  "pprof.mapping.has_inline_frames"
/* Profile: pprof's comment, drop_frames and keep_frames. */
#define KEY_COMMENT	"pprof.profile.comment"
#define KEY_DROP_FRAMES "pprof.profile.drop_frames"
#define KEY_KEEP_FRAMES "pprof.profile.keep_frames"
/* Scope: pprof's default_sample_type. */
#define KEY_DEFAULT_TYPE "pprof.scope.default_sample_type"
/* Profile: the model's profile name (process_cpu, memory, ...) when set: profd's own key. */
#define KEY_PROFILE_NAME "profd.profile.name"

#endif
