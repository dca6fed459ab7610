/* SPDX-License-Identifier: Apache-2.0 */
/*
 * procs.h - what the agent knows about each process it samples, cached
 * per pid across export intervals: executable path and name, command
 * line (opt-in), container id and pod UID (container.h), its pid in its
 * own PID namespace, its executable mappings (procmaps.h) and its JIT
 * symbols (perfmap.h).
 *
 * Lifecycle of an entry:
 *   - created by agent_procs_on_exec, from the kernel's exec event (which
 *     the BPF program delivers with an immediate wake-up), reading only
 *     the cheap facts at once: the executable link, status, cgroup (and
 *     command line); the exec'd file name and the comm are kept as
 *     fallbacks. Such reads are rate limited (max_exec_reads per second):
 *     a build host execs hundreds of processes a second, most never
 *     sampled;
 *   - or by agent_procs_get on the first sample of a pid never seen;
 *   - the mappings are read from /proc/PID/maps when the first sample of
 *     the process is handled. When the process is gone by then (it lived a
 *     few milliseconds), they are rebuilt from what the kernel sent while
 *     it lived: the dynamic loader's link map (PROFILE_EV_LIBS: path and
 *     load bias of the executable and each library, from a uprobe on
 *     ld.so's debugger hook) or, for a static executable, its start_code
 *     from the exec event; each file's executable PT_LOAD segments give the
 *     ranges. So a short-lived process's frames in its executable and in
 *     libc still resolve;
 *   - each entry knows the image it describes (start and end of code,
 *     from /proc/PID/stat or the exec event); agent_procs_get_image
 *     checks a sample's image against it: a sample of an image the
 *     process has left since (it exec'd before the sample was read, and
 *     /proc shows the new one) is refused, and an entry older than the
 *     sample's image (an exec event lost, or skipped because the new
 *     executable is excluded) is read again;
 *   - a process gone before it was read, of which nothing was known (a
 *     forked child that never exec'd), takes the names and mappings of a
 *     live entry with its exact image (its parent or a sibling: fork
 *     copies the address space);
 *   - when the main thread exited before the others, /proc/PID shows no
 *     executable, maps or root any more: the entry is read through a
 *     live thread's /proc/PID/task/TID instead (the last sampled one);
 *   - marked dead by agent_procs_on_exit, when the last thread exits
 *     (events arrive in order, so the samples before came first) and
 *     freed by agent_procs_tick a little later. Samples of that last
 *     thread tearing the process down (no mm, or still the same image)
 *     keep using the dead entry; any other sample for a dead pid means
 *     the pid was reused and makes a new entry;
 *   - entries unused for AGENT_PROCS_IDLE_NS are freed by tick too (they
 *     are read again if the process shows up), and at max_procs the least
 *     recently used entry makes room.
 * Maps are re-read when a frame falls outside every known mapping (new
 * code: dlopen, JIT), at most once a second per process. The perf map is
 * looked for under the process's root (/proc/PID/root/tmp/perf-NSPID.map,
 * so it works for containers) when a frame is in anonymous executable
 * memory, and reloaded when its size or mtime changed, at most once a
 * second.
 *
 * Entries are lent until the next call that may create or free entries
 * (get, on_exec, tick). Not thread-safe.
 */
#ifndef PROF_AGENT_PROCS_H
#define PROF_AGENT_PROCS_H

#include "base/compat.h"
#include "agent/bpf/profile.h"
#include "agent/container.h"
#include "agent/elfinfo.h"
#include "agent/perfmap.h"
#include "agent/procmaps.h"

#define AGENT_PROCS_REREAD_NS 1000000000LL  /* maps / perf map re-reads: 1 s */
#define AGENT_PROCS_DEAD_NS   2000000000LL  /* keep dead entries 2 s */
#define AGENT_PROCS_IDLE_NS   60000000000LL /* free entries unused for 60 s */

/**
 * struct agent_procs_opts - @proc_root: "/proc" (tests may point
 * elsewhere); @elfcache: build ID cache, borrowed; @command_line: read
 * /proc/PID/cmdline; @max_procs: entries (0 = 8192); @max_exec_reads:
 * eager /proc reads at exec per second (0 = 200); @perfmap_max_bytes:
 * largest perf map read (0 = 64 MiB).
 */
struct agent_procs_opts {
	const char *proc_root;
	struct agent_elfinfo_cache *elfcache;
	bool command_line;
	size_t max_procs;
	unsigned max_exec_reads;
	size_t perfmap_max_bytes;
};

/**
 * struct agent_proc - one process. Strings are owned by the entry, never
 * NULL ("" when unknown) except @cmdline (NULL unless asked for).
 * @exe_name: basename of /proc/PID/exe, else of the exec'd file, else
 * the main thread's comm, else the comm of the first sample's thread.
 */
struct agent_proc {
	uint32_t pid;
	uint32_t vpid; /* pid in its innermost PID namespace, 0 = unknown */
	char *exe_path;
	char *exe_name;
	char *cmdline;
	char service[AGENT_SERVICE_LEN]; /* OTEL_SERVICE_NAME (agent_environ_service), or "" */
	struct agent_container ctr;
	bool from_exec;	    /* created from an exec event */
	bool attrs_read;    /* /proc was read (else names from the exec event only) */
	bool inherit_tried; /* looked for its parent's entry (gone, unknown fork child) */
	bool dead;
	int64_t used_ns, dead_ns; /* event clock (CLOCK_MONOTONIC ns) */
	/*
	 * The image this entry describes (bpf/profile.h struct profile_image)
	 * from /proc/PID/stat when it was read, else from the exec event; 0 =
	 * unknown. @image_ns: CLOCK_MONOTONIC when it was taken (the clock of
	 * the event times).
	 */
	struct profile_image img;
	int64_t image_ns;
	bool img_in_exec;  /* read during an exec: names of the new image, image not set yet */
	uint32_t last_tid; /* the thread of the last sample */
	uint32_t mnt_ns, exe_dev; /* from the exec event (struct agent_exec), 0 = unknown */
	uint64_t exe_ino;
	uint32_t via_tid; /* 0: read /proc/PID; else /proc/PID/task/TID (main thread gone) */
	struct agent_proc_lib {
		uint64_t bias;
		char *path; /* owned; "" = the executable */
	} * libs;	    /* the loader's last link map, until the maps are read */
	size_t nlibs;

	struct agent_procmaps maps;
	int maps_rc;	      /* result of the last maps read */
	int64_t maps_read_ns; /* event clock of the last read, 0 = never read */
	uint64_t maps_gen;    /* changes at every successful maps read (unique across entries) */

	struct agent_perfmap perfmap;
	int perfmap_rc;		 /* last load: 1/0 ok, -errno */
	int64_t perfmap_read_ns; /* 0 = never looked */

	int64_t first_ns;     /* event clock when the entry was created */
	uint64_t unwind_user; /* free for the caller */
};

/** struct agent_procs_stats - counters since _new. */
struct agent_procs_stats {
	uint64_t created;	/* entries made */
	uint64_t exec_reads;	/* /proc reads at exec */
	uint64_t exec_skipped;	/* exec events past the rate limit */
	uint64_t maps_rebuilt;	/* gone processes whose maps were rebuilt from events */
	uint64_t maps_reads;	/* /proc/PID/maps reads */
	uint64_t maps_failed;	/* maps reads that failed (process gone) */
	uint64_t evicted;	/* entries freed to respect max_procs */
	uint64_t perfmap_loads; /* perf map (re)loads */
	uint64_t libs_events;	/* link-map events handled */
	uint64_t libs_mapped;	/* mappings added from them (not yet seen in /proc) */
	uint64_t image_rereads; /* entries read again for a sample of a newer image */
	uint64_t exec_relative; /* relative exec'd names found in the parent's directory */
	uint64_t inherited;	/* gone forked children given their parent's names and maps */
	uint64_t stale_image; /* samples refused: their image was replaced before they were read */
	uint64_t entries;     /* entries now */
};

struct agent_procs;

/** agent_procs_new() - empty cache; 0 or -EINVAL (no elfcache). Caller frees. */
int agent_procs_new(const struct agent_procs_opts *opts, struct agent_procs **out);
/** agent_procs_free() - free every entry; NULL ok. */
void agent_procs_free(struct agent_procs *ps);

/**
 * agent_procs_get() - the live entry for @pid, created (reading /proc)
 * when absent or dead. @comm is the sampled thread's name (fallback for
 * the executable name); @now_ns the event's CLOCK_MONOTONIC time.
 * Returns NULL only when the cache cannot make room (never in practice:
 * the least recently used entry is evicted).
 */
struct agent_proc *agent_procs_get(struct agent_procs *ps, uint32_t pid, const char *comm,
				   int64_t now_ns);

/**
 * agent_stat_image() - a process's image (struct profile_image) from
 * @len bytes of its /proc/PID/stat (proc(5): fields 26 startcode, 27
 * endcode, 47 start_brk, counted from 1; field 2, the comm in
 * parentheses, may hold spaces and parentheses, so fields are counted
 * after the last ')'). start_brk is 0 when the line stops before it
 * (kernels before 3.3). All 0 when the kernel hid them (it shows 1
 * without ptrace access) or the process has no mm. 0, or -EINVAL when
 * the text is not a stat line.
 */
int agent_stat_image(const char *stat, size_t len, struct profile_image *img);

/**
 * agent_procs_get_image() - agent_procs_get for a sample of image @img
 * taken at @now_ns on thread @tid (struct profile_event; @img NULL for a
 * kernel thread; a part 0 = unknown, which matches anything). NULL when
 * the sample's image is not the one the process runs now and the entry
 * was read after the sample: the process exec'd in between, and what
 * /proc says (names, mappings, container) is about the new image
 * (counted in stats.stale_image). An entry read before the sample that
 * describes another image is read again first (stats.image_rereads).
 */
struct agent_proc *agent_procs_get_image(struct agent_procs *ps, uint32_t pid, uint32_t tid,
					 const char *comm, int64_t now_ns,
					 const struct profile_image *img);

/**
 * struct agent_exec - what the kernel's exec event says (bpf/profile.h
 * struct profile_proc_event): @filename the path given to execve (may be
 * relative), @comm the new comm, @img the new image, @ppid the parent's
 * pid, @exe_ino and @exe_dev the executable's inode and device (kernel
 * dev_t, major << 20 | minor), @mnt_ns its mount namespace; 0 / NULL =
 * unknown. When the process is gone before /proc/PID/root can be read,
 * its files are looked up by path in the agent's own mount namespace
 * only if it is the process's too, and its executable only if the
 * inode and device match.
 */
struct agent_exec {
	const char *filename, *comm;
	struct profile_image img;
	uint32_t ppid, exe_dev;
	uint64_t exe_ino;
	uint32_t mnt_ns; /* inode of its mount namespace */
};

/**
 * agent_procs_on_exec() - a process called execve: forget the old image,
 * read its cheap /proc facts now. A relative @ex->filename is looked up
 * in the parent's working directory (/proc/PPID/cwd: the child inherits
 * it) and kept as the executable's path when that file is the exec'd one
 * (same inode and device), for a process gone before /proc is read.
 */
void agent_procs_on_exec(struct agent_procs *ps, uint32_t pid, const struct agent_exec *ex,
			 int64_t now_ns);
/**
 * agent_procs_on_libs() - the loader's list of objects for process
 * le->pid (see above): kept for a later rebuild, or, when the maps were
 * read already, its ranges /proc did not show are added now. The event
 * is input: names are terminated and checked here, unreadable or non-ELF
 * files skipped.
 */
void agent_procs_on_libs(struct agent_procs *ps, const struct profile_libs_event *le,
			 int64_t now_ns);

/** agent_procs_on_exit() - the process's main thread exited. */
void agent_procs_on_exit(struct agent_procs *ps, uint32_t pid, int64_t now_ns);

/**
 * agent_procs_tick() - at most once a second, free dead and idle
 * entries. Cheap to call often.
 */
void agent_procs_tick(struct agent_procs *ps, int64_t now_ns);

/**
 * agent_procs_find_map() - the mapping of @pr containing @addr, re-reading
 * the maps (at most once per AGENT_PROCS_REREAD_NS) when none does.
 * NULL when none. Lent until the next maps read of @pr.
 */
struct agent_map *agent_procs_find_map(struct agent_procs *ps, struct agent_proc *pr, uint64_t addr,
				       int64_t now_ns);

/**
 * agent_procs_jit_symbol() - the perf map name of @addr in @pr's JIT
 * code, or NULL (no perf map, or no symbol there). Loads or reloads the
 * map as described above. Lent until the next call for @pr.
 */
const char *agent_procs_jit_symbol(struct agent_procs *ps, struct agent_proc *pr, uint64_t addr,
				   int64_t now_ns);

/** agent_procs_get_stats() - copy the counters. */
void agent_procs_get_stats(const struct agent_procs *ps, struct agent_procs_stats *st);

#endif
