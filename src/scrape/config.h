/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.h - the scrape configuration, Prometheus style (YAML, libyaml),
 * and the target files of file-based discovery (JSON or YAML).
 *
 *   global:                          # optional defaults for every job
 *     scrape_interval: 10s
 *     scrape_timeout: 10s            # capped at the interval
 *     body_size_limit: 64MiB
 *   scrape_configs:
 *     - job_name: api                # unique; the `job` label
 *       scrape_interval: 10s         # default global's, else 10s
 *       scrape_timeout: 5s           # per request (CPU: seconds + timeout)
 *       scheme: http                 # or https
 *       path_prefix: /app            # put before every profile path
 *       body_size_limit: 64MiB       # per response, as sent and after gunzip
 *       target_limit: 1000           # at most this many targets (0 = 10000)
 *       dataset: default             # server mode: the dataset to store into
 *       profiles: [cpu, heap, allocs, mutex, block, goroutine]   # the default
 *       #  or entries {name: NAME, path: /debug/pprof/NAME, delta: BOOL,
 *       #              seconds: N (cpu only)}
 *       static_configs:
 *         - targets: ["127.0.0.1:6060"]
 *           labels: {env: prod}
 *       file_sd_configs:
 *         - files: ["targets/[a-z]*.json", "more.yaml"]   # globs; relative to this file
 *           refresh_interval: 5m     # re-read at least this often (also on mtime change)
 *       kubernetes_sd_configs:       # k8s.h, docs/scrape-kubernetes.md (Prometheus' schema)
 *         - role: pod                # endpoints, service, node
 *           namespaces: {names: [shop], own_namespace: false}   # default: all
 *           selectors: [{role: pod, label: "app=web", field: "spec.nodeName=n1"}]
 *           api_server: https://10.0.0.1:6443   # default: kubeconfig_file, else in-cluster
 *           kubeconfig_file: /etc/kube/config
 *           bearer_token_file: /run/token
 *           tls_config: {ca_file: ..., cert_file: ..., key_file: ..., insecure_skip_verify: false}
 *       relabel_configs:             # relabel.h
 *         - source_labels: [__address__]
 *           regex: "(.*):6060"
 *           target_label: host
 *           replacement: "$1"
 *           action: replace          # keep, drop, hashmod, labelmap, labeldrop, labelkeep
 *   watch_configs:                   # file mode: ingest each new profile file once
 *     - job_name: files              # the `job` label (default "files")
 *       files: ["/var/pprof/[a-z]*.pb.gz"]
 *       labels: {team: core}
 *       poll_interval: 2s
 *       settle: 1s                   # a file must be unchanged this long first
 *       max_file_size: 64MiB
 *       dataset: default
 *
 * Known profiles (Go net/http/pprof, docs/formats.md "Go runtime profiles"):
 *   cpu        /debug/pprof/profile?seconds=N   type process_cpu
 *   heap       /debug/pprof/heap                memory, inuse_* columns only (a gauge)
 *   allocs     /debug/pprof/allocs              memory, alloc_* columns, delta
 *   mutex      /debug/pprof/mutex               mutex, delta
 *   block      /debug/pprof/block               block, delta
 *   goroutine  /debug/pprof/goroutine           goroutine
 *   threadcreate /debug/pprof/threadcreate      threadcreate, delta
 * Any other name needs a path; its type name is the profile name.
 * CPU seconds rule: N = the whole seconds of scrape_interval minus one,
 * at least 1 (10s -> 9, 2s -> 1, 1500ms -> 1), so one CPU profile ends
 * before the next round starts; `seconds:` overrides it (then it must be
 * below the interval).
 *
 * Target files (file_sd): a list of groups, as Prometheus reads them:
 *   [{"targets": ["host:port", ...], "labels": {"k": "v"}}, ...]
 * *.json is JSON, *.yml / *.yaml YAML, anything else sniffed (a first
 * non-blank '[' or '{' means JSON).
 *
 * Sizes take B, KB/KiB, MB/MiB, GB/GiB (binary) or a bare byte count;
 * durations parse_duration_ns's suffixes. Unknown keys are errors naming
 * the file, line and key. Inputs are bounded: 1 MiB of config, 4 MiB per
 * target file, SCRAPE_MAX_TARGETS targets per job, label limits of
 * relabel.h.
 */
#ifndef PROF_SCRAPE_CONFIG_H
#define PROF_SCRAPE_CONFIG_H

#include "base/compat.h"
#include "base/err.h"
#include "scrape/relabel.h"

#define SCRAPE_DEFAULT_INTERVAL_NS (10 * 1000000000LL)
#define SCRAPE_DEFAULT_TIMEOUT_NS  (10 * 1000000000LL)
#define SCRAPE_DEFAULT_BODY_LIMIT  ((size_t)64 << 20)
#define SCRAPE_MAX_TARGETS	   10000
#define SCRAPE_MAX_CONFIG_FILE	   ((size_t)1 << 20)
#define SCRAPE_MAX_SD_FILE	   ((size_t)4 << 20)
#define SCRAPE_DEFAULT_REFRESH_NS  (300 * 1000000000LL)
#define SCRAPE_DEFAULT_POLL_NS	   (2 * 1000000000LL)
#define SCRAPE_DEFAULT_SETTLE_NS   (1 * 1000000000LL)

/** enum scrape_kind - what a profile endpoint serves (decides type name, columns, delta). */
enum scrape_kind {
	SCRAPE_KIND_CPU,
	SCRAPE_KIND_HEAP,
	SCRAPE_KIND_ALLOCS,
	SCRAPE_KIND_MUTEX,
	SCRAPE_KIND_BLOCK,
	SCRAPE_KIND_GOROUTINE,
	SCRAPE_KIND_THREADCREATE,
	SCRAPE_KIND_CUSTOM,
};

/** struct scrape_profile_conf - one endpoint scraped from every target of a job. */
struct scrape_profile_conf {
	char *name; /* "cpu", "heap", ... unique in the job; owned */
	char *path; /* "/debug/pprof/profile"; owned */
	enum scrape_kind kind;
	bool delta;	 /* cumulative counters: store the difference between scrapes */
	int64_t seconds; /* CPU: ?seconds=N; always set after loading (the rule above) */
};

/** struct scrape_group - targets sharing labels (a static_configs entry or a file_sd group). */
struct scrape_group {
	char **targets; /* "host:port", owned; @ntargets entries */
	size_t ntargets;
	struct scrape_labels labels;
};

/** struct scrape_file_sd - one file_sd_configs entry. */
struct scrape_file_sd {
	char **files; /* glob patterns, made absolute against the config's directory */
	size_t nfiles;
	int64_t refresh_ns;
};

/** enum scrape_k8s_role - what a kubernetes_sd_configs entry lists and watches. */
enum scrape_k8s_role {
	SCRAPE_K8S_POD,
	SCRAPE_K8S_ENDPOINTS,
	SCRAPE_K8S_SERVICE,
	SCRAPE_K8S_NODE,
};

/** struct scrape_k8s_selector - one `selectors` entry: sent as labelSelector/fieldSelector. */
struct scrape_k8s_selector {
	enum scrape_k8s_role role;
	char *label, *field; /* NULL when not given; owned */
};

/** struct scrape_tls_conf - Prometheus' tls_config (paths; NULL = not given). */
struct scrape_tls_conf {
	char *ca_file, *cert_file, *key_file;
	bool insecure_skip_verify;
};

/** struct scrape_k8s_sd - one kubernetes_sd_configs entry; owns its strings. */
struct scrape_k8s_sd {
	enum scrape_k8s_role role;
	char *api_server;	 /* "https://host:port"; NULL: kubeconfig_file or in-cluster */
	char *kubeconfig_file;	 /* made absolute against the config's directory */
	char *bearer_token_file; /* re-read before each request (tokens rotate) */
	struct scrape_tls_conf tls;
	char **namespaces; /* namespaces.names; none (and !own_namespace) = all */
	size_t nnamespaces;
	bool own_namespace;
	struct scrape_k8s_selector *selectors;
	size_t nselectors;
};

struct scrape_job_conf {
	char *name;
	int64_t interval_ns, timeout_ns;
	char *scheme;	   /* "http" or "https" */
	char *path_prefix; /* "" or "/x" */
	size_t body_size_limit;
	size_t target_limit;
	char *dataset;		     /* NULL = the server's default */
	struct scrape_group *groups; /* static_configs */
	size_t ngroups;
	struct scrape_file_sd *file_sds;
	size_t nfile_sds;
	struct scrape_k8s_sd *k8s_sds;
	size_t nk8s_sds;
	struct scrape_relabel *relabel;
	size_t nrelabel;
	struct scrape_profile_conf *profiles;
	size_t nprofiles; /* >= 1 */
	unsigned line;
};

struct scrape_watch_conf {
	char *name;    /* job label */
	char **files;  /* glob patterns */
	size_t nfiles; /* >= 1 */
	struct scrape_labels labels;
	int64_t poll_ns, settle_ns;
	size_t max_file_size;
	char *dataset; /* NULL = default */
};

/** struct scrape_config - a whole file; owns everything in it. */
struct scrape_config {
	char *path; /* for messages; NULL when parsed from memory without a name */
	struct scrape_job_conf *jobs;
	size_t njobs;
	struct scrape_watch_conf *watches;
	size_t nwatches;
};

/** flags of scrape_config_parse / _load */
#define SCRAPE_CONF_EMBEDDED 1u /* the file is the server's: other top-level keys are its */

/**
 * scrape_config_parse() - parse @n bytes of YAML (@name for messages and
 * to resolve relative file_sd paths, may be NULL) into @c (overwritten;
 * release with scrape_config_release, also after an error). With
 * SCRAPE_CONF_EMBEDDED unknown top-level keys are ignored and a document
 * without scrape keys gives an empty config. Errors: -EINVAL with @err
 * "NAME:LINE: key: what is wrong" (bad YAML, unknown key, bad value,
 * duplicate job or profile, bad relabel rule, timeout > interval, ...);
 * -PROF_ETOOBIG over SCRAPE_MAX_CONFIG_FILE or the target limit.
 */
int scrape_config_parse(const char *text, size_t n, const char *name, unsigned flags,
			struct scrape_config *c, struct prof_err *err);

/** scrape_config_load() - read the file @path and scrape_config_parse it; -errno to read. */
int scrape_config_load(const char *path, unsigned flags, struct scrape_config *c,
		       struct prof_err *err);

/** scrape_config_release() - free @c; NULL ok. */
void scrape_config_release(struct scrape_config *c);

/**
 * scrape_config_add_job() - append a job for `profd scrape --target`:
 * @targets (@n "host:port" strings, copied) scraped every @interval_ns
 * for the comma-separated @profiles (NULL = the default list). 0 or
 * -EINVAL with @err (bad profile name, bad interval, bad target).
 */
int scrape_config_add_job(struct scrape_config *c, const char *job, char *const *targets, size_t n,
			  int64_t interval_ns, const char *profiles, struct prof_err *err);

/**
 * scrape_sd_parse() - parse a target file (@n bytes; JSON or YAML as
 * described above, @name its path) into *@out (@nout groups, owned by
 * the caller, freed with scrape_groups_free, NULL on error). Targets must
 * be host:port without scheme or path; labels must have valid names.
 * Errors: -EINVAL with @err naming the file, entry and field;
 * -PROF_ETOOBIG for more than SCRAPE_MAX_TARGETS targets or
 * SCRAPE_MAX_SD_FILE bytes.
 */
int scrape_sd_parse(const char *text, size_t n, const char *name, struct scrape_group **out,
		    size_t *nout, struct prof_err *err);

/** scrape_groups_free() - free @n groups and the array; NULL ok. */
void scrape_groups_free(struct scrape_group *g, size_t n);

/** scrape_target_ok() - is @s a host:port (or [v6]:port) target address? */
bool scrape_target_ok(const char *s);

/** scrape_k8s_role_name() - "pod", "endpoints", "service" or "node"; static. */
const char *scrape_k8s_role_name(enum scrape_k8s_role r);

/** scrape_kind_name() - the type name of @k ("process_cpu", "memory", ...); static. */
const char *scrape_kind_type_name(enum scrape_kind k);

/** scrape_cpu_seconds() - the CPU profile length for @interval_ns (the rule above). */
int64_t scrape_cpu_seconds(int64_t interval_ns);

#endif
