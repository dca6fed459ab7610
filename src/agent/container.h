/* SPDX-License-Identifier: Apache-2.0 */
/*
 * container.h - container and Kubernetes identity of a process from its
 * cgroup path (/proc/PID/cgroup), and its pid in its own PID namespace
 * (NSpid in /proc/PID/status).
 *
 * Container runtimes name a container's cgroup after its 64-hex id:
 *   docker (systemd driver)     .../docker-<id>.scope
 *   docker (cgroupfs driver)    /docker/<id>
 *   containerd (CRI, systemd)   .../cri-containerd-<id>.scope
 *   containerd (cgroupfs)       /kubepods/burstable/pod<uid>/<id>
 *   cri-o                       .../crio-<id>.scope (and crio-conmon-<id>)
 *   podman                      .../libpod-<id>.scope
 * and the kubelet names a pod's cgroup after its UID:
 *   systemd driver   kubepods-burstable-pod<uid with '_' for '-'>.slice
 *   cgroupfs driver  /kubepods/besteffort/pod<uid>/
 * (sources: kubelet pkg/kubelet/cm/cgroup_manager_linux.go, containerd
 * and cri-o cgroup naming, the OpenTelemetry eBPF profiler's
 * libpf/pfnamespaces + containermetadata regexes).
 *
 * The rule used here, robust to the variants: the container id is the
 * last path component's run of exactly 64 hex digits, taken from the
 * innermost match on any hierarchy line (v2 "0::" first); the pod UID is
 * the 36-character UUID after "pod" in a component. A "conmon" cgroup
 * (cri-o's monitor process) is not a container. Pure functions, no I/O.
 */
#ifndef PROF_AGENT_CONTAINER_H
#define PROF_AGENT_CONTAINER_H

#include "base/compat.h"

#define AGENT_CONTAINER_ID_LEN 65 /* 64 hex + NUL */
#define AGENT_POD_UID_LEN      37 /* 36 + NUL, canonical 8-4-4-4-12 form */

/** struct agent_container - "" when not found. */
struct agent_container {
	char id[AGENT_CONTAINER_ID_LEN];
	char pod_uid[AGENT_POD_UID_LEN];
};

/**
 * agent_container_parse() - fill @out from @n bytes of /proc/PID/cgroup
 * text ("HIERARCHY:CONTROLLERS:PATH" lines). Returns 1 when a container
 * id or pod UID was found, 0 when neither (a process on the host).
 */
int agent_container_parse(const char *text, size_t n, struct agent_container *out);

/**
 * agent_status_nspid() - the process's innermost pid from @n bytes of
 * /proc/PID/status (or /proc/PID/task/TID/status): the last id of NStgid
 * ("NStgid:\t4242\t17" -> 17; the host pid when the process is in the
 * root namespace), else of NSpid (kernels before 4.1; a thread's own id
 * in a task's file), or 0 when both are missing or malformed.
 */
uint32_t agent_status_nspid(const char *text, size_t n);

#define AGENT_SERVICE_LEN 256 /* service.name from the environment, with its NUL */

/**
 * agent_environ_service() - the OpenTelemetry service name a process was
 * started with, from @n bytes of /proc/PID/environ (NUL-separated
 * NAME=VALUE entries; a cut last entry is ignored): OTEL_SERVICE_NAME,
 * else the service.name of OTEL_RESOURCE_ATTRIBUTES (comma-separated
 * key=value; the OpenTelemetry SDK environment variables specification
 * gives OTEL_SERVICE_NAME precedence), copied into @out (@outsz bytes,
 * cut to fit, percent-encoding left as it is). Returns true when one was
 * found and is not empty.
 */
bool agent_environ_service(const char *text, size_t n, char *out, size_t outsz);

#endif
