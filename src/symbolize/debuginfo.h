/* SPDX-License-Identifier: Apache-2.0 */
/*
 * debuginfo.h - the debuginfo store: ELF files kept by GNU build ID so
 * that frames recorded as addresses of stripped production binaries can
 * be named later (at query time, also for data ingested before the
 * upload).
 *
 * On disk (under the store directory, normally <data>/debuginfo):
 *
 *   <buildid>/debuginfo    the file with the best symbols seen for this
 *                          build ID (DWARF > Go pclntab > .symtab >
 *                          .dynsym): an unstripped binary or a separate
 *                          debug file (objcopy --only-keep-debug)
 *   <buildid>/executable   a file with the code itself (stripped or not),
 *                          for debuginfod's /executable; a hard link to
 *                          debuginfo when one upload serves both
 *   <buildid>/meta         "profd-debuginfo 1" then "key value" lines:
 *                          quality, executable_quality (sym_source_name
 *                          words), separate (0/1), updated_ns; written
 *                          last, by rename, so a crash leaves either the
 *                          old entry or the new one
 *   .tmp/                  uploads in flight (removed at open)
 *
 * <buildid> is lowercase hex. Quality is the best frame source the file
 * offers (enum sym_source); a file is separate when it has DWARF but no
 * code bits. An upload replaces the stored debuginfo only when its quality
 * is higher, and the stored executable only when there was none or the
 * new one's quality is higher: a stripped upload never blocks a later
 * full one, and a worse one never replaces a better one.
 *
 * Every file is checked before it is stored: ELF, not truncated (headers
 * and section bits inside the file), carrying a GNU build ID equal to the
 * one it is stored under. Thread-safe (one mutex serializes additions;
 * readers see whole files thanks to rename).
 */
#ifndef PROF_SYMBOLIZE_DEBUGINFO_H
#define PROF_SYMBOLIZE_DEBUGINFO_H

#include "base/compat.h"
#include "base/err.h"
#include "symbolize/frame.h"

#define SYM_BUILD_ID_MIN_HEX 8	 /* 4-byte IDs and longer */
#define SYM_BUILD_ID_MAX_HEX 128 /* 64-byte IDs */

struct sym_debuginfo;

/** enum sym_debuginfo_kind - the two files a build ID can have. */
enum sym_debuginfo_kind { SYM_DI_DEBUGINFO, SYM_DI_EXECUTABLE };

/**
 * struct sym_debuginfo_entry - what the store holds for one build ID.
 * Qualities are enum sym_source values (SYM_SRC_NONE when that file is
 * absent).
 */
struct sym_debuginfo_entry {
	char build_id[SYM_BUILD_ID_MAX_HEX + 1];
	bool has_debuginfo, has_executable;
	uint8_t quality;			  /* of debuginfo */
	uint8_t exec_quality;			  /* of executable */
	bool separate;				  /* debuginfo is a separate debug file */
	uint64_t debuginfo_size, executable_size; /* bytes */
	int64_t updated_ns;			  /* last change, unix ns */
};

/** enum sym_debuginfo_outcome - what sym_debuginfo_add did with a valid file. */
enum sym_debuginfo_outcome {
	SYM_DI_STORED,	 /* first file for this build ID */
	SYM_DI_UPGRADED, /* replaced (or added to) what was there */
	SYM_DI_KEPT,	 /* what was there is as good or better; nothing changed */
};

/**
 * sym_build_id_normalize() - check that @s is a build ID in hex (even
 * length, SYM_BUILD_ID_MIN_HEX..SYM_BUILD_ID_MAX_HEX digits, any case)
 * and write its lowercase form into @out (size >= SYM_BUILD_ID_MAX_HEX+1).
 * 0, or -EINVAL with @err saying what is wrong.
 */
int sym_build_id_normalize(const char *s, char *out, struct prof_err *err);

/**
 * sym_debuginfo_open() - use @dir as the store (created if missing; its
 * .tmp/ is emptied). *@out is the caller's. -errno when @dir cannot be
 * created or is not a directory.
 */
int sym_debuginfo_open(const char *dir, struct sym_debuginfo **out, struct prof_err *err);

/** sym_debuginfo_free() - NULL is allowed; files stay on disk. */
void sym_debuginfo_free(struct sym_debuginfo *s);

/**
 * sym_debuginfo_tmpfile() - a new empty file in the store's .tmp/ for an
 * upload in progress (so the final rename stays on one filesystem).
 * Returns its fd (O_RDWR, close-on-exec) and its path in @path (size
 * @pathsz), or -errno.
 */
int sym_debuginfo_tmpfile(struct sym_debuginfo *s, char *path, size_t pathsz);

/**
 * sym_debuginfo_add() - verify the complete file at @tmp_path (made by
 * sym_debuginfo_tmpfile) and store it under @build_id, or keep what is
 * there when that is as good. The temporary file is consumed (renamed or
 * removed) in every case. On success *@outcome says what happened and
 * @entry (optional) is the entry afterwards. Errors (nothing stored):
 * -EINVAL bad build ID, or the file's own build ID differs or is missing;
 * -PROF_EFORMAT not ELF; -PROF_ECORRUPT truncated or damaged ELF;
 * -errno on I/O failure. @err says which, in words fit for a 4xx reply.
 */
int sym_debuginfo_add(struct sym_debuginfo *s, const char *build_id, const char *tmp_path,
		      enum sym_debuginfo_outcome *outcome, struct sym_debuginfo_entry *entry,
		      struct prof_err *err);

/**
 * sym_debuginfo_get() - the entry for @build_id (any case) into @entry.
 * 0, -ENOENT when the store has nothing for it, -EINVAL for a malformed ID.
 */
int sym_debuginfo_get(struct sym_debuginfo *s, const char *build_id,
		      struct sym_debuginfo_entry *entry);

/**
 * sym_debuginfo_path() - path of the stored @kind file for @build_id into
 * @path (size @pathsz). 0 or -ENOENT (none stored, or -EINVAL).
 */
int sym_debuginfo_path(struct sym_debuginfo *s, const char *build_id, enum sym_debuginfo_kind kind,
		       char *path, size_t pathsz);

#endif
