/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.h - the server's configuration file (`profd server --config
 * profd.yaml`, YAML read with libyaml): datasets with retention and
 * signal-control rules, bearer tokens, ingest limits. `scrape_configs:` and
 * `watch_configs:` may sit in the same file; scrape/config.h reads them.
 *
 *   default_dataset: prod                  # optional; else "default" or the first
 *   datasets:
 *     - name: prod                         # [a-z0-9_-], 1..64 bytes; <data>/<name>/
 *                                          # (not "debuginfo" or "wal": taken)
 *       retention: 30d                     # optional; 0 or absent = keep forever
 *       head_max_bytes: 256MiB             # optional: flush the in-memory head to a
 *                                          # block at this size (1 MiB .. 16 GiB)
 *       block_duration: 1h                 # optional: ... or when its rows span this
 *                                          # long or it is this old (1m .. 7d)
 *       rules:                             # signal control, in order (server/rules.h)
 *         - action: drop                   # drop the matching series
 *           type: "memory:*"               # fnmatch(3) on the profile type id
 *           selector: '{service_name="noisy"}'
 *         - action: keep                   # keep a fraction of the series
 *           fraction: 0.25                 # (deterministic by series hash)
 *           selector: '{env="dev"}'
 *         - action: drop_below             # drop samples whose value is below
 *           value: 1000000
 *           type: "process_cpu:cpu:nanoseconds:*"
 *   tokens:
 *     - name: prod-agents                  # shown in logs; the secret never is
 *       secret: "..."                      # or secret_env: VAR, or secret_file: PATH
 *       permissions: [ingest]              # ingest, query and/or metrics
 *       datasets: [prod]                   # or ["*"] for every dataset
 *       default_dataset: prod              # optional; else the only one listed
 *   limits:                                # every key optional (defaults below)
 *     max_body: 64MiB                      # request body as sent
 *     max_decompressed: 64MiB              # after gzip
 *     max_ratio: 200                       # decompressed / compressed
 *     max_samples: 1000000                 # per request (rows, see pipeline.h)
 *     max_series: 10000                    # per request
 *     max_active_series: 100000            # per dataset (series.h)
 *     max_labels: 64                       # per series
 *     max_sample_labels: 16000000          # sample labels per request, each counted
 *                                          # once per value/timestamp (default: 16 x
 *                                          # max_samples)
 *     max_label_name: 256                  # bytes
 *     max_label_value: 4096                # bytes
 *     max_inflight: 64                     # concurrent ingest requests (then 429)
 *     retry_after: 1s                      # Retry-After on 429/503
 *
 * Sizes take B, KB/KiB, MB/MiB, GB/GiB (all binary) or a bare byte count;
 * durations parse_duration_ns's suffixes (s, m, h, d ...). Unknown keys
 * are errors (a typo in a security setting must not pass silently), and
 * every error names the file, line and key.
 *
 * Without a file (server_conf_default) there is one open dataset,
 * "default", no tokens, default limits, and from_file is false: the
 * server then listens on loopback only (http.c).
 */
#ifndef PROF_SERVER_CONFIG_H
#define PROF_SERVER_CONFIG_H

#include "base/compat.h"
#include "base/err.h"
#include "query/selector.h"

#define SERVER_DATASET_DEFAULT	      "default"
#define SERVER_DATASET_NAME_MAX	      64
#define SERVER_DEFAULT_MAX_RATIO      200
#define SERVER_DEFAULT_MAX_REQ_SAMPLE ((size_t)1000000)
#define SERVER_DEFAULT_MAX_SERIES     10000
#define SERVER_DEFAULT_MAX_ACTIVE     100000
#define SERVER_DEFAULT_MAX_LABELS     64
#define SERVER_DEFAULT_SAMPLE_LABELS  16 /* max_sample_labels: per sample of max_samples */
#define SERVER_DEFAULT_MAX_LABEL_NAME 256
#define SERVER_DEFAULT_MAX_LABEL_VAL  4096
#define SERVER_DEFAULT_MAX_INFLIGHT   64
#define SERVER_DEFAULT_RETRY_AFTER_S  1

/** enum server_perm - what a token may do; a bit set. */
enum server_perm {
	SERVER_PERM_INGEST = 1,
	SERVER_PERM_QUERY = 2,
	SERVER_PERM_METRICS = 4, /* GET /metrics (counts of every dataset) */
};

enum server_rule_action {
	SERVER_RULE_DROP,	/* drop every sample of the matching series */
	SERVER_RULE_KEEP,	/* keep @fraction of the matching series, drop the rest */
	SERVER_RULE_DROP_BELOW, /* drop samples of matching series with value < @min_value */
};

/** struct server_rule - one signal-control rule; owns its strings and matchers. */
struct server_rule {
	enum server_rule_action action;
	char *type;		   /* fnmatch pattern on the profile type id; NULL = any */
	char *selector;		   /* the selector text as written; NULL = every series */
	struct query_selector sel; /* parsed @selector (sel.type unused: use @type) */
	double fraction;	   /* KEEP: 0..1 */
	int64_t min_value;	   /* DROP_BELOW */
	unsigned line;		   /* line in the config file, for messages */
};

struct server_dataset_conf {
	char *name;
	int64_t retention_ns;	   /* 0 = keep forever */
	uint64_t head_max_bytes;   /* 0 = the store's default (store_options) */
	int64_t block_duration_ns; /* 0 = the store's default */
	struct server_rule *rules;
	size_t nrules;
};

struct server_token_conf {
	char *name;   /* shown in logs and metrics; never the secret */
	char *secret; /* owned; wiped on release */
	size_t secret_len;
	unsigned perms;	       /* enum server_perm bits */
	char **datasets;       /* names; "*" = every dataset */
	size_t ndatasets;      /* >= 1 */
	char *default_dataset; /* NULL = the only dataset listed, if one */
};

/**
 * struct server_limits - per-request limits of ingest; a zero field means
 * "the default" for server_limits_fill_defaults.
 */
struct server_limits {
	size_t max_body;	  /* bytes as sent */
	size_t max_decompressed;  /* bytes after gzip inflation */
	uint32_t max_ratio;	  /* decompressed bytes per compressed byte */
	size_t max_samples;	  /* sample rows per request */
	size_t max_series;	  /* distinct series per request */
	size_t max_active_series; /* active series per dataset (series.h) */
	size_t max_labels;	  /* labels per series */
	size_t max_sample_labels; /* sample labels per request, per observation (pipeline.c) */
	size_t max_label_name;	  /* bytes */
	size_t max_label_value;	  /* bytes */
	unsigned max_inflight;	  /* concurrent ingest requests, beyond: 429 */
	uint32_t retry_after_s;	  /* Retry-After on 429 / 503 */
};

struct server_conf {
	bool from_file; /* false: server_conf_default (loopback only) */
	char *path;	/* the file, for messages; NULL without one */
	struct server_dataset_conf *datasets;
	size_t ndatasets; /* >= 1 */
	struct server_token_conf *tokens;
	size_t ntokens; /* 0 = no authentication */
	char *default_dataset;
	struct server_limits limits;
};

/**
 * server_conf_default() - the configuration without a file: one open
 * dataset "default", no tokens, default limits (overridable afterwards,
 * e.g. by --max-body). Release with server_conf_release.
 */
void server_conf_default(struct server_conf *c);

/**
 * server_conf_load() - read and check the YAML file at @path into @c
 * (overwritten; release it with server_conf_release, also after an
 * error). Errors: -errno when the file cannot be read, -EINVAL with @err
 * naming "PATH:LINE: key: what is wrong" for bad YAML, an unknown key, a
 * bad value, a duplicate dataset or token, a token naming an unknown
 * dataset or permission, a secret_env that is unset.
 */
int server_conf_load(const char *path, struct server_conf *c, struct prof_err *err);

/** server_conf_release() - free @c (secrets are zeroed first). NULL is allowed. */
void server_conf_release(struct server_conf *c);

/** server_limits_fill_defaults() - replace zero fields of @l by the defaults above. */
void server_limits_fill_defaults(struct server_limits *l, size_t default_max_body);

/** server_dataset_name_ok() - is @s a valid dataset name ([a-z0-9_-], 1..64 bytes)? */
bool server_dataset_name_ok(const char *s);

/** server_conf_dataset() - the dataset named @name, or NULL. Lent from @c. */
const struct server_dataset_conf *server_conf_dataset(const struct server_conf *c,
						      const char *name);

#endif
