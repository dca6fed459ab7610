// SPDX-License-Identifier: Apache-2.0
/*
 * k8s_decode.c - the Kubernetes object decoder of discovery (jansson):
 * pods, endpoints, services and nodes to targets with Prometheus'
 * __meta_kubernetes_* labels, and watch events; see k8s.h, k8s_int.h.
 *
 * Objects are untrusted input (anything that can create a pod writes its
 * annotations): every field is type-checked, every count bounded, and an
 * object that does not decode is skipped, never trusted half-way
 * (tests/fuzz/fuzz_k8s_sd.c).
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/parse.h"
#include "scrape/k8s_int.h"

#include <jansson.h>

int k8s_ferr(struct dec *d, const char *field, const char *fmt, ...)
{
	char msg[300];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return prof_err_set(d->err, -EINVAL, -1, "%s%s: %s", d->prefix, field, msg);
}

/* @o[@key] as an object (NULL when absent or null); -EINVAL for another type. */
int k8s_get_obj(struct dec *d, json_t *o, const char *key, const char *path, json_t **out)
{
	json_t *v = o ? json_object_get(o, key) : NULL;

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return k8s_ferr(d, path, "expected an object");
	*out = v;
	return 0;
}

int k8s_get_arr(struct dec *d, json_t *o, const char *key, const char *path, size_t max,
		json_t **out)
{
	json_t *v = o ? json_object_get(o, key) : NULL;

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return k8s_ferr(d, path, "expected a list");
	if (json_array_size(v) > max)
		return prof_err_set(d->err, -PROF_ETOOBIG, -1, "%s%s: more than %zu entries",
				    d->prefix, path, max);
	*out = v;
	return 0;
}

/* @o[@key] as a string without NUL bytes (NULL when absent or null). */
int k8s_get_str(struct dec *d, json_t *o, const char *key, const char *path, bool required,
		const char **out)
{
	json_t *v = o ? json_object_get(o, key) : NULL;

	*out = NULL;
	if (!v || json_is_null(v)) {
		if (required)
			return k8s_ferr(d, path, "missing (expected a string)");
		return 0;
	}
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
		return k8s_ferr(d, path, "expected a string");
	*out = json_string_value(v);
	return 0;
}

static int get_port(struct dec *d, json_t *o, const char *key, const char *path, long *out)
{
	json_t *v = o ? json_object_get(o, key) : NULL;

	if (!v || !json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 65535)
		return k8s_ferr(d, path, "expected an integer 1..65535");
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
	if ((rc = k8s_get_obj(d, meta, key, path, &obj)) || !obj)
		return rc;
	if (json_object_size(obj) > SCRAPE_K8S_MAX_KV)
		return prof_err_set(d->err, -PROF_ETOOBIG, -1, "%s%s: more than %d entries",
				    d->prefix, path, SCRAPE_K8S_MAX_KV);
	json_object_foreach(obj, k, v)
	{
		size_t n;

		if (!json_is_string(v))
			return k8s_ferr(d, path, "'%.80s': expected a string", k);
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
		/* A value with a NUL byte (an annotation may hold any string) is present only. */
		if (json_string_length(v) <= SCRAPE_MAX_LABEL_VALUE &&
		    strlen(json_string_value(v)) == json_string_length(v))
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
		return k8s_ferr(d, "(object)", "expected an object");
	if ((rc = k8s_get_obj(d, obj, "metadata", "metadata", meta)))
		return rc;
	if (!*meta)
		return k8s_ferr(d, "metadata", "missing");
	if ((rc = k8s_get_str(d, *meta, "name", "metadata.name", true, &name)))
		return rc;
	if (namespaced &&
	    (rc = k8s_get_str(d, *meta, "namespace", "metadata.namespace", true, &ns)))
		return rc;
	if ((rc = k8s_get_str(d, *meta, "resourceVersion", "metadata.resourceVersion", false, &rv)))
		return rc;
	if (!*name || strlen(name) > 253 || (ns && (!*ns || strlen(ns) > 253)))
		return k8s_ferr(d, "metadata.name", "expected 1..253 bytes");
	if (rv && strlen(rv) >= MAX_RV)
		return k8s_ferr(d, "metadata.resourceVersion", "longer than %d bytes", MAX_RV - 1);
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
		return k8s_ferr(d, "(address)", "longer than 512 bytes");
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
			return k8s_ferr(d, path, "expected a list of objects");
		if ((rc = k8s_get_str(d, s, "name", path, false, &n)) ||
		    (rc = k8s_get_str(d, s, "containerID", path, false, &id)))
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
			return k8s_ferr(d, path, "expected an object");
		snprintf(path, sizeof(path), "spec.%s[%zu].name", what, i);
		if ((rc = k8s_get_str(d, c, "name", path, true, &name)))
			return rc;
		snprintf(path, sizeof(path), "spec.%s[%zu].image", what, i);
		if ((rc = k8s_get_str(d, c, "image", path, false, &image)))
			return rc;
		snprintf(path, sizeof(path), "spec.%s[%zu].ports", what, i);
		if ((rc = k8s_get_arr(d, c, "ports", path, SCRAPE_K8S_MAX_TARGETS_PER_OBJECT,
				      &ports)))
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
				rc = k8s_ferr(d, path, "expected an object");
			else
				rc = get_port(d, p, "containerPort", path, &port);
			if (!rc) {
				snprintf(path, sizeof(path), "spec.%s[%zu].ports[%zu]", what, i,
					 pi);
				rc = k8s_get_str(d, p, "name", path, false, &pname);
			}
			if (!rc)
				rc = k8s_get_str(d, p, "protocol", path, false, &proto);
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
	if ((rc = k8s_get_arr(d, status, "conditions", "status.conditions", 64, &conds)) || !conds)
		return rc;
	json_array_foreach(conds, i, c)
	{
		const char *type, *st;

		if (!json_is_object(c))
			return k8s_ferr(d, "status.conditions", "expected a list of objects");
		if ((rc = k8s_get_str(d, c, "type", "status.conditions[].type", false, &type)) ||
		    (rc = k8s_get_str(d, c, "status", "status.conditions[].status", false, &st)))
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
	if ((rc = k8s_get_str(d, meta, "uid", "metadata.uid", false, &uid)))
		return rc;
	meta_set(ls, "pod_uid", uid);
	if ((rc = k8s_get_arr(d, meta, "ownerReferences", "metadata.ownerReferences", 64, &owners)))
		return rc;
	if (owners)
		json_array_foreach(owners, i, ow)
		{
			const char *kind, *name;
			json_t *ctl;

			if (!json_is_object(ow))
				return k8s_ferr(d, "metadata.ownerReferences",
						"expected a list of objects");
			ctl = json_object_get(ow, "controller");
			if (!json_is_true(ctl))
				continue;
			if ((rc = k8s_get_str(d, ow, "kind", "metadata.ownerReferences[].kind",
					      false, &kind)) ||
			    (rc = k8s_get_str(d, ow, "name", "metadata.ownerReferences[].name",
					      false, &name)))
				return rc;
			meta_set(ls, "pod_controller_kind", kind);
			meta_set(ls, "pod_controller_name", name);
			break;
		}
	if ((rc = k8s_get_obj(d, obj, "spec", "spec", &spec)) ||
	    (rc = k8s_get_obj(d, obj, "status", "status", &status)))
		return rc;
	if ((rc = k8s_get_str(d, spec, "nodeName", "spec.nodeName", false, &node)) ||
	    (rc = k8s_get_str(d, status, "podIP", "status.podIP", false, &ip)) ||
	    (rc = k8s_get_str(d, status, "hostIP", "status.hostIP", false, &host_ip)) ||
	    (rc = k8s_get_str(d, status, "phase", "status.phase", false, &phase)) ||
	    (rc = pod_ready(d, status, &ready)))
		return rc;
	if ((rc = k8s_get_arr(d, spec, "containers", "spec.containers", 256, &ctrs)) ||
	    (rc = k8s_get_arr(d, spec, "initContainers", "spec.initContainers", 256, &ictrs)) ||
	    (rc = k8s_get_arr(d, status, "containerStatuses", "status.containerStatuses", 256,
			      &cs)) ||
	    (rc = k8s_get_arr(d, status, "initContainerStatuses", "status.initContainerStatuses",
			      256, &ics)))
		return rc;
	if (!ip || !*ip)
		return 0; /* not scheduled or not started: no targets (Prometheus) */
	if (strlen(ip) > 64)
		return k8s_ferr(d, "status.podIP", "longer than 64 bytes");
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
			return k8s_ferr(d, path, "expected a list of objects");
		if ((rc = k8s_get_str(d, a, "ip", path, true, &ip)) ||
		    (rc = k8s_get_str(d, a, "hostname", path, false, &host)) ||
		    (rc = k8s_get_str(d, a, "nodeName", path, false, &node)) ||
		    (rc = k8s_get_obj(d, a, "targetRef", path, &ref)))
			return rc;
		if (ref && ((rc = k8s_get_str(d, ref, "kind", path, false, &tkind)) ||
			    (rc = k8s_get_str(d, ref, "name", path, false, &tname))))
			return rc;
		if (strlen(ip) > 64)
			return k8s_ferr(d, path, "ip longer than 64 bytes");
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
				rc = k8s_ferr(d, "subsets[].ports", "expected a list of objects");
			else if (!(rc = get_port(d, p, "port", "subsets[].ports[].port", &port)) &&
				 !(rc = k8s_get_str(d, p, "name", "subsets[].ports[].name", false,
						    &pname)))
				rc = k8s_get_str(d, p, "protocol", "subsets[].ports[].protocol",
						 false, &proto);
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
	if ((rc = k8s_get_arr(d, obj, "subsets", "subsets", 256, &subsets)) || !subsets)
		return rc;
	json_array_foreach(subsets, i, ss)
	{
		json_t *addrs, *nready, *ports;

		if (!json_is_object(ss))
			return k8s_ferr(d, "subsets", "expected a list of objects");
		if ((rc = k8s_get_arr(d, ss, "addresses", "subsets[].addresses",
				      SCRAPE_K8S_MAX_TARGETS_PER_OBJECT, &addrs)) ||
		    (rc = k8s_get_arr(d, ss, "notReadyAddresses", "subsets[].notReadyAddresses",
				      SCRAPE_K8S_MAX_TARGETS_PER_OBJECT, &nready)) ||
		    (rc = k8s_get_arr(d, ss, "ports", "subsets[].ports", 256, &ports)))
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
	if ((rc = k8s_get_obj(d, obj, "spec", "spec", &spec)) ||
	    (rc = k8s_get_obj(d, obj, "status", "status", &status)) ||
	    (rc = k8s_get_obj(d, status, "loadBalancer", "status.loadBalancer", &lb)) ||
	    (rc = k8s_get_arr(d, lb, "ingress", "status.loadBalancer.ingress", 256, &ing)) ||
	    (rc = k8s_get_str(d, spec, "type", "spec.type", false, &type)) ||
	    (rc = k8s_get_str(d, spec, "clusterIP", "spec.clusterIP", false, &cip)) ||
	    (rc = k8s_get_str(d, spec, "externalName", "spec.externalName", false, &ext)) ||
	    (rc = k8s_get_arr(d, spec, "ports", "spec.ports", 256, &ports)))
		return rc;
	if (ing && json_array_size(ing) &&
	    (rc = k8s_get_str(d, json_array_get(ing, 0), "ip", "status.loadBalancer.ingress[0].ip",
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
			return k8s_ferr(d, "spec.ports", "expected a list of objects");
		if ((rc = get_port(d, p, "port", "spec.ports[].port", &port)) ||
		    (rc = k8s_get_str(d, p, "name", "spec.ports[].name", false, &pname)) ||
		    (rc = k8s_get_str(d, p, "protocol", "spec.ports[].protocol", false, &proto)))
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
	if ((rc = k8s_get_obj(d, obj, "spec", "spec", &spec)) ||
	    (rc = k8s_get_obj(d, obj, "status", "status", &status)) ||
	    (rc = k8s_get_str(d, spec, "providerID", "spec.providerID", false, &provider)) ||
	    (rc = k8s_get_arr(d, status, "addresses", "status.addresses", 64, &addrs)) ||
	    (rc = k8s_get_obj(d, status, "daemonEndpoints", "status.daemonEndpoints", &de)) ||
	    (rc = k8s_get_obj(d, de, "kubeletEndpoint", "status.daemonEndpoints.kubeletEndpoint",
			      &ke)))
		return rc;
	meta_set(ls, "node_provider_id", provider);
	scrape_labels_set(ls, "instance", name);
	if (addrs)
		json_array_foreach(addrs, i, a)
		{
			char what[SCRAPE_MAX_LABEL_NAME], san[64];
			const char *type, *addr;

			if (!json_is_object(a))
				return k8s_ferr(d, "status.addresses",
						"expected a list of objects");
			if ((rc = k8s_get_str(d, a, "type", "status.addresses[].type", true,
					      &type)) ||
			    (rc = k8s_get_str(d, a, "address", "status.addresses[].address", true,
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
		return k8s_ferr(d, "status.addresses",
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

int k8s_decode_json(enum scrape_k8s_role role, json_t *obj, const char *prefix,
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

json_t *k8s_load_json(const char *text, size_t n, size_t max, struct prof_err *err)
{
	json_error_t je;
	json_t *root;

	if (n > max) {
		prof_err_set(err, -PROF_ETOOBIG, -1, "larger than %zu bytes", max);
		return NULL;
	}
	/*
	 * NUL bytes are let through the parser so that one object holding one
	 * fails alone (k8s_get_str refuses such a string) instead of its list.
	 */
	root = json_loadb(text ? text : "", n, JSON_ALLOW_NUL, &je);
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
	root = k8s_load_json(json, n, SCRAPE_K8S_MAX_EVENT, err);
	if (!root)
		return err && err->code ? err->code : -EINVAL;
	rc = k8s_decode_json(role, root, "", o, err);
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
	root = k8s_load_json(line, n, SCRAPE_K8S_MAX_EVENT, err);
	if (!root)
		return err && err->code ? err->code : -EINVAL;
	if (!json_is_object(root)) {
		rc = k8s_ferr(&d, "(event)", "expected an object");
		goto out;
	}
	if ((rc = k8s_get_str(&d, root, "type", "type", true, &ts)) ||
	    (rc = k8s_get_obj(&d, root, "object", "object", &obj)))
		goto out;
	for (t = 0; t < PROF_ARRAY_SIZE(event_types) && strcmp(ts, event_types[t]); t++)
		;
	if (t == PROF_ARRAY_SIZE(event_types)) {
		rc = k8s_ferr(&d, "type", "unknown event type '%.40s'", ts);
		goto out;
	}
	if (!obj) {
		rc = k8s_ferr(&d, "object", "missing");
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
		if (!(rc = k8s_get_obj(&d, obj, "metadata", "metadata", &meta)) &&
		    !(rc = k8s_get_str(&d, meta, "resourceVersion", "metadata.resourceVersion",
				       true, &rv)) &&
		    strlen(rv) >= MAX_RV)
			rc = k8s_ferr(&d, "metadata.resourceVersion", "longer than %d bytes",
				      MAX_RV - 1);
		if (!rc)
			o->rv = xstrdup(rv);
		goto out;
	}
	rc = k8s_decode_json(role, obj, "object.", o, err);
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
