/* SPDX-License-Identifier: Apache-2.0 */
/*
 * k8s.h - Kubernetes pod metadata for the agent (`profd agent --k8s`):
 * namespace, pod name, node, container name, owner workload, pod labels
 * and annotations, looked up by the pod UID (and container id) the agent
 * reads from a process's cgroup path (container.h).
 *
 * Source: the kubelet's own pod list, `GET /pods` on the node's kubelet
 * (https://NODE:10250/pods with the pod's service-account token, or the
 * read-only http://NODE:10255/pods where it is enabled): a v1 PodList,
 * {"items":[{"metadata":{"name","namespace","uid","labels":{},
 * "annotations":{},"ownerReferences":[{"kind","name"}]},
 * "spec":{"nodeName"},"status":{"containerStatuses":[{"name",
 * "containerID":"containerd://<64 hex>"}], "initContainerStatuses",
 * "ephemeralContainerStatuses"}}]} (Kubernetes API reference, core/v1
 * Pod). Asking the node's kubelet, not the API server, keeps the load off
 * the control plane (one agent per node) and needs only the
 * nodes/proxy permission the Parca agent and the OpenTelemetry
 * collector's kubeletstats receiver also use.
 *
 * Attribute names: OpenTelemetry semantic conventions (k8s.*):
 * k8s.namespace.name, k8s.pod.name, k8s.node.name, k8s.container.name,
 * k8s.pod.label.<key>, k8s.pod.annotation.<key>, and the owner:
 * k8s.replicaset.name + k8s.deployment.name (the ReplicaSet name without
 * its pod-template-hash suffix, as the collector's k8sattributes
 * processor derives it), k8s.daemonset.name, k8s.statefulset.name,
 * k8s.job.name (+ k8s.cronjob.name the same way).
 *
 * Bounds: the response is capped (max_bytes) and parsed into a snapshot
 * holding at most AGENT_K8S_MAX_PODS pods, AGENT_K8S_MAX_KV labels plus
 * annotations per pod, values of at most AGENT_K8S_MAX_VALUE bytes
 * (longer ones, such as kubectl's last-applied-configuration, are
 * skipped and counted). A refresher thread replaces the snapshot every
 * refresh interval, and early (at most every 5 s) when a pod UID is not
 * found, so new pods get their names within seconds.
 *
 * Thread-safety: agent_k8s_add_attrs and agent_k8s_get_stats from any
 * thread; new/free from one.
 */
#ifndef PROF_AGENT_K8S_H
#define PROF_AGENT_K8S_H

#include "base/compat.h"
#include "base/err.h"
#include "model/profile.h"

#define AGENT_K8S_MAX_PODS  65536
#define AGENT_K8S_MAX_KV    128
#define AGENT_K8S_MAX_VALUE 1024

/**
 * struct agent_k8s_opts - @url: the kubelet pods URL (NULL: https://
 * 127.0.0.1:10250/pods, the node's kubelet seen from a hostNetwork
 * DaemonSet); @token_file: bearer token file (NULL: the service-account
 * token path; a missing file means no token); @ca_file: CA bundle for
 * https (NULL: the service-account ca.crt when present, else the
 * system's); @insecure: do not verify the kubelet's certificate (kubelet
 * serving certificates are often self-signed); @refresh_ms: 0 = 30000;
 * @max_bytes: response cap, 0 = 64 MiB; @timeout_ms: 0 = 10000.
 */
struct agent_k8s_opts {
	const char *url;
	const char *token_file;
	const char *ca_file;
	bool insecure;
	long refresh_ms;
	size_t max_bytes;
	long timeout_ms;
};

/** struct agent_k8s_stats - totals since _new (for the agent's /metrics). */
struct agent_k8s_stats {
	uint64_t fetches;	  /* successful pod-list fetches */
	uint64_t fetch_errors;	  /* failed fetches (HTTP, TLS, parse) */
	uint64_t pods;		  /* pods in the current snapshot */
	uint64_t lookups, misses; /* add_attrs calls, and those with an unknown pod */
	uint64_t skipped;	  /* labels/annotations left out by the bounds */
};

struct agent_k8s;

/**
 * struct agent_k8s_snapshot - a parsed pod list (opaque; tests and the
 * refresher build it with agent_k8s_parse).
 */
struct agent_k8s_snapshot;

/**
 * agent_k8s_parse() - parse @n bytes of a v1 PodList (JSON) into a new
 * snapshot (*@out, the caller's: agent_k8s_snapshot_free). Pods without
 * a metadata.uid are skipped; @skipped (may be NULL) gets the number of
 * labels/annotations left out by the bounds. Errors: -PROF_EFORMAT with
 * @err naming the JSON error (line, column) or the field that is not of
 * the expected type.
 */
int agent_k8s_parse(const char *json, size_t n, struct agent_k8s_snapshot **out, uint64_t *skipped,
		    struct prof_err *err);

/** agent_k8s_snapshot_free() - NULL is allowed. */
void agent_k8s_snapshot_free(struct agent_k8s_snapshot *s);

/** agent_k8s_snapshot_pods() - number of pods in @s. */
size_t agent_k8s_snapshot_pods(const struct agent_k8s_snapshot *s);

/**
 * agent_k8s_snapshot_add_attrs() - add the attributes of the pod with
 * UID @pod_uid (and of its container @container_id, 64 hex, "" when
 * unknown) to @p's profile-level attributes. Returns 1 when the pod is
 * known, 0 when not (nothing added).
 */
int agent_k8s_snapshot_add_attrs(const struct agent_k8s_snapshot *s, const char *pod_uid,
				 const char *container_id, struct model_profile *p);

/**
 * agent_k8s_new() - start the refresher: the first fetch happens before
 * this returns (a failure is logged and retried, not fatal: the agent
 * runs without names until the kubelet answers). Errors: -PROF_EUNSUPPORTED
 * when libcurl cannot be loaded, -EINVAL for a URL that is not http(s).
 * *@out is the caller's (agent_k8s_free).
 */
int agent_k8s_new(const struct agent_k8s_opts *o, struct agent_k8s **out, struct prof_err *err);

/** agent_k8s_free() - stop the refresher and release everything; NULL is allowed. */
void agent_k8s_free(struct agent_k8s *k);

/**
 * agent_k8s_add_attrs() - as agent_k8s_snapshot_add_attrs on the current
 * snapshot; an unknown pod asks the refresher for an early fetch.
 */
int agent_k8s_add_attrs(struct agent_k8s *k, const char *pod_uid, const char *container_id,
			struct model_profile *p);

/** agent_k8s_get_stats() - a copy of the counters. */
void agent_k8s_get_stats(struct agent_k8s *k, struct agent_k8s_stats *st);

#endif
