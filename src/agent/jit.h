/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jit.h - frames of JIT runtimes (HotSpot, V8) in the agent's stacks,
 * with no flag in the target: code regions per process, one unwinding
 * step per frame in JIT code, and names read from the runtime's memory.
 *
 * Design (after the OpenTelemetry eBPF profiler's hotspot and v8
 * unwinders; docs/runtimes.md has the facts). Unlike the interpreters
 * (interp.h), whose frames live on the heap and must be walked in BPF
 * in the tick, a JIT runtime's frames are native frames on the thread
 * stack: the stack copy each sample carries (unwind.h) holds them, with
 * the slots that say which method a frame runs (HotSpot: the Method* of
 * an interpreted frame; V8: the JSFunction of every JavaScript frame).
 * So the work is all in user space, in the native unwinder:
 *   - Detection. When the collector first handles a sample of a process,
 *     and again whenever its mappings were re-read, each mapped file a
 *     runtime's @match accepts (libjvm.so, node) is offered to its
 *     @attach, which reads the runtime's own introspection data (HotSpot:
 *     the exported gHotSpotVMStructs / gHotSpotVMTypes tables; V8: the
 *     v8dbg_* post-mortem constants in the node binary) for the structure
 *     offsets, never hard-coded per build.
 *   - Regions. A runtime claims the pcs of the process's anonymous
 *     executable mappings (the code cache, V8's code space) and the
 *     ranges its attach returned (V8's embedded builtins inside node's
 *     text, which have no CFI).
 *   - Stepping. The unwinder (unwind.c) asks the runtime at each frame
 *     whose pc it claims; the runtime unwinds that frame itself (HotSpot's
 *     compiled code keeps no frame pointer: the frame size comes from the
 *     code blob; V8 code keeps rbp) from the stack copy and the process's
 *     memory, and returns the caller's registers and a raw frame: an
 *     object address, an offset in it and a check value, as BPF does for
 *     the interpreters. A pc a runtime claims but cannot step falls back
 *     to one frame-pointer step, as before.
 *   - Naming. The collector names each raw frame (@name_frame) from the
 *     process's memory: one or more frames (inlined methods first), with
 *     the runtime's frame type (OpenTelemetry profile.frame.type "jvm",
 *     "v8js"); a frame that is the runtime's own code (a stub, a
 *     builtin) is named by what the runtime calls it. A frame that cannot
 *     be named keeps its native name ([jit] or the perf map's), and the
 *     reason is counted per executable and version.
 *
 * Not thread-safe: the collector's thread calls everything.
 */
#ifndef PROF_AGENT_JIT_H
#define PROF_AGENT_JIT_H

#include "base/compat.h"
#include "agent/interp.h"
#include "agent/procs.h"

/** struct agent_jit_regs - the registers of one frame: @pc, @sp, @bp (@bp_ok: @bp is known). */
struct agent_jit_regs {
	uint64_t pc, sp, bp;
	bool bp_ok;
};

/**
 * struct agent_jit_stack - the copy of the thread's stack the sample
 * carries: @len bytes from runtime address @base (the sampled rsp).
 * Reads outside it go to the process's memory (struct agent_memreader),
 * which may have changed since the tick. @r13: the sampled thread's r13
 * at the tick, for the leaf frame only.
 */
struct agent_jit_stack {
	uint64_t base;
	uint32_t len;
	const uint8_t *bytes;
	uint64_t r13; /* the sampled frame's r13 (0 = not known): HotSpot's live bcp */
};

/**
 * agent_jit_stack_read() - the 8-byte word at runtime address @addr of
 * @stk into *@out. 0; -ERANGE when it is not in the copy.
 */
int agent_jit_stack_read(const struct agent_jit_stack *stk, uint64_t addr, uint64_t *out);

/*
 * Frame kinds a runtime's step returns (struct agent_jit_frame @kind);
 * 0 = a native frame (no JIT frame here).
 */
enum agent_jit_kind {
	AGENT_JIT_NONE = 0,
	AGENT_JIT_INTERPRETED = 1, /* @obj: the method / function; @offset: bytecode index */
	AGENT_JIT_COMPILED = 2,	   /* @obj: the compiled code object; @offset: pc - code start */
	AGENT_JIT_STUB = 3,	   /* @obj: the runtime's own code object (stub, builtin) */
};

/**
 * struct agent_jit_frame - one raw JIT frame: @kind, @obj (an address in
 * the process), @offset (bytecode index or pc offset), @check (a value
 * read at the tick from the object or the frame, that naming compares
 * with the object's: HotSpot's compile id, ...; 0 = none), @aux
 * (runtime-defined, e.g. V8's JSFunction when @obj is its shared info).
 */
struct agent_jit_frame {
	uint32_t kind;
	uint32_t flags;
	uint64_t obj, offset, check, aux;
};

#define AGENT_JIT_RANGES 4

/**
 * struct agent_jit_attach - what a runtime's attach returns: @ranges
 * (@nranges, runtime addresses [lo, hi) in the attached file's mapping)
 * of code it unwinds besides anonymous executable mappings (the same ELF
 * addresses in another mapping of that file are claimed too: V8 maps its
 * embedded builtins a second time), @version ("17.0.15"), @priv its own
 * state (freed with its ops' free). @anon_exec: it claims the pcs of
 * every anonymous executable mapping of the process.
 */
struct agent_jit_attach {
	struct agent_interp_range ranges[AGENT_JIT_RANGES];
	size_t nranges;
	bool anon_exec;
	char version[32];
	void *priv;
};

#define AGENT_JIT_MAX_INLINE 16 /* frames one raw frame may name (inlined methods) */

/**
 * struct agent_jit_ops - one runtime.
 * @name:       its frame type: "jvm", "v8js"
 * @match:      whether a mapped file's base name may hold this runtime
 * @attach:     read the file (@path, opened by the agent; @bias: runtime
 *              address = ELF vaddr + @bias) and, through @mem, the
 *              process; fill @out. 0; -ENOENT when the file is not the
 *              runtime after all; -EAGAIN when the runtime is not ready
 *              yet (tables not initialised: asked again on a later
 *              sample); -ENOTSUP for a version or build not supported
 *              (@out->version says which, when known); other -errno.
 * @step:       unwind the frame with registers @r (@leaf: the sampled
 *              frame, its pc exact; else a return address) from @stk
 *              and @mem (a non-leaf @r->pc is a return address: look
 *              up @r->pc - 1): fill @caller with the caller's registers and
 *              @f with the raw frame (@f->kind AGENT_JIT_NONE when the pc
 *              is the runtime's but names nothing). 0; -ENOENT when @r's
 *              pc is not in the runtime's code after all; -EFAULT, -ERANGE
 *              or -PROF_ECORRUPT when the frame cannot be unwound.
 * @name_frame: name @f from @mem into @out (at most @max, leaf first:
 *              the innermost inlined method first). Returns how many
 *              (>= 1), or -EFAULT (memory unreadable), -ESTALE (the check
 *              value does not match: not the object sampled),
 *              -PROF_ECORRUPT (fields that make no sense). Strings are
 *              lent until the next call for the same process.
 * @free:       release @priv (NULL ok).
 */
struct agent_jit_ops {
	const char *name;
	bool (*match)(const char *basename);
	int (*attach)(const char *path, uint64_t bias, const struct agent_memreader *mem,
		      struct agent_jit_attach *out);
	int (*step)(void *priv, const struct agent_memreader *mem,
		    const struct agent_jit_stack *stk, const struct agent_jit_regs *r, bool leaf,
		    struct agent_jit_regs *caller, struct agent_jit_frame *f);
	int (*name_frame)(void *priv, const struct agent_memreader *mem,
			  const struct agent_jit_frame *f, struct agent_interp_name *out,
			  size_t max);
	void (*free)(void *priv);
};

/* The runtimes (jit_hotspot.c, jit_v8.c). */
extern const struct agent_jit_ops agent_jit_hotspot;
extern const struct agent_jit_ops agent_jit_v8;

/**
 * struct agent_jit_opts - @max_procs: processes with a JIT runtime
 * tracked at once (0 = 4096); @ops / @nops: the runtimes (NULL = both).
 */
struct agent_jit_opts {
	size_t max_procs;
	const struct agent_jit_ops *const *ops;
	size_t nops;
};

struct agent_jit;

/** agent_jit_new() - 0 or -EINVAL. Caller frees with agent_jit_free. */
int agent_jit_new(const struct agent_jit_opts *opts, struct agent_jit **out);
/** agent_jit_free() - forget every process; NULL ok. */
void agent_jit_free(struct agent_jit *j);

/**
 * agent_jit_check() - detect the JIT runtime of process @ap when not done
 * for its current mappings generation (a runtime not ready is asked
 * again at most once a second). @root: where its files are opened
 * ("/proc/PID/root", or "" for the agent's own view). Cheap when nothing
 * changed.
 */
void agent_jit_check(struct agent_jit *j, struct agent_proc *ap, const char *root, int64_t now_ns);

/** agent_jit_forget() - process @pid exited or exec'd: drop its state. */
void agent_jit_forget(struct agent_jit *j, uint32_t pid);

/** agent_jit_has() - whether process @pid has a JIT runtime attached (@j NULL ok). */
bool agent_jit_has(const struct agent_jit *j, uint32_t pid);

/**
 * agent_jit_step() - for the unwinder: when process @ap runs a JIT
 * runtime that claims @r's pc (@m: the mapping holding it, NULL when
 * none), that runtime's step (see agent_jit_ops). -ENOENT when no
 * runtime claims the pc.
 */
int agent_jit_step(struct agent_jit *j, const struct agent_proc *ap, const struct agent_map *m,
		   const struct agent_jit_stack *stk, const struct agent_jit_regs *r, bool leaf,
		   struct agent_jit_regs *caller, struct agent_jit_frame *f);

/**
 * agent_jit_name() - name raw frame @f of process @ap (see @name_frame).
 * *@frame_type gets the runtime's frame type (static). Counts the result
 * per runtime, executable and version.
 */
int agent_jit_name(struct agent_jit *j, const struct agent_proc *ap,
		   const struct agent_jit_frame *f, struct agent_interp_name *out, size_t max,
		   const char **frame_type);

/**
 * struct agent_jit_stats - one (runtime, executable, version) since the
 * start: @procs attached (or refused, for @supported false, @reason
 * why), @frames stepped, @step_failed (claimed but not unwound: fell
 * back to the frame pointer), and of the frames named: @named, @stale
 * (check value did not match), @read_failed (while the process lived),
 * @exited (unreadable because the process had exited before its samples
 * were named), @corrupt. @samples: samples
 * with at least one frame in the runtime's code; @samples_named: those
 * whose every such frame was named (none left "[jit]").
 */
struct agent_jit_stats {
	char runtime[16], exe[64], version[32];
	bool supported;
	char reason[96];
	uint64_t procs, frames, step_failed, named, stale, read_failed, exited, corrupt;
	uint64_t samples, samples_named;
};

/**
 * agent_jit_count_sample() - the collector made a sample of process
 * @pid with frames in its JIT runtime's code: @all_named tells whether
 * every one of them was named. No-op when @pid has no runtime attached.
 */
void agent_jit_count_sample(struct agent_jit *j, uint32_t pid, bool all_named);

/** agent_jit_get_stats() - copy up to @max entries into @out; returns how many. */
size_t agent_jit_get_stats(const struct agent_jit *j, struct agent_jit_stats *out, size_t max);

/**
 * agent_jit_unsupported() - why process @pid's JIT frames are not named
 * ("jvm 11.0.2: ..."), when its runtime was found and refused; NULL
 * otherwise. Lent until the next call.
 */
const char *agent_jit_unsupported(const struct agent_jit *j, uint32_t pid);

#endif
