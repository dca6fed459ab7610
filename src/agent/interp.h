/* SPDX-License-Identifier: Apache-2.0 */
/*
 * interp.h - interpreter frames in the agent's stacks: detection of the
 * runtimes a process runs, the per-process parameters the BPF walkers
 * need, naming the raw frames BPF sends from the process's memory, and
 * putting them in place among the native frames.
 *
 * Design (after the OpenTelemetry eBPF profiler and py-spy; docs/design.md
 * "Interpreter frames" and docs/runtimes.md have the facts):
 *   - Detection. When the collector first handles a sample of a process,
 *     and again whenever the process's mappings were re-read, each mapped
 *     file whose name a runtime recognises (python3.11, libpython3.11.so,
 *     libruby-3.1.so, php8.2, ...) is offered to that runtime's attach
 *     function, which reads the file's symbols and the version, checks
 *     the structure layout against the runtime's own introspection data
 *     where it has some, and returns the BPF parameters (struct
 *     profile_interp_proc: addresses of the interpreter's globals and
 *     structure offsets) and the runtime addresses of its interpreter
 *     loop. The parameters go into the BPF map "interp_procs" through
 *     the install callback; an exit or exec removes them.
 *   - Walking. For a registered process the sampling program tail-calls
 *     the runtime's BPF program, which walks the interpreter's own frame
 *     list (not the native stack: the interpreter keeps its frames on the
 *     heap) and sends per frame an object address, an instruction offset
 *     and a check value (PROFILE_EV_INTERP), just before the sample.
 *   - Naming. User space reads the objects with process_vm_readv
 *     (struct agent_memreader) when the sample is handled, decodes names,
 *     files and line tables, and caches them per process by address
 *     (bounded; an entry whose check value differs from the sample's is
 *     read again: the object was freed and its address reused).
 *   - Merging. The native stack, unwound in user space, keeps its order;
 *     each native frame inside the interpreter loop is replaced by the
 *     next run of interpreter frames, a run ending at a frame marked
 *     PROFILE_IF_ENTRY (the first frame that loop activation ran). So a
 *     stack reads native -> Python -> native (a C extension) -> Python in
 *     true order. Runs left when the native frames end (native unwinding
 *     stopped early) go at the root end.
 *   - Honest failure. A stack is named whole or not at all: when one
 *     frame cannot be read or fails its check, the sample keeps its
 *     native frames only and the reason is counted per executable and
 *     version (agent_interp_stats); a process whose version or build is
 *     not supported is never registered, and is counted too.
 *
 * Not thread-safe: the collector's thread calls everything.
 */
#ifndef PROF_AGENT_INTERP_H
#define PROF_AGENT_INTERP_H

#include "base/compat.h"
#include "agent/bpf/profile.h"
#include "agent/procs.h"

/**
 * struct agent_memreader - reads another process's memory: @read copies
 * @len bytes at @addr into @buf, all or nothing; 0 or -errno (-EFAULT
 * for an unmapped address, -ESRCH when the process is gone). Tests and
 * fuzz targets read from a buffer instead.
 */
struct agent_memreader {
	int (*read)(void *ctx, uint64_t addr, void *buf, size_t len);
	void *ctx;
};

/** agent_procmem_read() - a memreader read for pid (uintptr_t)@ctx with process_vm_readv. */
int agent_procmem_read(void *ctx, uint64_t addr, void *buf, size_t len);

/**
 * agent_proc_gone() - whether process @pid has exited: no /proc entry, or
 * a zombie or dead task (state Z or X in /proc/PID/stat, whose memory is
 * gone). Used after a failed read to tell an exit race from a reader
 * failure; reads one small file.
 */
bool agent_proc_gone(uint32_t pid);

/**
 * agent_mem_read_str() - a NUL-terminated string of at most @max - 1
 * bytes at @addr into @out (@max >= 1), read in pieces so a string near
 * the end of a mapping is still found. 0, -EFAULT, or -E2BIG when no NUL
 * came within @max - 1 bytes (@out then holds those bytes, terminated).
 */
int agent_mem_read_str(const struct agent_memreader *m, uint64_t addr, char *out, size_t max);

/**
 * struct agent_interp_sym - one symbol wanted from an ELF file: @name in;
 * @found, @value (st_value, an ELF virtual address) and @size out.
 */
struct agent_interp_sym {
	const char *name;
	bool found;
	uint64_t value, size;
};

/**
 * agent_interp_elf_symbols() - look up @n symbols of @path by name in
 * .dynsym and .symtab (the first definition found wins). 0 when the file
 * was read (each symbol's @found says whether it is there), -errno when
 * it cannot be opened, -PROF_EFORMAT when it is not ELF.
 */
int agent_interp_elf_symbols(const char *path, struct agent_interp_sym *syms, size_t n);

/**
 * agent_interp_elf_fde() - the code range [*@lo, *@hi) (ELF virtual
 * addresses) of the .eh_frame FDE of @path that covers @vaddr, from the
 * sorted table of .eh_frame_hdr: from the FDE's initial location up to
 * the next FDE's (so padding after the function is included). 0; -ENOENT
 * when no FDE starts at or before @vaddr or it is the last; -ENOTSUP for
 * a table encoding other than the usual (pcrel sdata4 pointer, udata4
 * count, datarel sdata4 entries); -errno or -PROF_EFORMAT for the file.
 */
int agent_interp_elf_fde(const char *path, uint64_t vaddr, uint64_t *lo, uint64_t *hi);

#define AGENT_INTERP_LOOPS 3 /* interpreter-loop ranges per process (hot and .cold parts, core) */

/**
 * struct agent_interp_range - runtime addresses [@lo, @hi) of
 * interpreter-loop code. @inner: code that only a loop range's function
 * calls to run that same activation's frames (Ruby's vm_exec_core under
 * rb_vm_exec): a native frame in it and the loop frame right root-side
 * of it are one activation, replaced by one run.
 */
struct agent_interp_range {
	uint64_t lo, hi;
	bool inner;
};

/**
 * struct agent_interp_attach - what a runtime's attach returns: @bpf the
 * BPF walker's parameters (runtime set), @loops the interpreter-loop
 * ranges (@nloops), @version ("3.11.2"), @priv the runtime's own state
 * for naming (freed with its ops' free).
 */
struct agent_interp_attach {
	struct profile_interp_proc bpf;
	struct agent_interp_range loops[AGENT_INTERP_LOOPS];
	size_t nloops;
	char version[32];
	void *priv;
};

/**
 * struct agent_interp_name - one named frame. From @name_frame, strings
 * are lent until the next naming call for the same process; in a struct
 * agent_interp_stack they are its own. @line 0 = unknown;
 * @start_line: the function's first line, 0 = unknown.
 */
struct agent_interp_name {
	const char *function, *file;
	int64_t line, start_line;
};

/**
 * struct agent_interp_ops - one runtime.
 * @name:       its frame type (OpenTelemetry profile.frame.type): "cpython", "ruby", "php"
 * @runtime:    enum profile_runtime
 * @match:      whether a mapped file's base name may hold this runtime
 * @attach:     read the file (@path, opened by the agent; @bias: runtime
 *              address = ELF vaddr + @bias) and, through @mem, the
 *              process; fill @out. 0; -ENOENT when the file is not the
 *              runtime after all (no interpreter symbols: try the next
 *              file); -ENOTSUP for a version or build not supported
 *              (@out->version says which, when known); other -errno.
 * @name_frame: name frame @f of a stack from @mem; 0, -EFAULT (memory
 *              unreadable), -ESTALE (the check value does not match:
 *              the object is not the one sampled), -PROF_ECORRUPT (the
 *              object's fields make no sense).
 * @free:       release @priv (NULL ok).
 */
struct agent_interp_ops {
	const char *name;
	enum profile_runtime runtime;
	bool (*match)(const char *basename);
	int (*attach)(const char *path, uint64_t bias, const struct agent_memreader *mem,
		      struct agent_interp_attach *out);
	int (*name_frame)(void *priv, const struct agent_memreader *mem,
			  const struct profile_interp_frame *f, struct agent_interp_name *out);
	void (*free)(void *priv);
};

/* The runtimes (interp_python.c, interp_ruby.c, interp_php.c). */
extern const struct agent_interp_ops agent_interp_python;
extern const struct agent_interp_ops agent_interp_ruby;
extern const struct agent_interp_ops agent_interp_php;

/**
 * struct agent_interp_opts - @install / @remove put and take a process's
 * parameters in the BPF map (agent_sampler_interp_set / _del); either may
 * be NULL (tests). @max_procs: processes with a runtime tracked at once
 * (0 = 4096); @cache_entries: named objects cached per process (0 = 1024).
 */
struct agent_interp_opts {
	int (*install)(void *ctx, uint32_t pid, const struct profile_interp_proc *p);
	int (*remove)(void *ctx, uint32_t pid);
	void *ctx;
	size_t max_procs;
	size_t cache_entries;
};

struct agent_interp;

/** agent_interp_new() - 0 or -EINVAL. Caller frees with agent_interp_free. */
int agent_interp_new(const struct agent_interp_opts *opts, struct agent_interp **out);
/** agent_interp_free() - forget every process (removing nothing from BPF); NULL ok. */
void agent_interp_free(struct agent_interp *ip);

/**
 * agent_interp_check() - detect the runtime of process @ap (its mappings
 * read by the caller) when not done for its current mappings generation.
 * @root: where its files are opened ("/proc/PID/root", or "" for the
 * agent's own view). Cheap when nothing changed.
 */
void agent_interp_check(struct agent_interp *ip, struct agent_proc *ap, const char *root);

/**
 * agent_interp_unsupported() - why process @pid's interpreter frames are
 * not named ("cpython 3.13.0: interpreter frames not supported"), when
 * its runtime was found and refused; NULL otherwise. Lent until the next
 * call. The collector sends it as the resource attribute
 * AGENT_INTERP_UNSUPPORTED_ATTR, so stack health can say it.
 */
const char *agent_interp_unsupported(const struct agent_interp *ip, uint32_t pid);

#define AGENT_INTERP_UNSUPPORTED_ATTR "profd.interpreter.unsupported"

/** agent_interp_forget() - process @pid exited or exec'd: drop its state and its BPF entry. */
void agent_interp_forget(struct agent_interp *ip, uint32_t pid);

/**
 * agent_interp_add_event() - keep interpreter stack @ie (sent just before
 * its sample) until agent_interp_take for the same thread and time; a
 * slot reused before that loses it (counted).
 */
void agent_interp_add_event(struct agent_interp *ip, const struct profile_interp_event *ie);

/** One frame of a merged stack: a native pc (@native true) or a named interpreter frame. */
struct agent_interp_item {
	bool native;
	uint32_t index; /* into the native pcs, or into the named frames */
};

#define AGENT_INTERP_MAX_ITEMS (2 * PROFILE_MAX_FRAMES + PROFILE_INTERP_MAX_FRAMES)

/**
 * struct agent_interp_stack - a sample's merged user stack, leaf first:
 * @items (@n) over the caller's native pcs and @names (@nnames, lent
 * until the next agent_interp_take), @frame_type of the named frames.
 */
#define AGENT_INTERP_NAME_MAX 256 /* longer names and files are cut */

struct agent_interp_stack {
	struct agent_interp_item items[AGENT_INTERP_MAX_ITEMS];
	size_t n;
	struct agent_interp_name names[PROFILE_INTERP_MAX_FRAMES];
	size_t nnames;
	const char *frame_type;
	bool truncated; /* the interpreter's walk stopped before its bottom frame (too deep, unreadable) */
	char strs[PROFILE_INTERP_MAX_FRAMES][2][AGENT_INTERP_NAME_MAX]; /* names' strings */
};

/**
 * agent_interp_take() - the merged stack of the sample of thread @tid at
 * @time_ns of process @ap, whose native user frames are @pcs (@npcs, leaf
 * first, as the collector will use them: return addresses not yet
 * stepped back). Returns true and fills @out when the process runs a
 * registered runtime and its interpreter frames for this sample were all
 * named; false otherwise (use the native frames as they are; why is
 * counted).
 */
bool agent_interp_take(struct agent_interp *ip, const struct agent_proc *ap, uint32_t tid,
		       uint64_t time_ns, const uint64_t *pcs, size_t npcs,
		       struct agent_interp_stack *out);

/**
 * agent_interp_merge() - the merge rule alone (see the top): native pcs
 * @pcs (@npcs, leaf first; non-leaf ones are return addresses, looked up
 * one byte back), interpreter-loop ranges @loops (@nloops), interpreter
 * frame flags @flags (@nframes, leaf first, PROFILE_IF_ENTRY ends a run).
 * A frame in an @inner range that took a run and a loop frame (not
 * inner) right after it take that one run together.
 * Writes at most @max items to @out; returns how many.
 */
size_t agent_interp_merge(const uint64_t *pcs, size_t npcs, const struct agent_interp_range *loops,
			  size_t nloops, const uint32_t *flags, size_t nframes,
			  struct agent_interp_item *out, size_t max);

#define AGENT_INTERP_MAX_STATS 64

/**
 * struct agent_interp_stats - one (runtime, executable, version) since
 * the start: @procs attached (or refused, for @supported false), and its
 * samples: @samples with interpreter frames sent, @named merged with all
 * frames named, @read_failed (memory unreadable when named while the
 * process lived: it unmapped it), @exited (unreadable because the process
 * had exited before its samples were named), @stale (a frame's check value did not match),
 * @corrupt (fields that make no sense), @no_event (an interpreter-loop
 * frame but no interpreter stack: the thread had no state yet, or the
 * event was lost), @frames_named. @supported false: @reason says why
 * ("interpreter frames not supported").
 */
struct agent_interp_stats {
	char runtime[16], exe[64], version[32];
	bool supported;
	char reason[96];
	uint64_t procs, samples, named, read_failed, exited, stale, corrupt, no_event;
	uint64_t frames_named;
};

/** agent_interp_get_stats() - copy up to @max entries into @out; returns how many. */
size_t agent_interp_get_stats(const struct agent_interp *ip, struct agent_interp_stats *out,
			      size_t max);

#endif
