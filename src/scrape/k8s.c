// SPDX-License-Identifier: Apache-2.0
/*
 * k8s.c - Kubernetes service discovery: the object decoder (jansson),
 * credentials (api_server, kubeconfig, in-cluster) and the list + watch
 * threads; see k8s.h.
 *
 * Objects are untrusted input (anything that can create a pod writes its
 * annotations): every field is type-checked, every count bounded, and an
 * object that does not decode is skipped, never trusted half-way
 * (tests/fuzz/fuzz_k8s_sd.c). The objects of a watcher sit in a vector
 * searched linearly by key: an event costs O(objects), fine for the
 * thousands of pods a namespace holds, to be indexed if fleets need it.
 *
 * Locking: k->lock guards every watcher's object vector, k->changed and
 * the stop flag's condition variable; a watcher's other fields belong to
 * its thread.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/parse.h"
#include "base/yaml.h"
#include "scrape/fetch.h"
#include "scrape/k8s.h"

#include <jansson.h>
#include <malloc.h>
#include <pthread.h>

#define SA_DIR	       "/var/run/secrets/kubernetes.io/serviceaccount"
#define NS_PER_S       ((int64_t)1000000000)
#define WATCH_SECONDS  300 /* timeoutSeconds asked of the server */
#define MAX_TOKEN      ((size_t)64 << 10)
#define MAX_RV	       256
#define MAX_BACKOFF_NS (30 * NS_PER_S)

/* --- the decoder ------------------------------------------------------------------------ */

struct dec {
	struct prof_err *err;
	const char *prefix; /* "object." for events, "" otherwise */
	struct scrape_k8s_object *o;
};

static int ferr(struct dec *d, const char *field, const char *fmt, ...) PROF_PRINTF(3, 4);
static int ferr(struct dec *d, const char *field, const char *fmt, ...)
{
	char msg[300];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return prof_err_set(d->err, -EINVAL, -1, "%s%s: %s", d->prefix, field, msg);
}

/* @o[@key] as an object (NULL when absent or null); -EINVAL for another type. */
static int get_obj(struct dec *d, json_t *o, const char *key, const char *path, json_t **out)
{
	json_t *v = o ? json_object_get(o, key) : NULL;

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return ferr(d, path, "expected an object");
	*out = v;
	return 0;
}

static int get_arr(struct dec *d, json_t *o, const char *key, const char *path, size_t max,
		   json_t **out)
{
	json_t *v = o ? json_object_get(o, key) : NULL;

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return ferr(d, path, "expected a list");
	if (json_array_size(v) > max)
		return prof_err_set(d->err, -PROF_ETOOBIG, -1, "%s%s: more than %zu entries",
				    d->prefix, path, max);
	*out = v;
	return 0;
}

/* @o[@key] as a string without NUL bytes (NULL when absent or null). */
static int get_str(struct dec *d, json_t *o, const char *key, const char *path, bool required,
		   const char **out)
{
	json_t *v = o ? json_object_get(o, key) : NULL;

	*out = NULL;
	if (!v || json_is_null(v)) {
		if (required)
			return ferr(d, path, "missing (expected a string)");
		return 0;
	}
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
		return ferr(d, path, "expected a string");
	*out = json_string_value(v);
	return 0;
}

static int get_port(struct dec *d, json_t *o, const char *key, const char *path, long *out)
{
	json_t *v = o ? json_object_get(o, key) : NULL;

	if (!v || !json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 65535)
		return ferr(d, path, "expected an integer 1..65535");
	*out = (long)json_integer_value(v);
	return 0;
}

void scrape_k8s_label_sanitize(const char *in, char *out, size_t outsz)
{
	size_t i = 0;

	for (; in[i] && i + 1 < outsz; i++) {
		char c = in[i];

		out[i] =
			((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
				? c
				: '_';
	}
	if (outsz)
		out[i] = '\0';
}

/* Set __meta_kubernetes_@what to @v when @v is non-empty and short enough. */
static void meta_set(struct scrape_labels *ls, const char *what, const char *v)
{
	char name[SCRAPE_MAX_LABEL_NAME + 1];

	if (!v || !*v || strlen(v) > SCRAPE_MAX_LABEL_VALUE)
		return;
	snprintf(name, sizeof(name), "__meta_kubernetes_%s", what);
	scrape_labels_set(ls, name, v);
}

/* metadata.labels / .annotations as ROLE_label_NAME + ROLE_labelpresent_NAME. */
static int meta_kv(struct dec *d, json_t *meta, const char *key, const char *role, const char *kind,
		   struct scrape_labels *ls)
{
	char path[64], san[SCRAPE_MAX_LABEL_NAME + 1], name[2 * SCRAPE_MAX_LABEL_NAME];
	const char *k;
	json_t *obj, *v;
	int rc;

	snprintf(path, sizeof(path), "metadata.%s", key);
	if ((rc = get_obj(d, meta, key, path, &obj)) || !obj)
		return rc;
	if (json_object_size(obj) > SCRAPE_K8S_MAX_KV)
		return prof_err_set(d->err, -PROF_ETOOBIG, -1, "%s%s: more than %d entries",
				    d->prefix, path, SCRAPE_K8S_MAX_KV);
	json_object_foreach(obj, k, v)
	{
		size_t n;

		if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
			return ferr(d, path, "'%.80s': expected a string", k);
		if (strlen(k) >= sizeof(san))
			continue;
		scrape_k8s_label_sanitize(k, san, sizeof(san));
		n = (size_t)snprintf(name, sizeof(name), "__meta_kubernetes_%s_%spresent_%s", role,
				     kind, san);
		/* Longer names are skipped, not cut: a cut name could collide with another. */
		if (n > SCRAPE_MAX_LABEL_NAME)
			continue;
		scrape_labels_set(ls, name, "true");
		snprintf(name, sizeof(name), "__meta_kubernetes_%s_%s_%s", role, kind, san);
		if (json_string_length(v) <= SCRAPE_MAX_LABEL_VALUE)
			scrape_labels_set(ls, name, json_string_value(v));
	}
	return 0;
}

/* The common metadata: name, namespace, labels, annotations. */
static int meta_common(struct dec *d, json_t *obj, const char *role, bool namespaced, json_t **meta,
		       struct scrape_labels *ls)
{
	const char *name, *ns = NULL, *rv;
	char what[64];
	int rc;

	if (!json_is_object(obj))
		return ferr(d, "(object)", "expected an object");
	if ((rc = get_obj(d, obj, "metadata", "metadata", meta)))
		return rc;
	if (!*meta)
		return ferr(d, "metadata", "missing");
	if ((rc = get_str(d, *meta, "name", "metadata.name", true, &name)))
		return rc;
	if (namespaced && (rc = get_str(d, *meta, "namespace", "metadata.namespace", true, &ns)))
		return rc;
	if ((rc = get_str(d, *meta, "resourceVersion", "metadata.resourceVersion", false, &rv)))
		return rc;
	if (!*name || strlen(name) > 253 || (ns && (!*ns || strlen(ns) > 253)))
		return ferr(d, "metadata.name", "expected 1..253 bytes");
	if (rv && strlen(rv) >= MAX_RV)
		return ferr(d, "metadata.resourceVersion", "longer than %d bytes", MAX_RV - 1);
	free(d->o->key);
	d->o->key = ns ? xasprintf("%s/%s", ns, name) : xstrdup(name);
	free(d->o->rv);
	d->o->rv = xstrdup(rv ? rv : "");
	if (ns)
		meta_set(ls, "namespace", ns);
	snprintf(what, sizeof(what), "%s_name", role);
	meta_set(ls, what, name);
	if ((rc = meta_kv(d, *meta, "labels", role, "label", ls)))
		return rc;
	return meta_kv(d, *meta, "annotations", role, "annotation", ls);
}

/* host:port as net.JoinHostPort writes it (brackets around IPv6). */
static char *join_host_port(const char *host, long port)
{
	return strchr(host, ':') ? xasprintf("[%s]:%ld", host, port)
				 : xasprintf("%s:%ld", host, port);
}

/* Add a target @addr (taken) with labels @ls (copied). */
static int add_target(struct dec *d, char *addr, const struct scrape_labels *ls)
{
	struct scrape_k8s_object *o = d->o;
	struct scrape_group *g;

	if (o->ngroups >= SCRAPE_K8S_MAX_TARGETS_PER_OBJECT) {
		free(addr);
		return prof_err_set(d->err, -PROF_ETOOBIG, -1,
				    "%smore than %d targets in one object", d->prefix,
				    SCRAPE_K8S_MAX_TARGETS_PER_OBJECT);
	}
	if (strlen(addr) > 512) {
		free(addr);
		return ferr(d, "(address)", "longer than 512 bytes");
	}
	o->groups = xreallocarray(o->groups, o->ngroups + 1, sizeof(*o->groups));
	g = &o->groups[o->ngroups++];
	memset(g, 0, sizeof(*g));
	g->targets = xcalloc(1, sizeof(char *));
	g->targets[0] = addr;
	g->ntargets = 1;
	scrape_labels_copy(&g->labels, ls);
	return 0;
}

/*
 * Add a target @addr (taken) with @ls plus its port's labels
 * __meta_kubernetes_@what_port_name / _number (when @number) / _protocol.
 */
static int port_target(struct dec *d, const struct scrape_labels *ls, char *addr, const char *what,
		       long port, bool number, const char *pname, const char *proto)
{
	struct scrape_labels pl = { 0 };
	char name[64], num[16];
	int rc;

	scrape_labels_copy(&pl, ls);
	snprintf(name, sizeof(name), "%s_port_name", what);
	meta_set(&pl, name, pname);
	if (number) {
		snprintf(num, sizeof(num), "%ld", port);
		snprintf(name, sizeof(name), "%s_port_number", what);
		meta_set(&pl, name, num);
	}
	snprintf(name, sizeof(name), "%s_port_protocol", what);
	meta_set(&pl, name, proto ? proto : "TCP");
	rc = add_target(d, addr, &pl);
	scrape_labels_release(&pl);
	return rc;
}

/* The id of container @name in status.containerStatuses (or init...), or NULL. */
static int container_id(struct dec *d, json_t *statuses, const char *path, const char *name,
			const char **out)
{
	size_t i;
	json_t *s;
	int rc;

	*out = NULL;
	json_array_foreach(statuses, i, s)
	{
		const char *n, *id;

		if (!json_is_object(s))
			return ferr(d, path, "expected a list of objects");
		if ((rc = get_str(d, s, "name", path, false, &n)) ||
		    (rc = get_str(d, s, "containerID", path, false, &id)))
			return rc;
		if (n && !strcmp(n, name)) {
			*out = id;
			return 0;
		}
	}
	return 0;
}

static int pod_containers(struct dec *d, json_t *list, const char *what, bool init,
			  json_t *statuses, const char *pod_ip, const struct scrape_labels *base)
{
	char path[96];
	size_t i;
	json_t *c;
	int rc;

	json_array_foreach(list, i, c)
	{
		struct scrape_labels ls = { 0 };
		const char *name, *image, *id;
		json_t *ports, *p;
		size_t pi;

		snprintf(path, sizeof(path), "spec.%s[%zu]", what, i);
		if (!json_is_object(c))
			return ferr(d, path, "expected an object");
		snprintf(path, sizeof(path), "spec.%s[%zu].name", what, i);
		if ((rc = get_str(d, c, "name", path, true, &name)))
			return rc;
		snprintf(path, sizeof(path), "spec.%s[%zu].image", what, i);
		if ((rc = get_str(d, c, "image", path, false, &image)))
			return rc;
		snprintf(path, sizeof(path), "spec.%s[%zu].ports", what, i);
		if ((rc = get_arr(d, c, "ports", path, SCRAPE_K8S_MAX_TARGETS_PER_OBJECT, &ports)))
			return rc;
		snprintf(path, sizeof(path), "status.%sStatuses",
			 init ? "initContainer" : "container");
		if (statuses && (rc = container_id(d, statuses, path, name, &id)))
			return rc;
		if (!statuses)
			id = NULL;
		scrape_labels_copy(&ls, base);
		meta_set(&ls, "pod_container_name", name);
		meta_set(&ls, "pod_container_image", image);
		meta_set(&ls, "pod_container_id", id);
		scrape_labels_set(&ls, "__meta_kubernetes_pod_container_init",
				  init ? "true" : "false");
		if (!ports || !json_array_size(ports)) {
			rc = add_target(d, xstrdup(pod_ip), &ls);
			scrape_labels_release(&ls);
			if (rc)
				return rc;
			continue;
		}
		json_array_foreach(ports, pi, p)
		{
			const char *pname, *proto;
			long port;

			snprintf(path, sizeof(path), "spec.%s[%zu].ports[%zu].containerPort", what,
				 i, pi);
			if (!json_is_object(p))
				rc = ferr(d, path, "expected an object");
			else
				rc = get_port(d, p, "containerPort", path, &port);
			if (!rc) {
				snprintf(path, sizeof(path), "spec.%s[%zu].ports[%zu]", what, i,
					 pi);
				rc = get_str(d, p, "name", path, false, &pname);
			}
			if (!rc)
				rc = get_str(d, p, "protocol", path, false, &proto);
			if (rc) {
				scrape_labels_release(&ls);
				return rc;
			}
			rc = port_target(d, &ls, join_host_port(pod_ip, port), "pod_container",
					 port, true, pname, proto);
			if (rc) {
				scrape_labels_release(&ls);
				return rc;
			}
		}
		scrape_labels_release(&ls);
	}
	return 0;
}

static int pod_ready(struct dec *d, json_t *status, const char **out)
{
	json_t *conds, *c;
	size_t i;
	int rc;

	*out = "unknown";
	if ((rc = get_arr(d, status, "conditions", "status.conditions", 64, &conds)) || !conds)
		return rc;
	json_array_foreach(conds, i, c)
	{
		const char *type, *st;

		if (!json_is_object(c))
			return ferr(d, "status.conditions", "expected a list of objects");
		if ((rc = get_str(d, c, "type", "status.conditions[].type", false, &type)) ||
		    (rc = get_str(d, c, "status", "status.conditions[].status", false, &st)))
			return rc;
		if (type && st && !strcmp(type, "Ready")) {
			*out = !strcmp(st, "True")    ? "true"
			       : !strcmp(st, "False") ? "false"
						      : "unknown";
			return 0;
		}
	}
	return 0;
}

static int decode_pod(struct dec *d, json_t *obj, struct scrape_labels *ls)
{
	json_t *meta, *spec, *status, *owners, *cs = NULL, *ics = NULL, *ctrs, *ictrs;
	const char *uid, *ip, *host_ip, *phase, *node, *ready;
	size_t i;
	json_t *ow;
	int rc;

	if ((rc = meta_common(d, obj, "pod", true, &meta, ls)))
		return rc;
	if ((rc = get_str(d, meta, "uid", "metadata.uid", false, &uid)))
		return rc;
	meta_set(ls, "pod_uid", uid);
	if ((rc = get_arr(d, meta, "ownerReferences", "metadata.ownerReferences", 64, &owners)))
		return rc;
	if (owners)
		json_array_foreach(owners, i, ow)
		{
			const char *kind, *name;
			json_t *ctl;

			if (!json_is_object(ow))
				return ferr(d, "metadata.ownerReferences",
					    "expected a list of objects");
			ctl = json_object_get(ow, "controller");
			if (!json_is_true(ctl))
				continue;
			if ((rc = get_str(d, ow, "kind", "metadata.ownerReferences[].kind", false,
					  &kind)) ||
			    (rc = get_str(d, ow, "name", "metadata.ownerReferences[].name", false,
					  &name)))
				return rc;
			meta_set(ls, "pod_controller_kind", kind);
			meta_set(ls, "pod_controller_name", name);
			break;
		}
	if ((rc = get_obj(d, obj, "spec", "spec", &spec)) ||
	    (rc = get_obj(d, obj, "status", "status", &status)))
		return rc;
	if ((rc = get_str(d, spec, "nodeName", "spec.nodeName", false, &node)) ||
	    (rc = get_str(d, status, "podIP", "status.podIP", false, &ip)) ||
	    (rc = get_str(d, status, "hostIP", "status.hostIP", false, &host_ip)) ||
	    (rc = get_str(d, status, "phase", "status.phase", false, &phase)) ||
	    (rc = pod_ready(d, status, &ready)))
		return rc;
	if ((rc = get_arr(d, spec, "containers", "spec.containers", 256, &ctrs)) ||
	    (rc = get_arr(d, spec, "initContainers", "spec.initContainers", 256, &ictrs)) ||
	    (rc = get_arr(d, status, "containerStatuses", "status.containerStatuses", 256, &cs)) ||
	    (rc = get_arr(d, status, "initContainerStatuses", "status.initContainerStatuses", 256,
			  &ics)))
		return rc;
	if (!ip || !*ip)
		return 0; /* not scheduled or not started: no targets (Prometheus) */
	if (strlen(ip) > 64)
		return ferr(d, "status.podIP", "longer than 64 bytes");
	meta_set(ls, "pod_ip", ip);
	meta_set(ls, "pod_host_ip", host_ip);
	meta_set(ls, "pod_phase", phase);
	meta_set(ls, "pod_node_name", node);
	scrape_labels_set(ls, "__meta_kubernetes_pod_ready", ready);
	if (ctrs && (rc = pod_containers(d, ctrs, "containers", false, cs, ip, ls)))
		return rc;
	if (ictrs && (rc = pod_containers(d, ictrs, "initContainers", true, ics, ip, ls)))
		return rc;
	return 0;
}

static int endpoint_addrs(struct dec *d, json_t *addrs, const char *path, bool ready, json_t *ports,
			  const struct scrape_labels *base)
{
	size_t ai, pi;
	json_t *a, *p;
	int rc;

	json_array_foreach(addrs, ai, a)
	{
		struct scrape_labels ls = { 0 };
		const char *ip, *host, *node, *tkind = NULL, *tname = NULL;
		json_t *ref;

		if (!json_is_object(a))
			return ferr(d, path, "expected a list of objects");
		if ((rc = get_str(d, a, "ip", path, true, &ip)) ||
		    (rc = get_str(d, a, "hostname", path, false, &host)) ||
		    (rc = get_str(d, a, "nodeName", path, false, &node)) ||
		    (rc = get_obj(d, a, "targetRef", path, &ref)))
			return rc;
		if (ref && ((rc = get_str(d, ref, "kind", path, false, &tkind)) ||
			    (rc = get_str(d, ref, "name", path, false, &tname))))
			return rc;
		if (strlen(ip) > 64)
			return ferr(d, path, "ip longer than 64 bytes");
		scrape_labels_copy(&ls, base);
		meta_set(&ls, "endpoint_hostname", host);
		meta_set(&ls, "endpoint_node_name", node);
		meta_set(&ls, "endpoint_address_target_kind", tkind);
		meta_set(&ls, "endpoint_address_target_name", tname);
		scrape_labels_set(&ls, "__meta_kubernetes_endpoint_ready",
				  ready ? "true" : "false");
		json_array_foreach(ports, pi, p)
		{
			const char *pname, *proto;
			long port;

			if (!json_is_object(p))
				rc = ferr(d, "subsets[].ports", "expected a list of objects");
			else if (!(rc = get_port(d, p, "port", "subsets[].ports[].port", &port)) &&
				 !(rc = get_str(d, p, "name", "subsets[].ports[].name", false,
						&pname)))
				rc = get_str(d, p, "protocol", "subsets[].ports[].protocol", false,
					     &proto);
			if (rc) {
				scrape_labels_release(&ls);
				return rc;
			}
			rc = port_target(d, &ls, join_host_port(ip, port), "endpoint", port, false,
					 pname, proto);
			if (rc) {
				scrape_labels_release(&ls);
				return rc;
			}
		}
		scrape_labels_release(&ls);
	}
	return 0;
}

static int decode_endpoints(struct dec *d, json_t *obj, struct scrape_labels *ls)
{
	json_t *meta, *subsets, *ss;
	size_t i;
	int rc;

	if ((rc = meta_common(d, obj, "endpoints", true, &meta, ls)))
		return rc;
	if ((rc = get_arr(d, obj, "subsets", "subsets", 256, &subsets)) || !subsets)
		return rc;
	json_array_foreach(subsets, i, ss)
	{
		json_t *addrs, *nready, *ports;

		if (!json_is_object(ss))
			return ferr(d, "subsets", "expected a list of objects");
		if ((rc = get_arr(d, ss, "addresses", "subsets[].addresses",
				  SCRAPE_K8S_MAX_TARGETS_PER_OBJECT, &addrs)) ||
		    (rc = get_arr(d, ss, "notReadyAddresses", "subsets[].notReadyAddresses",
				  SCRAPE_K8S_MAX_TARGETS_PER_OBJECT, &nready)) ||
		    (rc = get_arr(d, ss, "ports", "subsets[].ports", 256, &ports)))
			return rc;
		if (!ports)
			continue;
		if (addrs &&
		    (rc = endpoint_addrs(d, addrs, "subsets[].addresses", true, ports, ls)))
			return rc;
		if (nready && (rc = endpoint_addrs(d, nready, "subsets[].notReadyAddresses", false,
						   ports, ls)))
			return rc;
	}
	return 0;
}

static int decode_service(struct dec *d, json_t *obj, struct scrape_labels *ls)
{
	const char *type, *cip, *ext, *lbip = NULL, *name, *ns;
	json_t *meta, *spec, *status, *lb, *ing, *ports, *p;
	size_t i;
	int rc;

	if ((rc = meta_common(d, obj, "service", true, &meta, ls)))
		return rc;
	name = json_string_value(json_object_get(meta, "name"));
	ns = json_string_value(json_object_get(meta, "namespace"));
	if ((rc = get_obj(d, obj, "spec", "spec", &spec)) ||
	    (rc = get_obj(d, obj, "status", "status", &status)) ||
	    (rc = get_obj(d, status, "loadBalancer", "status.loadBalancer", &lb)) ||
	    (rc = get_arr(d, lb, "ingress", "status.loadBalancer.ingress", 256, &ing)) ||
	    (rc = get_str(d, spec, "type", "spec.type", false, &type)) ||
	    (rc = get_str(d, spec, "clusterIP", "spec.clusterIP", false, &cip)) ||
	    (rc = get_str(d, spec, "externalName", "spec.externalName", false, &ext)) ||
	    (rc = get_arr(d, spec, "ports", "spec.ports", 256, &ports)))
		return rc;
	if (ing && json_array_size(ing) &&
	    (rc = get_str(d, json_array_get(ing, 0), "ip", "status.loadBalancer.ingress[0].ip",
			  false, &lbip)))
		return rc;
	type = type ? type : "ClusterIP";
	meta_set(ls, "service_type", type);
	if (!strcmp(type, "ExternalName"))
		meta_set(ls, "service_external_name", ext);
	else
		meta_set(ls, "service_cluster_ip", cip);
	if (!strcmp(type, "LoadBalancer"))
		meta_set(ls, "service_loadbalancer_ip", lbip);
	if (!ports)
		return 0;
	json_array_foreach(ports, i, p)
	{
		const char *pname, *proto;
		long port;

		if (!json_is_object(p))
			return ferr(d, "spec.ports", "expected a list of objects");
		if ((rc = get_port(d, p, "port", "spec.ports[].port", &port)) ||
		    (rc = get_str(d, p, "name", "spec.ports[].name", false, &pname)) ||
		    (rc = get_str(d, p, "protocol", "spec.ports[].protocol", false, &proto)))
			return rc;
		rc = port_target(d, ls, xasprintf("%s.%s.svc:%ld", name, ns, port), "service", port,
				 true, pname, proto);
		if (rc)
			return rc;
	}
	return 0;
}

static int decode_node(struct dec *d, json_t *obj, struct scrape_labels *ls)
{
	static const char *const pref[] = { "InternalIP",  "InternalDNS",  "ExternalIP",
					    "ExternalDNS", "LegacyHostIP", "Hostname" };
	const char *provider, *best = NULL, *name;
	json_t *meta, *spec, *status, *addrs, *de, *ke, *a;
	size_t best_rank = PROF_ARRAY_SIZE(pref), i;
	long port;
	int rc;

	if ((rc = meta_common(d, obj, "node", false, &meta, ls)))
		return rc;
	name = json_string_value(json_object_get(meta, "name"));
	if ((rc = get_obj(d, obj, "spec", "spec", &spec)) ||
	    (rc = get_obj(d, obj, "status", "status", &status)) ||
	    (rc = get_str(d, spec, "providerID", "spec.providerID", false, &provider)) ||
	    (rc = get_arr(d, status, "addresses", "status.addresses", 64, &addrs)) ||
	    (rc = get_obj(d, status, "daemonEndpoints", "status.daemonEndpoints", &de)) ||
	    (rc = get_obj(d, de, "kubeletEndpoint", "status.daemonEndpoints.kubeletEndpoint", &ke)))
		return rc;
	meta_set(ls, "node_provider_id", provider);
	scrape_labels_set(ls, "instance", name);
	if (addrs)
		json_array_foreach(addrs, i, a)
		{
			char what[SCRAPE_MAX_LABEL_NAME], san[64];
			const char *type, *addr;

			if (!json_is_object(a))
				return ferr(d, "status.addresses", "expected a list of objects");
			if ((rc = get_str(d, a, "type", "status.addresses[].type", true, &type)) ||
			    (rc = get_str(d, a, "address", "status.addresses[].address", true,
					  &addr)))
				return rc;
			if (strlen(type) >= sizeof(san) || strlen(addr) > 253)
				continue;
			scrape_k8s_label_sanitize(type, san, sizeof(san));
			snprintf(what, sizeof(what), "__meta_kubernetes_node_address_%s", san);
			if (!scrape_labels_get(ls, what))
				scrape_labels_set(ls, what, addr); /* the first of each type */
			for (size_t r = 0; r < best_rank; r++)
				if (!strcmp(type, pref[r])) {
					best = addr;
					best_rank = r;
				}
		}
	if (!best)
		return ferr(d, "status.addresses",
			    "no InternalIP, InternalDNS, ExternalIP, "
			    "ExternalDNS, LegacyHostIP or Hostname address");
	if ((rc = get_port(d, ke, "Port", "status.daemonEndpoints.kubeletEndpoint.Port", &port)))
		return rc;
	return add_target(d, join_host_port(best, port), ls);
}

void scrape_k8s_object_release(struct scrape_k8s_object *o)
{
	if (!o)
		return;
	free(o->key);
	free(o->rv);
	scrape_groups_free(o->groups, o->ngroups);
	memset(o, 0, sizeof(*o));
}

static int decode_json(enum scrape_k8s_role role, json_t *obj, const char *prefix,
		       struct scrape_k8s_object *o, struct prof_err *err)
{
	struct dec d = { err, prefix, o };
	struct scrape_labels ls = { 0 };
	int rc;

	memset(o, 0, sizeof(*o));
	switch (role) {
	case SCRAPE_K8S_POD:
		rc = decode_pod(&d, obj, &ls);
		break;
	case SCRAPE_K8S_ENDPOINTS:
		rc = decode_endpoints(&d, obj, &ls);
		break;
	case SCRAPE_K8S_SERVICE:
		rc = decode_service(&d, obj, &ls);
		break;
	case SCRAPE_K8S_NODE:
		rc = decode_node(&d, obj, &ls);
		break;
	default:
		rc = prof_err_set(err, -EINVAL, -1, "unknown role");
		break;
	}
	scrape_labels_release(&ls);
	if (rc) {
		scrape_k8s_object_release(o);
		return rc;
	}
	return 0;
}

static json_t *load_json(const char *text, size_t n, size_t max, struct prof_err *err)
{
	json_error_t je;
	json_t *root;

	if (n > max) {
		prof_err_set(err, -PROF_ETOOBIG, -1, "larger than %zu bytes", max);
		return NULL;
	}
	root = json_loadb(text ? text : "", n, 0, &je);
	if (!root)
		prof_err_set(err, -EINVAL, (int64_t)je.position, "JSON:%d:%d: %s", je.line,
			     je.column, je.text);
	return root;
}

int scrape_k8s_object_decode(enum scrape_k8s_role role, const char *json, size_t n,
			     struct scrape_k8s_object *o, struct prof_err *err)
{
	json_t *root;
	int rc;

	memset(o, 0, sizeof(*o));
	root = load_json(json, n, SCRAPE_K8S_MAX_EVENT, err);
	if (!root)
		return err && err->code ? err->code : -EINVAL;
	rc = decode_json(role, root, "", o, err);
	json_decref(root);
	return rc;
}

static const char *const event_types[] = { "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR" };

int scrape_k8s_event_decode(enum scrape_k8s_role role, const char *line, size_t n,
			    enum scrape_k8s_event_type *type, long *code,
			    struct scrape_k8s_object *o, struct prof_err *err)
{
	struct dec d = { err, "", o };
	const char *ts, *rv = NULL;
	json_t *root, *obj, *meta;
	size_t t;
	int rc;

	memset(o, 0, sizeof(*o));
	*code = 0;
	root = load_json(line, n, SCRAPE_K8S_MAX_EVENT, err);
	if (!root)
		return err && err->code ? err->code : -EINVAL;
	if (!json_is_object(root)) {
		rc = ferr(&d, "(event)", "expected an object");
		goto out;
	}
	if ((rc = get_str(&d, root, "type", "type", true, &ts)) ||
	    (rc = get_obj(&d, root, "object", "object", &obj)))
		goto out;
	for (t = 0; t < PROF_ARRAY_SIZE(event_types) && strcmp(ts, event_types[t]); t++)
		;
	if (t == PROF_ARRAY_SIZE(event_types)) {
		rc = ferr(&d, "type", "unknown event type '%.40s'", ts);
		goto out;
	}
	if (!obj) {
		rc = ferr(&d, "object", "missing");
		goto out;
	}
	*type = (enum scrape_k8s_event_type)t;
	if (*type == SCRAPE_K8S_ERROR) {
		json_t *c = json_object_get(obj, "code");
		const char *msg = json_string_value(json_object_get(obj, "message"));

		*code = json_is_integer(c) ? (long)json_integer_value(c) : 0;
		prof_err_set(err, -EPROTO, -1, "watch error %ld: %.300s", *code, msg ? msg : "");
		rc = 0;
		goto out;
	}
	if (*type == SCRAPE_K8S_BOOKMARK) {
		d.prefix = "object.";
		if (!(rc = get_obj(&d, obj, "metadata", "metadata", &meta)) &&
		    !(rc = get_str(&d, meta, "resourceVersion", "metadata.resourceVersion", true,
				   &rv)) &&
		    strlen(rv) >= MAX_RV)
			rc = ferr(&d, "metadata.resourceVersion", "longer than %d bytes",
				  MAX_RV - 1);
		if (!rc)
			o->rv = xstrdup(rv);
		goto out;
	}
	rc = decode_json(role, obj, "object.", o, err);
	if (rc && *type == SCRAPE_K8S_DELETED) {
		/* A deletion needs only the key: an object that no longer decodes still goes. */
		json_t *m = json_object_get(obj, "metadata");
		const char *name = json_string_value(json_object_get(m, "name"));
		const char *ns = json_string_value(json_object_get(m, "namespace"));

		if (name && *name && strlen(name) <= 253 &&
		    (role == SCRAPE_K8S_NODE || (ns && *ns && strlen(ns) <= 253))) {
			o->key = role == SCRAPE_K8S_NODE ? xstrdup(name)
							 : xasprintf("%s/%s", ns, name);
			o->rv = xstrdup("");
			rc = 0;
		}
	}
out:
	json_decref(root);
	return rc;
}

/* --- the discoverer --------------------------------------------------------------------- */

struct watcher {
	struct scrape_k8s *k;
	enum scrape_k8s_role
		role; /* what it lists: the config's, or pods/services joined to endpoints */
	bool targets; /* its objects give targets (false: joined in only) */
	char *url; /* the collection, with its selector query ("...?" or "...?labelSelector=..&") */
	char *where;			    /* "namespace shop" / "all namespaces", for messages */
	VEC(struct scrape_k8s_object) objs; /* under k->lock */
	char rv[MAX_RV];
	bool need_list;
	void *curl;
	pthread_t th;
	bool started;
	/* stream state, while a watch is open */
	struct buf line;
	bool gone;
	uint64_t events;
};

struct scrape_k8s {
	const struct scrape_k8s_sd *c;
	char *job;
	char *server;	  /* no trailing slash */
	char *token_file; /* NULL = none */
	char *token;	  /* a kubeconfig's inline token; NULL = none */
	struct scrape_tls_conf tls;
	struct scrape_fetch_pem pem; /* a kubeconfig's *-data, decoded; owned */
	bool have_pem;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop, changed; /* stop: atomic; changed: under lock */
	struct watcher *w;  /* per namespace: nroles watchers, the targets' one first */
	size_t nw, nroles;
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

/* Sleep @ns or until stopped. */
static void k8s_sleep(struct scrape_k8s *k, int64_t ns)
{
	int64_t end = mono_ns() + ns;

	pthread_mutex_lock(&k->lock);
	while (!__atomic_load_n(&k->stop, __ATOMIC_ACQUIRE) && mono_ns() < end) {
		struct timespec ts = { (time_t)(end / NS_PER_S), (long)(end % NS_PER_S) };

		pthread_cond_timedwait(&k->cond, &k->lock, &ts);
	}
	pthread_mutex_unlock(&k->lock);
}

/* The bearer token for the next request, or NULL; caller frees (and wipes). */
static char *token_get(struct scrape_k8s *k)
{
	struct buf b;
	char *t;
	int rc;

	if (k->token)
		return xstrdup(k->token);
	if (!k->token_file)
		return NULL;
	buf_init(&b, MAX_TOKEN);
	rc = buf_read_file(&b, k->token_file);
	if (rc) {
		log_warn("scrape: job=%s: kubernetes: token file %s: %s", k->job, k->token_file,
			 prof_strerror(rc));
		buf_release(&b);
		return NULL;
	}
	while (b.len && (b.p[b.len - 1] == '\n' || b.p[b.len - 1] == '\r' ||
			 b.p[b.len - 1] == ' ' || b.p[b.len - 1] == '\t'))
		b.len--;
	t = xstrndup(b.p ? b.p : "", b.len);
	memset(b.p, 0, b.len);
	buf_release(&b);
	return t;
}

static void token_put(char *t)
{
	if (t) {
		memset(t, 0, strlen(t));
		free(t);
	}
}

static void mark_changed(struct scrape_k8s *k)
{
	k->changed = true; /* under k->lock */
}

static int obj_find(struct watcher *w, const char *key)
{
	for (size_t i = 0; i < w->objs.n; i++)
		if (!strcmp(w->objs.v[i].key, key))
			return (int)i;
	return -1;
}

/* Apply one decoded event (the object is taken). Under no lock. */
static void apply_event(struct watcher *w, enum scrape_k8s_event_type type,
			struct scrape_k8s_object *o)
{
	struct scrape_k8s *k = w->k;
	int i;

	pthread_mutex_lock(&k->lock);
	i = obj_find(w, o->key);
	if (type == SCRAPE_K8S_DELETED) {
		if (i >= 0) {
			scrape_k8s_object_release(&w->objs.v[i]);
			w->objs.v[i] = w->objs.v[--w->objs.n];
			mark_changed(k);
		}
		scrape_k8s_object_release(o);
	} else if (i >= 0) {
		scrape_k8s_object_release(&w->objs.v[i]);
		w->objs.v[i] = *o;
		mark_changed(k);
	} else if (w->objs.n >= SCRAPE_K8S_MAX_OBJECTS) {
		log_warn("scrape: job=%s: kubernetes %s: more than %d objects; ignoring %s", k->job,
			 w->where, SCRAPE_K8S_MAX_OBJECTS, o->key);
		scrape_k8s_object_release(o);
	} else {
		VEC_PUSH(&w->objs, *o);
		mark_changed(k);
	}
	pthread_mutex_unlock(&k->lock);
	memset(o, 0, sizeof(*o));
}

static int do_list(struct watcher *w)
{
	struct scrape_k8s *k = w->k;
	enum scrape_k8s_role role = w->role;
	struct scrape_fetch_opts fo = { .timeout_ms = 60000,
					.max_body = SCRAPE_K8S_MAX_LIST,
					.stop = &k->stop,
					.tls = &k->tls,
					.pem = k->have_pem ? &k->pem : NULL };
	VEC(struct scrape_k8s_object) objs = { 0 };
	struct prof_err err;
	struct buf body;
	json_t *root = NULL, *items = NULL, *meta, *it;
	const char *rv = NULL;
	char *url, *tok;
	size_t i, bad = 0;
	int rc;

	prof_err_init(&err);
	buf_init(&body, SCRAPE_K8S_MAX_LIST);
	url = xasprintf("%s", w->url);
	url[strlen(url) - 1] = '\0'; /* the trailing '?' or '&' */
	tok = token_get(k);
	fo.bearer = tok;
	rc = scrape_fetch(w->curl, url, &fo, &body, NULL, &err);
	token_put(tok);
	if (!rc) {
		root = load_json(body.p, body.len, SCRAPE_K8S_MAX_LIST, &err);
		rc = root ? 0 : err.code ? err.code : -EINVAL;
	}
	buf_release(&body);
	if (!rc) {
		struct dec d = { &err, "", NULL };

		if (!json_is_object(root))
			rc = ferr(&d, "(list)", "expected an object");
		else if (!(rc = get_obj(&d, root, "metadata", "metadata", &meta)) &&
			 !(rc = get_str(&d, meta, "resourceVersion", "metadata.resourceVersion",
					true, &rv)) &&
			 !(rc = get_arr(&d, root, "items", "items", SCRAPE_K8S_MAX_OBJECTS,
					&items)) &&
			 strlen(rv) >= MAX_RV)
			rc = ferr(&d, "metadata.resourceVersion", "too long");
	}
	if (rc) {
		log_warn("scrape: job=%s: kubernetes %s: list %s: %s", k->job, w->where, url,
			 err.msg);
		json_decref(root);
		free(url);
		return rc;
	}
	if (items)
		json_array_foreach(items, i, it)
		{
			struct scrape_k8s_object o;
			struct prof_err oerr;

			prof_err_init(&oerr);
			if (decode_json(role, it, "", &o, &oerr)) {
				if (!bad++)
					log_warn(
						"scrape: job=%s: kubernetes %s: skipping items[%zu]: %s",
						k->job, w->where, i, oerr.msg);
				continue;
			}
			VEC_PUSH(&objs, o);
		}
	snprintf(w->rv, sizeof(w->rv), "%s", rv);
	json_decref(root);
	/* A big list's JSON tree is gone: give its pages back (lists are rare). */
	malloc_trim(0);
	pthread_mutex_lock(&k->lock);
	for (i = 0; i < w->objs.n; i++)
		scrape_k8s_object_release(&w->objs.v[i]);
	VEC_FREE(&w->objs);
	w->objs.v = objs.v;
	w->objs.n = objs.n;
	w->objs.cap = objs.cap;
	mark_changed(k);
	pthread_mutex_unlock(&k->lock);
	log_info("scrape: job=%s: kubernetes %s: listed %zu objects (%zu skipped) at "
		 "resourceVersion %s",
		 k->job, w->where, objs.n, bad, w->rv);
	free(url);
	return 0;
}

/* One complete line of the watch stream. Non-zero aborts the watch. */
static int watch_line(struct watcher *w, const char *p, size_t n)
{
	struct scrape_k8s *k = w->k;
	enum scrape_k8s_event_type type;
	struct scrape_k8s_object o;
	struct prof_err err;
	long code;
	int rc;

	while (n && (p[n - 1] == '\r' || p[n - 1] == ' '))
		n--;
	if (!n)
		return 0;
	prof_err_init(&err);
	rc = scrape_k8s_event_decode(w->role, p, n, &type, &code, &o, &err);
	if (rc) {
		log_warn("scrape: job=%s: kubernetes %s: skipping a watch event: %s", k->job,
			 w->where, err.msg);
		return 0;
	}
	if (type == SCRAPE_K8S_ERROR) {
		scrape_k8s_object_release(&o);
		if (code == 410) {
			w->gone = true;
			return -ESTALE;
		}
		log_warn("scrape: job=%s: kubernetes %s: %s", k->job, w->where, err.msg);
		return -EPROTO;
	}
	w->events++; /* not ERROR ones: a watch that only fails has delivered nothing */
	if (o.rv && *o.rv)
		snprintf(w->rv, sizeof(w->rv), "%s", o.rv);
	if (type == SCRAPE_K8S_BOOKMARK) {
		scrape_k8s_object_release(&o);
		return 0;
	}
	apply_event(w, type, &o);
	return 0;
}

static int watch_data(void *arg, const char *p, size_t n)
{
	struct watcher *w = arg;
	const char *nl;
	int rc;

	while ((nl = memchr(p, '\n', n))) {
		size_t part = (size_t)(nl - p);

		if (w->line.len) {
			if (buf_add(&w->line, p, part))
				return -PROF_ETOOBIG;
			rc = watch_line(w, w->line.p, w->line.len);
			buf_reset(&w->line);
		} else {
			rc = watch_line(w, p, part);
		}
		if (rc)
			return rc;
		n -= part + 1;
		p = nl + 1;
	}
	if (n && buf_add(&w->line, p, n)) {
		log_warn("scrape: job=%s: kubernetes %s: a watch event is larger than %zu bytes",
			 w->k->job, w->where, SCRAPE_K8S_MAX_EVENT);
		return -PROF_ETOOBIG;
	}
	return 0;
}

/* Watch from w->rv until the stream ends. 0 = ended normally; else why. */
static int do_watch(struct watcher *w, long *status)
{
	struct scrape_k8s *k = w->k;
	struct scrape_fetch_opts fo = { .timeout_ms = (WATCH_SECONDS + 30) * 1000L,
					.max_body = 64 << 10,
					.stop = &k->stop,
					.tls = &k->tls,
					.pem = k->have_pem ? &k->pem : NULL,
					.on_data = watch_data,
					.on_data_arg = w };
	struct prof_err err;
	struct buf body, rvq;
	char *url, *tok;
	int rc;

	buf_init(&body, 64 << 10);
	buf_init(&rvq, 4 * MAX_RV);
	(void)buf_add_url_escaped(&rvq, w->rv);
	url = xasprintf("%swatch=1&allowWatchBookmarks=true&timeoutSeconds=%d&resourceVersion=%.*s",
			w->url, WATCH_SECONDS, (int)rvq.len, rvq.p ? rvq.p : "");
	buf_release(&rvq);
	buf_reset(&w->line);
	w->gone = false;
	prof_err_init(&err);
	tok = token_get(k);
	fo.bearer = tok;
	rc = scrape_fetch(w->curl, url, &fo, &body, status, &err);
	token_put(tok);
	if (rc && rc != -ECANCELED && !w->gone && *status != 410)
		log_warn("scrape: job=%s: kubernetes %s: watch from resourceVersion %s: %s", k->job,
			 w->where, w->rv, err.msg);
	buf_release(&body);
	free(url);
	return rc;
}

static void *watcher_main(void *arg)
{
	struct watcher *w = arg;
	struct scrape_k8s *k = w->k;
	int64_t backoff = NS_PER_S;

	while (!__atomic_load_n(&k->stop, __ATOMIC_ACQUIRE)) {
		uint64_t events0 = w->events;
		int64_t t0;
		long status = 0;
		int rc;

		if (w->need_list) {
			if (do_list(w)) {
				k8s_sleep(k, backoff);
				backoff = PROF_MIN(backoff * 2, MAX_BACKOFF_NS);
				continue;
			}
			w->need_list = false;
		}
		t0 = mono_ns();
		rc = do_watch(w, &status);
		if (rc == -ECANCELED)
			break;
		if (w->events != events0 || mono_ns() - t0 > 10 * NS_PER_S)
			backoff = NS_PER_S; /* it worked for a while: a new failure starts over */
		if (w->gone || status == 410) {
			log_info("scrape: job=%s: kubernetes %s: resourceVersion %s is gone (410): "
				 "listing again",
				 k->job, w->where, w->rv);
			w->need_list = true;
			if (w->events == events0 && mono_ns() - t0 < NS_PER_S) {
				k8s_sleep(k,
					  backoff); /* 410 at once, again and again: do not spin */
				backoff = PROF_MIN(backoff * 2, MAX_BACKOFF_NS);
			}
			continue;
		}
		if (!rc && (w->events != events0 || mono_ns() - t0 >= NS_PER_S))
			continue; /* the server ended the watch: resume at once */
		/* Failed, or ended at once with nothing (a proxy?): do not spin. */
		if (rc == -EPROTO && status == 200)
			w->need_list = true; /* an ERROR event other than 410: start over */
		k8s_sleep(k, backoff);
		backoff = PROF_MIN(backoff * 2, MAX_BACKOFF_NS);
	}
	return NULL;
}

/* --- credentials ------------------------------------------------------------------------ */

static char *read_small(const char *path, struct prof_err *err)
{
	struct buf b;
	char *s;
	int rc;

	buf_init(&b, 4096);
	rc = buf_read_file(&b, path);
	if (rc) {
		buf_release(&b);
		prof_err_set(err, rc, -1, "%s: %s", path, prof_strerror(rc));
		return NULL;
	}
	while (b.len && (b.p[b.len - 1] == '\n' || b.p[b.len - 1] == ' '))
		b.len--;
	s = xstrndup(b.p ? b.p : "", b.len);
	buf_release(&b);
	return s;
}

/* The value node of @key in mapping @map, or NULL. */
static yaml_node_t *ymap_get(struct ywalk *y, yaml_node_t *map, const char *key)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	YWALK_MAP_FOREACH(map, pair)
	{
		const char *s = ywalk_scalar(ywalk_node(y, pair->key));

		if (s && !strcmp(s, key))
			return ywalk_node(y, pair->value);
	}
	return NULL;
}

/* The @inner mapping of the entry named @name in the list @list (kubeconfig's shape). */
static yaml_node_t *ynamed(struct ywalk *y, yaml_node_t *list, const char *name, const char *inner)
{
	if (!list || list->type != YAML_SEQUENCE_NODE)
		return NULL;
	YWALK_SEQ_FOREACH(list, it)
	{
		yaml_node_t *e = ywalk_node(y, *it);
		const char *n = ywalk_scalar(ymap_get(y, e, "name"));

		if (n && !strcmp(n, name))
			return ymap_get(y, e, inner);
	}
	return NULL;
}

/* A kubeconfig path field: relative to the kubeconfig's directory. */
static char *kc_path(const char *kc, const char *p)
{
	const char *slash = strrchr(kc, '/');

	if (!p)
		return NULL;
	if (p[0] == '/' || !slash)
		return xstrdup(p);
	return xasprintf("%.*s/%s", (int)(slash - kc), kc, p);
}

/* A kubeconfig *-data field (base64 PEM) of @map into *@out / *@len; absent: untouched. */
static int kc_data(struct scrape_k8s *k, const char *path, struct ywalk *y, yaml_node_t *map,
		   const char *key, const char **out, size_t *len, struct prof_err *err)
{
	const char *s = ywalk_scalar(ymap_get(y, map, key));
	uint8_t *pem;

	if (!s)
		return 0;
	pem = parse_base64(s, strlen(s), len);
	if (!pem || !*len) {
		free(pem);
		return prof_err_set(err, -EINVAL, -1, "kubeconfig_file %s: %s: not base64", path,
				    key);
	}
	*out = (const char *)pem;
	k->have_pem = true;
	return 0;
}

static int load_kubeconfig(struct scrape_k8s *k, char **ns, struct prof_err *err)
{
	static const char *const unsupported[] = { "exec", "auth-provider" };
	const char *path = k->c->kubeconfig_file, *cur, *cname, *uname, *s;
	yaml_node_t *root, *ctx, *cl, *user;
	struct ywalk y = { 0 };
	struct buf b;
	int rc;

	buf_init(&b, 1 << 20);
	rc = buf_read_file(&b, path);
	if (rc) {
		buf_release(&b);
		return prof_err_set(err, rc, -1, "kubeconfig_file %s: %s", path, prof_strerror(rc));
	}
	rc = ywalk_load(&y, b.p, b.len, path, err, &root);
	memset(b.p, 0, b.len);
	buf_release(&b);
	if (rc)
		goto out;
	cur = ywalk_scalar(ymap_get(&y, root, "current-context"));
	ctx = cur ? ynamed(&y, ymap_get(&y, root, "contexts"), cur, "context") : NULL;
	cname = ywalk_scalar(ymap_get(&y, ctx, "cluster"));
	uname = ywalk_scalar(ymap_get(&y, ctx, "user"));
	cl = cname ? ynamed(&y, ymap_get(&y, root, "clusters"), cname, "cluster") : NULL;
	user = uname ? ynamed(&y, ymap_get(&y, root, "users"), uname, "user") : NULL;
	s = ywalk_scalar(ymap_get(&y, cl, "server"));
	if (!s || (strncmp(s, "https://", 8) && strncmp(s, "http://", 7))) {
		rc = prof_err_set(err, -EINVAL, -1,
				  "kubeconfig_file %s: current-context '%s' names no cluster with "
				  "an http(s) server",
				  path, cur ? cur : "");
		goto out;
	}
	k->server = xstrdup(s);
	for (size_t i = 0; i < PROF_ARRAY_SIZE(unsupported); i++)
		if (ymap_get(&y, cl, unsupported[i]) || ymap_get(&y, user, unsupported[i])) {
			rc = prof_err_set(
				err, -EINVAL, -1,
				"kubeconfig_file %s: '%s' is not supported (give a token, "
				"a tokenFile or a client certificate)",
				path, unsupported[i]);
			goto out;
		}
	if ((rc = kc_data(k, path, &y, cl, "certificate-authority-data", &k->pem.ca, &k->pem.ca_len,
			  err)) ||
	    (rc = kc_data(k, path, &y, user, "client-certificate-data", &k->pem.cert,
			  &k->pem.cert_len, err)) ||
	    (rc = kc_data(k, path, &y, user, "client-key-data", &k->pem.key, &k->pem.key_len, err)))
		goto out;
	k->tls.ca_file = kc_path(path, ywalk_scalar(ymap_get(&y, cl, "certificate-authority")));
	s = ywalk_scalar(ymap_get(&y, cl, "insecure-skip-tls-verify"));
	k->tls.insecure_skip_verify = s && !strcmp(s, "true");
	k->tls.cert_file = kc_path(path, ywalk_scalar(ymap_get(&y, user, "client-certificate")));
	k->tls.key_file = kc_path(path, ywalk_scalar(ymap_get(&y, user, "client-key")));
	s = ywalk_scalar(ymap_get(&y, user, "token"));
	if (s)
		k->token = xstrdup(s);
	k->token_file = kc_path(path, ywalk_scalar(ymap_get(&y, user, "tokenFile")));
	s = ywalk_scalar(ymap_get(&y, ctx, "namespace"));
	*ns = xstrdup(s ? s : "default");
out:
	ywalk_release(&y);
	return rc;
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

/* Server, token and TLS from the config, the kubeconfig or the pod's service account. */
static int credentials(struct scrape_k8s *k, char **own_ns, struct prof_err *err)
{
	const struct scrape_k8s_sd *c = k->c;
	const char *host, *port;
	int rc;

	*own_ns = NULL;
	if (c->kubeconfig_file) {
		if ((rc = load_kubeconfig(k, own_ns, err)))
			return rc;
	} else if (c->api_server) {
		k->server = xstrdup(c->api_server);
		k->token_file = dup_or_null(c->bearer_token_file);
		k->tls.ca_file = dup_or_null(c->tls.ca_file);
	} else {
		host = getenv("KUBERNETES_SERVICE_HOST");
		port = getenv("KUBERNETES_SERVICE_PORT");
		if (!host || !*host || !port || !*port)
			return prof_err_set(err, -EINVAL, -1,
					    "kubernetes_sd_configs: no api_server or "
					    "kubeconfig_file, and not in a cluster "
					    "(KUBERNETES_SERVICE_HOST/PORT unset)");
		k->server = strchr(host, ':') ? xasprintf("https://[%s]:%s", host, port)
					      : xasprintf("https://%s:%s", host, port);
		k->token_file =
			xstrdup(c->bearer_token_file ? c->bearer_token_file : SA_DIR "/token");
		k->tls.ca_file = xstrdup(c->tls.ca_file ? c->tls.ca_file : SA_DIR "/ca.crt");
	}
	if (!c->kubeconfig_file) {
		k->tls.cert_file = dup_or_null(c->tls.cert_file);
		k->tls.key_file = dup_or_null(c->tls.key_file);
		k->tls.insecure_skip_verify = c->tls.insecure_skip_verify;
	} else if (c->bearer_token_file) {
		free(k->token_file);
		k->token_file = xstrdup(c->bearer_token_file);
	}
	while (strlen(k->server) > 8 && k->server[strlen(k->server) - 1] == '/')
		k->server[strlen(k->server) - 1] = '\0';
	if (c->own_namespace && !*own_ns) {
		*own_ns = read_small(SA_DIR "/namespace", err);
		if (!*own_ns)
			return err ? err->code : -ENOENT;
	}
	return 0;
}

/* --- lifecycle -------------------------------------------------------------------------- */

static const char *const collections[] = { "pods", "endpoints", "services", "nodes" };

static void watcher_init(struct scrape_k8s *k, struct watcher *w, const char *ns,
			 enum scrape_k8s_role role)
{
	const struct scrape_k8s_sd *c = k->c;
	struct buf u;

	buf_init(&u, 1 << 16);
	memset(w, 0, sizeof(*w));
	w->k = k;
	w->role = role;
	w->targets = role == c->role;
	if (ns)
		(void)buf_addf(&u, "%s/api/v1/namespaces/%s/%s?", k->server, ns, collections[role]);
	else
		(void)buf_addf(&u, "%s/api/v1/%s?", k->server, collections[role]);
	for (size_t i = 0; i < c->nselectors; i++) {
		const struct scrape_k8s_selector *s = &c->selectors[i];

		if (s->role != role)
			continue;
		if (s->label) {
			(void)buf_addstr(&u, "labelSelector=");
			(void)buf_add_url_escaped(&u, s->label);
			(void)buf_addstr(&u, "&");
		}
		if (s->field) {
			(void)buf_addstr(&u, "fieldSelector=");
			(void)buf_add_url_escaped(&u, s->field);
			(void)buf_addstr(&u, "&");
		}
	}
	w->url = xstrndup(u.p, u.len);
	buf_release(&u);
	w->where = ns ? xasprintf("%s in namespace %s", collections[role], ns)
		      : xasprintf("%s in all namespaces", collections[role]);
	w->need_list = true;
	buf_init(&w->line, SCRAPE_K8S_MAX_EVENT);
	w->curl = scrape_fetch_handle_new();
}

int scrape_k8s_new(const struct scrape_k8s_sd *c, const char *job, bool once,
		   struct scrape_k8s **out, struct prof_err *err)
{
	struct scrape_k8s *k;
	pthread_condattr_t ca;
	char *own = NULL;
	const char *nss[65];
	size_t nns = 0;
	int rc;

	*out = NULL;
	if ((rc = scrape_fetch_init(err)))
		return rc;
	k = xcalloc(1, sizeof(*k));
	k->c = c;
	k->job = xstrdup(job);
	pthread_mutex_init(&k->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&k->cond, &ca);
	pthread_condattr_destroy(&ca);
	if ((rc = credentials(k, &own, err))) {
		free(own);
		scrape_k8s_free(k);
		return rc;
	}
	if (c->role != SCRAPE_K8S_NODE) {
		for (size_t i = 0; i < c->nnamespaces && nns < 64; i++)
			nss[nns++] = c->namespaces[i];
		if (own && c->own_namespace) {
			bool dup = false;

			for (size_t i = 0; i < nns && !dup; i++)
				dup = !strcmp(nss[i], own);
			if (!dup)
				nss[nns++] = own;
		}
	}
	/* endpoints: also pods and services, whose labels join its targets (Prometheus). */
	k->nroles = c->role == SCRAPE_K8S_ENDPOINTS ? 3 : 1;
	k->nw = (nns ? nns : 1) * k->nroles;
	k->w = xcalloc(k->nw, sizeof(*k->w));
	for (size_t i = 0; i < k->nw; i++) {
		static const enum scrape_k8s_role joined[] = { SCRAPE_K8S_ENDPOINTS, SCRAPE_K8S_POD,
							       SCRAPE_K8S_SERVICE };

		watcher_init(k, &k->w[i], nns ? nss[i / k->nroles] : NULL,
			     k->nroles > 1 ? joined[i % k->nroles] : c->role);
	}
	free(own);
	for (size_t i = 0; i < k->nw; i++) {
		if (once) {
			(void)do_list(&k->w[i]);
			continue;
		}
		rc = pthread_create(&k->w[i].th, NULL, watcher_main, &k->w[i]);
		if (rc) {
			scrape_k8s_free(k);
			return prof_err_set(err, -rc, -1, "kubernetes: cannot start a thread: %s",
					    strerror(rc));
		}
		k->w[i].started = true;
	}
	*out = k;
	return 0;
}

bool scrape_k8s_take_changed(struct scrape_k8s *k)
{
	bool c;

	pthread_mutex_lock(&k->lock);
	c = k->changed;
	k->changed = false;
	pthread_mutex_unlock(&k->lock);
	return c;
}

/* Copy onto @dst the labels of @src starting with @prefix but not with @except (may be NULL). */
static void copy_prefixed(struct scrape_labels *dst, const struct scrape_labels *src,
			  const char *prefix, const char *except)
{
	for (size_t i = 0; i < src->l.n; i++) {
		const struct scrape_label *l = &src->l.v[i];

		if (!strncmp(l->name, prefix, strlen(prefix)) &&
		    (!except || strncmp(l->name, except, strlen(except))))
			scrape_labels_set(dst, l->name, l->value);
	}
}

static const struct scrape_k8s_object *find_obj(const struct watcher *w, const char *ns,
						const char *name)
{
	char key[520];

	if (!ns || !name)
		return NULL;
	snprintf(key, sizeof(key), "%s/%s", ns, name);
	for (size_t i = 0; i < w->objs.n; i++)
		if (!strcmp(w->objs.v[i].key, key))
			return &w->objs.v[i];
	return NULL;
}

/* The service_* labels (but the port ones) of the service named like the endpoints of @g. */
static void service_labels(const struct watcher *svcs, const struct scrape_group *g,
			   struct scrape_labels *out)
{
	const struct scrape_k8s_object *svc;

	svc = find_obj(svcs, scrape_labels_get(&g->labels, "__meta_kubernetes_namespace"),
		       scrape_labels_get(&g->labels, "__meta_kubernetes_endpoints_name"));
	if (svc && svc->ngroups)
		copy_prefixed(out, &svc->groups[0].labels, "__meta_kubernetes_service_",
			      "__meta_kubernetes_service_port_");
}

/*
 * An endpoints target with its service's labels and its pod's, as
 * Prometheus joins them: the service named like the endpoints (its
 * __meta_kubernetes_service_* labels but the port ones), and the pod the
 * address points at (its __meta_kubernetes_pod_* labels; the container
 * and port ones of the container port at the same address, if declared).
 */
static void join_endpoint(const struct watcher *pods, const struct watcher *svcs,
			  const struct scrape_group *g, struct scrape_labels *out)
{
	const char *ns = scrape_labels_get(&g->labels, "__meta_kubernetes_namespace");
	const struct scrape_k8s_object *pod = NULL;
	const char *kind;

	scrape_labels_copy(out, &g->labels);
	service_labels(svcs, g, out);
	kind = scrape_labels_get(&g->labels, "__meta_kubernetes_endpoint_address_target_kind");
	if (kind && !strcmp(kind, "Pod"))
		pod = find_obj(pods, ns,
			       scrape_labels_get(&g->labels,
						 "__meta_kubernetes_endpoint_address_target_name"));
	if (!pod || !pod->ngroups)
		return;
	for (size_t i = 0; i < pod->ngroups; i++)
		if (!strcmp(pod->groups[i].targets[0], g->targets[0])) {
			copy_prefixed(out, &pod->groups[i].labels, "__meta_kubernetes_pod_", NULL);
			return;
		}
	copy_prefixed(out, &pod->groups[0].labels, "__meta_kubernetes_pod_",
		      "__meta_kubernetes_pod_container_");
}

/*
 * Like Prometheus, a target for each declared container port of a pod
 * behind @eo that no endpoint address names: the endpoints', service's
 * and pod's labels, no endpoint_* ones.
 */
static void endpoint_pod_extras(const struct watcher *pods, const struct watcher *svcs,
				const struct scrape_k8s_object *eo,
				void (*fn)(void *arg, const struct scrape_group *g), void *arg)
{
	const char *seen[SCRAPE_K8S_MAX_TARGETS_PER_OBJECT];
	size_t nseen = 0;

	for (size_t i = 0; i < eo->ngroups; i++) {
		const struct scrape_group *g = &eo->groups[i];
		const char *ns = scrape_labels_get(&g->labels, "__meta_kubernetes_namespace");
		const char *kind, *name;
		const struct scrape_k8s_object *pod;
		bool dup = false;

		kind = scrape_labels_get(&g->labels,
					 "__meta_kubernetes_endpoint_address_target_kind");
		name = scrape_labels_get(&g->labels,
					 "__meta_kubernetes_endpoint_address_target_name");
		if (!kind || strcmp(kind, "Pod") || !name)
			continue;
		for (size_t k = 0; k < nseen && !dup; k++)
			dup = !strcmp(seen[k], name);
		if (dup || !(pod = find_obj(pods, ns, name)))
			continue;
		seen[nseen++] = name; /* at most one per group: within bounds */
		for (size_t p = 0; p < pod->ngroups; p++) {
			const struct scrape_group *pg = &pod->groups[p];
			struct scrape_group x = { pg->targets, 1, { { 0 } } };
			bool covered = false;

			if (!scrape_labels_get(&pg->labels,
					       "__meta_kubernetes_pod_container_port_number"))
				continue;
			for (size_t e = 0; e < eo->ngroups && !covered; e++)
				covered = !strcmp(eo->groups[e].targets[0], pg->targets[0]);
			if (covered)
				continue;
			copy_prefixed(&x.labels, &g->labels, "__meta_kubernetes_endpoints_", NULL);
			scrape_labels_set(&x.labels, "__meta_kubernetes_namespace", ns);
			service_labels(svcs, g, &x.labels);
			copy_prefixed(&x.labels, &pg->labels, "__meta_kubernetes_pod_", NULL);
			fn(arg, &x);
			scrape_labels_release(&x.labels);
		}
	}
}

void scrape_k8s_foreach_group(struct scrape_k8s *k,
			      void (*fn)(void *arg, const struct scrape_group *g), void *arg)
{
	pthread_mutex_lock(&k->lock);
	for (size_t i = 0; i < k->nw; i++) {
		const struct watcher *w = &k->w[i];

		if (!w->targets)
			continue;
		for (size_t j = 0; j < w->objs.n; j++) {
			if (w->role == SCRAPE_K8S_ENDPOINTS && k->nroles == 3)
				endpoint_pod_extras(&k->w[i + 1], &k->w[i + 2], &w->objs.v[j], fn,
						    arg);
			for (size_t g = 0; g < w->objs.v[j].ngroups; g++) {
				const struct scrape_group *grp = &w->objs.v[j].groups[g];
				struct scrape_group joined;

				if (w->role != SCRAPE_K8S_ENDPOINTS || k->nroles != 3) {
					fn(arg, grp);
					continue;
				}
				joined = *grp;
				memset(&joined.labels, 0, sizeof(joined.labels));
				join_endpoint(&k->w[i + 1], &k->w[i + 2], grp, &joined.labels);
				fn(arg, &joined);
				scrape_labels_release(&joined.labels);
			}
		}
	}
	pthread_mutex_unlock(&k->lock);
}

void scrape_k8s_free(struct scrape_k8s *k)
{
	if (!k)
		return;
	pthread_mutex_lock(&k->lock);
	__atomic_store_n(&k->stop, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&k->cond);
	pthread_mutex_unlock(&k->lock);
	for (size_t i = 0; i < k->nw; i++) {
		struct watcher *w = &k->w[i];

		if (w->started)
			pthread_join(w->th, NULL);
		for (size_t j = 0; j < w->objs.n; j++)
			scrape_k8s_object_release(&w->objs.v[j]);
		VEC_FREE(&w->objs);
		buf_release(&w->line);
		scrape_fetch_handle_free(w->curl);
		free(w->url);
		free(w->where);
	}
	free(k->w);
	free(k->job);
	free(k->server);
	free(k->token_file);
	token_put(k->token);
	free(k->tls.ca_file);
	free(k->tls.cert_file);
	free(k->tls.key_file);
	if (k->pem.key)
		memset((char *)k->pem.key, 0, k->pem.key_len);
	free((char *)k->pem.ca);
	free((char *)k->pem.cert);
	free((char *)k->pem.key);
	pthread_mutex_destroy(&k->lock);
	pthread_cond_destroy(&k->cond);
	free(k);
}
