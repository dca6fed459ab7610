/* SPDX-License-Identifier: Apache-2.0 */
/*
 * k8s.h - Kubernetes service discovery for scrape jobs
 * (kubernetes_sd_configs, config.h), after Prometheus' kubernetes_sd_config:
 * list and watch pods, endpoints, services or nodes on the API server and
 * turn each object into targets carrying Prometheus' __meta_kubernetes_*
 * labels, which the job's relabel_configs then keep, drop or rewrite.
 *
 * Targets per role (names as Prometheus documents them; label and
 * annotation names sanitized as Prometheus does: every byte outside
 * [A-Za-z0-9_] becomes '_'):
 *   pod        one per declared container port, __address__ = podIP:port;
 *              a container without ports gives one target with the bare
 *              pod IP (for relabeling to add a port). Pods without an IP
 *              give none. Labels: namespace, pod_name, pod_ip,
 *              pod_label_*, pod_labelpresent_*, pod_annotation_*,
 *              pod_annotationpresent_*, pod_container_init,
 *              pod_container_name, pod_container_image, pod_container_id,
 *              pod_container_port_name/_number/_protocol, pod_ready,
 *              pod_phase, pod_node_name, pod_host_ip, pod_uid,
 *              pod_controller_kind/_name.
 *   endpoints  one per address (ready and not ready) and port of each
 *              subset, __address__ = ip:port. Labels: namespace,
 *              endpoints_name, endpoints_label_* / _labelpresent_*,
 *              endpoints_annotation_* / _annotationpresent_*,
 *              endpoint_hostname, endpoint_node_name, endpoint_ready,
 *              endpoint_port_name, endpoint_port_protocol,
 *              endpoint_address_target_kind/_name; joined in, as
 *              Prometheus does: the service_* labels (not the port ones)
 *              of the service named like the endpoints, and the pod_*
 *              labels of the pod the address points at (with the
 *              container and port labels of the container port at that
 *              address, when one is declared). The role therefore also
 *              lists and watches pods and services (their own selectors
 *              apply). Also as Prometheus: a target for each declared
 *              container port of a pod behind the endpoints that no
 *              endpoint address names, with the endpoints', service's
 *              and pod's labels.
 *   service    one per port, __address__ = NAME.NAMESPACE.svc:port.
 *              Labels: namespace, service_name, service_label_* /
 *              _labelpresent_*, service_annotation_* /
 *              _annotationpresent_*, service_port_name/_number/_protocol,
 *              service_type, service_cluster_ip (not for ExternalName),
 *              service_external_name (ExternalName only),
 *              service_loadbalancer_ip (LoadBalancer with an ingress IP).
 *   node       one per node, __address__ = the first of its InternalIP,
 *              InternalDNS, ExternalIP, ExternalDNS, LegacyHostIP,
 *              Hostname addresses : the kubelet port; `instance` = the
 *              node name. Labels: node_name, node_provider_id,
 *              node_label_* / _labelpresent_*, node_annotation_* /
 *              _annotationpresent_*, node_address_<type>.
 *
 * The API conversation (Kubernetes API concepts, "Efficient detection of
 * changes"): GET the collection (…/pods?labelSelector=&fieldSelector=),
 * remember the list's metadata.resourceVersion, then GET
 * …?watch=1&resourceVersion=RV&allowWatchBookmarks=true&timeoutSeconds=N:
 * newline-delimited JSON events {"type": ADDED|MODIFIED|DELETED|BOOKMARK|
 * ERROR, "object": {...}}, applied as they arrive; each one moves RV on.
 * A watch that ends (the server's timeout, a dropped connection) resumes
 * from RV; `410 Gone` (as the HTTP status or an ERROR event with code 410:
 * RV was compacted away) lists again. Errors back off 1 s doubling to 30 s.
 * One watcher thread per namespace (or one for all namespaces) and
 * collection.
 *
 * Credentials: api_server with bearer_token_file and tls_config; or
 * kubeconfig_file (current-context's cluster server, certificate-authority
 * (-data), insecure-skip-tls-verify, user token / tokenFile /
 * client-certificate (-data) / client-key (-data); relative paths against
 * the file's directory; no exec plugins); or, with
 * neither, in-cluster: https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT
 * with the service account's token and ca.crt under
 * /var/run/secrets/kubernetes.io/serviceaccount (and its `namespace` for
 * own_namespace). Token files are read again before every request.
 *
 * Bounds: a list answer up to SCRAPE_K8S_MAX_LIST bytes, one watch event
 * up to SCRAPE_K8S_MAX_EVENT bytes, SCRAPE_K8S_MAX_OBJECTS objects per
 * watcher, SCRAPE_K8S_MAX_TARGETS_PER_OBJECT targets per object,
 * SCRAPE_K8S_MAX_KV labels and annotations each per object. A label or
 * annotation value over SCRAPE_MAX_LABEL_VALUE bytes (kubectl's
 * last-applied-configuration) keeps only its *present label; names
 * over SCRAPE_MAX_LABEL_NAME are skipped. An object that does not decode
 * is skipped with a logged error naming its field; the job's
 * target_limit applies after relabeling as for every discovery kind.
 */
#ifndef PROF_SCRAPE_K8S_H
#define PROF_SCRAPE_K8S_H

#include "base/compat.h"
#include "base/err.h"
#include "scrape/config.h"

#define SCRAPE_K8S_MAX_LIST		  ((size_t)64 << 20)
#define SCRAPE_K8S_MAX_EVENT		  ((size_t)4 << 20)
#define SCRAPE_K8S_MAX_OBJECTS		  50000
#define SCRAPE_K8S_MAX_TARGETS_PER_OBJECT 1024
#define SCRAPE_K8S_MAX_KV		  256

/** struct scrape_k8s_object - one decoded API object and the targets it gives. */
struct scrape_k8s_object {
	char *key;		     /* "namespace/name" ("name" for nodes); owned */
	char *rv;		     /* metadata.resourceVersion ("" when absent); owned */
	struct scrape_group *groups; /* one target each, labels = the __meta_* set; owned */
	size_t ngroups;
};

/**
 * scrape_k8s_object_decode() - decode one API object of @role (@n bytes
 * of JSON: a Pod, Endpoints, Service or Node as the API serves it) into
 * @o (overwritten; release with scrape_k8s_object_release, also after an
 * error). Errors: -EINVAL with @err "FIELD: what is wrong"
 * ("metadata.name: expected a string", "spec.containers[1].ports[0].
 * containerPort: expected an integer 1..65535"); -PROF_ETOOBIG past the
 * bounds above.
 */
int scrape_k8s_object_decode(enum scrape_k8s_role role, const char *json, size_t n,
			     struct scrape_k8s_object *o, struct prof_err *err);

/** scrape_k8s_object_release() - free what @o owns; NULL ok. */
void scrape_k8s_object_release(struct scrape_k8s_object *o);

/** enum scrape_k8s_event_type - the `type` of a watch event. */
enum scrape_k8s_event_type {
	SCRAPE_K8S_ADDED,
	SCRAPE_K8S_MODIFIED,
	SCRAPE_K8S_DELETED,
	SCRAPE_K8S_BOOKMARK,
	SCRAPE_K8S_ERROR,
};

/**
 * scrape_k8s_event_decode() - decode one line of a watch stream (@n
 * bytes, without the newline) into *@type and @o: for ADDED / MODIFIED /
 * DELETED the object as scrape_k8s_object_decode gives it; for BOOKMARK
 * only @o->rv; for ERROR *@code gets the Status' code (410 = Gone) and
 * @err its message, and the call returns 0. A DELETED object that does
 * not decode but names itself gives its key alone (no targets), so it is
 * still removed. Errors as scrape_k8s_object_decode, fields prefixed
 * "object.".
 */
int scrape_k8s_event_decode(enum scrape_k8s_role role, const char *line, size_t n,
			    enum scrape_k8s_event_type *type, long *code,
			    struct scrape_k8s_object *o, struct prof_err *err);

/** scrape_k8s_label_sanitize() - @in with each byte outside [A-Za-z0-9_] as '_' into @out. */
void scrape_k8s_label_sanitize(const char *in, char *out, size_t outsz);

struct scrape_k8s;

/**
 * scrape_k8s_new() - start discovering for @c (lent: it must outlive the
 * discoverer) on behalf of job @job (for messages). With @once, list
 * each collection once now, synchronously, and start no thread (for
 * `profd scrape --once`). Errors: -EINVAL with @err when no API server
 * is configured and none is in-cluster, or the kubeconfig is bad;
 * -errno when a thread cannot start. A server that cannot be reached is
 * not an error (retried, logged).
 */
int scrape_k8s_new(const struct scrape_k8s_sd *c, const char *job, bool once,
		   struct scrape_k8s **out, struct prof_err *err);

/** scrape_k8s_take_changed() - true (once) when the targets changed since the last call. */
bool scrape_k8s_take_changed(struct scrape_k8s *k);

/**
 * scrape_k8s_foreach_group() - call @fn for each current target group,
 * under the discoverer's lock (@fn must not call back into @k; the
 * groups are lent for the call).
 */
void scrape_k8s_foreach_group(struct scrape_k8s *k,
			      void (*fn)(void *arg, const struct scrape_group *g), void *arg);

/** scrape_k8s_free() - stop the watchers (within about a second) and free. NULL ok. */
void scrape_k8s_free(struct scrape_k8s *k);

#endif
