/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tracectx.h - trace and span IDs on the agent's samples: finds out which
 * processes publish a per-thread trace context, tells the BPF program
 * how to read it (struct profile_ctx_proc in the map "ctx_procs"), and
 * turns the raw contexts BPF sends (PROFILE_EV_CTX) into a sample's OTLP
 * link and attributes.
 *
 * Two publishers (docs/runtimes.md "Trace context" has the facts and sources):
 *   - Go: the current goroutine's pprof labels, which tracing
 *     integrations set with pprof.Do (span_id, trace_id, span_name). BPF
 *     follows TLS g -> g.m -> m.curg -> curg.labels; the labels are a
 *     map[string]string up to Go 1.23 and a sorted slice of {key, value}
 *     strings from Go 1.24 (runtime/pprof label.go of each version). The
 *     struct offsets come from the binary's DWARF (runtime.g, runtime.m)
 *     when it has some, else from a table keyed by the Go version in
 *     .go.buildinfo (measured on the two toolchains the tests build
 *     with). The g pointer sits 8 bytes below the thread pointer in
 *     binaries the Go linker linked itself (its TLS segment holds only
 *     that slot); a binary with other TLS is not read.
 *   - Any language: the OpenTelemetry thread context (OTEP 4947): a TLS
 *     pointer `otel_thread_ctx_v1` to a record {trace_id[16], span_id[8]
 *     (both big-endian), valid (u8, 1 = usable, written last), reserved,
 *     attrs_data_size (u16), attributes}. Found in the executable's own
 *     symbol tables (static TLS: its offset from the thread pointer
 *     follows from PT_TLS), else in a shared library the process has
 *     mapped: the library's dynamic relocation for the symbol names a GOT
 *     slot the loader filled in (agent_tracectx_tls_relocs), and that
 *     slot, read from the live process, says where the variable is
 *     (agent_tracectx_tls_locate): an offset from the thread pointer, or
 *     a TLS module ID and offset for a walk of the thread's DTV.
 *
 * What a sample gets: trace_id (32 hex digits) and span_id (16) labels,
 * or a valid OTel record, become its link (trace and span IDs; never
 * labels, so never series labels). The span_name label becomes the
 * attribute "span_name"; every other goroutine label becomes an
 * attribute of the same name, when the allow-list (NULL = all) has it.
 * Keys longer than PROFILE_CTX_KEY bytes are dropped (they would be cut
 * into another key), values are cut at PROFILE_CTX_VAL bytes; labels
 * that are not UTF-8 are dropped. At most PROFILE_CTX_LABELS labels, in
 * the order Go keeps them; trace_id and span_id are also looked for past
 * those (PROFILE_CTXF_GO_IDS: the event's ids), so more labels than are
 * read never lose the link.
 *
 * Not thread-safe: the collector's thread calls everything.
 */
#ifndef PROF_AGENT_TRACECTX_H
#define PROF_AGENT_TRACECTX_H

#include "base/compat.h"
#include "agent/bpf/profile.h"
#include "agent/interp.h"
#include "agent/procs.h"

#define AGENT_TRACECTX_ATTRS 11 /* span_name and the other labels */

/**
 * struct agent_tracectx_sample - one sample's context: @has_link when
 * @trace_id / @span_id are set (either may be all zero when only the other
 * was known); @attrs: @nattrs key/value pairs (NUL-terminated copies).
 */
struct agent_tracectx_sample {
	bool has_link;
	uint8_t trace_id[16], span_id[8];
	size_t nattrs;
	struct {
		char key[PROFILE_CTX_KEY + 1];
		char val[PROFILE_CTX_VAL + 1];
	} attrs[AGENT_TRACECTX_ATTRS];
};

/**
 * agent_tracectx_decode() - the sample context of raw event @e (as BPF
 * sent it: any bytes in its labels) into @out, keeping other labels whose
 * key is one of the @nallow names in @allow (@allow NULL: every label).
 * Never reads outside @e. Returns true when anything was found.
 */
bool agent_tracectx_decode(const struct profile_ctx_event *e, const char *const *allow,
			   size_t nallow, struct agent_tracectx_sample *out);

/**
 * agent_tracectx_go_version() - the Go version ("go1.19.8") in @n bytes of
 * a .go.buildinfo section @buf (the Go 1.18+ layout: the 14-byte magic
 * "\xff Go buildinf:", pointer size, flags with bit 1 = inline strings,
 * then at offset 32 a uvarint length and the version) into @out (@max
 * bytes, NUL-terminated). 0; -PROF_EFORMAT when it is not that layout or
 * the string does not fit in @buf; -E2BIG when it does not fit in @out.
 */
int agent_tracectx_go_version(const uint8_t *buf, size_t n, char *out, size_t max);

/**
 * agent_tracectx_go_table() - the struct offsets of Go @major.@minor from
 * the built-in table into @p (go_m, go_curg, go_labels, and
 * PROFILE_CTX_GO_MAP for Go <= 1.23). 0, or -ENOTSUP for a version it
 * does not hold.
 */
int agent_tracectx_go_table(int major, int minor, struct profile_ctx_proc *p);

/*
 * How a shared library's code reaches one of its TLS variables on x86-64,
 * by the dynamic relocation of the variable's GOT slot (x86-64 psABI
 * "Thread-Local Storage"; the TLSDESC slot is glibc's struct tlsdesc
 * {entry, arg}, sysdeps/x86_64/dl-tlsdesc.h and dl-machine.h):
 *   DESC  R_X86_64_TLSDESC (-mtls-dialect=gnu2): a 16-byte slot {entry,
 *         arg}; for a module in static TLS the loader sets entry to
 *         _dl_tlsdesc_return and arg to the variable's offset from the
 *         thread pointer (negative: variant II), else entry to
 *         _dl_tlsdesc_dynamic and arg to a struct tlsdesc_dynamic_arg
 *         whose head is {module ID, offset in the module's block}.
 *   IE    R_X86_64_TPOFF64 (initial-exec): the slot is the offset from
 *         the thread pointer.
 *   GD    R_X86_64_DTPMOD64 + R_X86_64_DTPOFF64 (the default dialect,
 *         __tls_get_addr): two slots, the module ID and the offset in
 *         its block.
 */
enum agent_tracectx_tls_kind {
	AGENT_TRACECTX_TLS_NONE,
	AGENT_TRACECTX_TLS_DESC,
	AGENT_TRACECTX_TLS_IE,
	AGENT_TRACECTX_TLS_GD,
};

/**
 * struct agent_tracectx_tlsref - a TLS variable's GOT slot(s) in a
 * library: @slot (the TLSDESC pair, the TPOFF64 slot, or GD's DTPMOD64
 * slot) and @slot_off (GD's DTPOFF64 slot), ELF virtual addresses;
 * @addend of the relocation.
 */
struct agent_tracectx_tlsref {
	enum agent_tracectx_tls_kind kind;
	uint64_t slot, slot_off;
	int64_t addend;
};

/**
 * agent_tracectx_tls_relocs() - the GOT slots of symbol index @sym among
 * the @n bytes of Elf64_Rela records @rela (host byte order, as libelf
 * gives them; a trailing partial record is ignored), merged into @ref: a
 * TLSDESC relocation wins over TPOFF64, which wins over a DTPMOD64 +
 * DTPOFF64 pair (GD is used only when both were seen). Call once per
 * relocation section with @ref zeroed first. Returns the kind @ref now
 * holds (AGENT_TRACECTX_TLS_NONE: none yet).
 */
enum agent_tracectx_tls_kind agent_tracectx_tls_relocs(const void *rela, size_t n, uint32_t sym,
						       struct agent_tracectx_tlsref *ref);

/**
 * agent_tracectx_tls_locate() - where the variable of @ref is in the live
 * process that @mem reads, the library loaded at @bias (runtime address =
 * ELF vaddr + @bias), the variable at @value (its st_value) in the
 * library's TLS segment: sets @p->otel_tls_off (and, for a DTV walk,
 * @p->otel_mod and PROFILE_CTX_OTEL_DTV in @p->flags; PROFILE_CTX_OTEL
 * always). What the slots hold is checked against @value + the addend
 * where the loader writes it (a DTPOFF64 slot, a dynamic TLSDESC's
 * offset): a slot not yet relocated is refused, not guessed at. 0;
 * -EFAULT when a slot cannot be read; -ENOENT when the slots do not hold
 * a usable location (a static offset that is not negative, a module ID
 * of 0 or above 65535, an offset that disagrees with @value).
 */
int agent_tracectx_tls_locate(const struct agent_tracectx_tlsref *ref, uint64_t bias,
			      uint64_t value, const struct agent_memreader *mem,
			      struct profile_ctx_proc *p);

/**
 * struct agent_tracectx_info - what agent_tracectx_inspect found in a
 * binary: @proc the BPF parameters (flags 0 = nothing to read); @go_version
 * ("" when not Go); @offsets_from "dwarf" or "table" for Go; @why a reason
 * when a publisher was found but cannot be read ("" otherwise). For use
 * as a shared library: @lib the GOT slots of a dynamic
 * otel_thread_ctx_v1 (kind NONE when it defines none), @lib_value its
 * st_value, @x_offset / @x_vaddr the p_offset / p_vaddr of the first
 * executable PT_LOAD (to find the load bias from a mapping of it);
 * @lib_path "" (agent_tracectx_check's own use).
 */
struct agent_tracectx_info {
	struct profile_ctx_proc proc;
	char go_version[32];
	const char *offsets_from;
	char why[96];
	struct agent_tracectx_tlsref lib;
	uint64_t lib_value, x_offset, x_vaddr;
	char lib_path[PROFILE_PATH_LEN]; /* set by agent_tracectx_check: the library read */
};

/**
 * agent_tracectx_inspect() - look at the ELF file @path for a Go runtime,
 * for an OpenTelemetry thread-context symbol of an executable, and for
 * the GOT slots of one in a shared library. 0 with @info filled
 * (info->proc.flags 0 when it publishes nothing readable as an
 * executable), -errno when the file cannot be opened, -PROF_EFORMAT
 * when it is not ELF.
 */
int agent_tracectx_inspect(const char *path, struct agent_tracectx_info *info);

/**
 * struct agent_tracectx_opts - @install / @remove put a process's
 * parameters into BPF and take them out (0 or -errno; @remove may be
 * NULL); @allow / @nallow the label allow-list (borrowed; NULL = all);
 * @ctx passed through.
 */
struct agent_tracectx_opts {
	int (*install)(void *ctx, uint32_t pid, const struct profile_ctx_proc *p);
	int (*remove)(void *ctx, uint32_t pid);
	const char *const *allow;
	size_t nallow;
	void *ctx;
};

/** struct agent_tracectx_stats - running totals since _new. */
struct agent_tracectx_stats {
	uint64_t procs_go, procs_otel; /* processes registered, by publisher */
	uint64_t procs_refused;	       /* publishers found that cannot be read */
	uint64_t events;	       /* contexts received */
	uint64_t samples;	       /* samples that got a context */
	uint64_t linked;	       /* ... of which with a link */
	uint64_t missed;	       /* contexts whose sample did not follow */
};

struct agent_tracectx;

/** agent_tracectx_new() - 0, -EINVAL (no @install). Caller frees with _free. */
int agent_tracectx_new(const struct agent_tracectx_opts *o, struct agent_tracectx **out);
/** agent_tracectx_free() - NULL ok. */
void agent_tracectx_free(struct agent_tracectx *tc);

/**
 * agent_tracectx_check() - the first time a sample of process @ap is seen
 * (and again after an exec), inspect its executable under
 * @proc_root/PID/root and, when that defines no OTel thread context, the
 * shared libraries its @proc_root/PID/maps has mapped then; register
 * the process when it publishes a context. A process found without one
 * has its libraries looked at again at a later sample, at most once a
 * second and 4 more times (CTX_LIB_TRIES): its first sample may come while the loader is
 * still at work, or before a library is dlopen'd (one dlopen'd later
 * than that is not seen). What a file publishes is cached by its identity (device,
 * inode, size, mtime; CTX_FILES files): a Go binary's DWARF costs ~30 ms
 * to read.
 */
void agent_tracectx_check(struct agent_tracectx *tc, struct agent_proc *ap, const char *proc_root);

/** agent_tracectx_forget() - process @pid exited or exec'd: drop what is known of it. */
void agent_tracectx_forget(struct agent_tracectx *tc, uint32_t pid);

/** agent_tracectx_add_event() - keep @ce (copied) for the sample of its thread and time. */
void agent_tracectx_add_event(struct agent_tracectx *tc, const struct profile_ctx_event *ce);

/**
 * agent_tracectx_take() - the decoded context sent for the sample of
 * thread @tid at @time_ns (event clock), or NULL when there was none.
 * Lent until the next call.
 */
const struct agent_tracectx_sample *agent_tracectx_take(struct agent_tracectx *tc, uint32_t tid,
							uint64_t time_ns);

/** agent_tracectx_get_stats() - copy the counters. */
void agent_tracectx_get_stats(const struct agent_tracectx *tc, struct agent_tracectx_stats *st);

#endif
