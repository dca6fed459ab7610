#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""k8s_api_standin.py - a Kubernetes API server stand-in for
tests/integration/test_scrape_k8s.sh: it serves the core/v1 pods and
endpoints collections the way the real API does (shapes from the
Kubernetes API reference: PodList / EndpointsList with
metadata.resourceVersion, items without kind; watch streams of
newline-delimited {"type", "object"} events, chunked; a compacted
resourceVersion answered with an ERROR event carrying a Status of code 410
or with HTTP 410), and lets the test drive it.

Usage: k8s_api_standin.py SPEC.json [CERT KEY CLIENT_CA] ; prints one JSON
line {"port": N} (with "tls_port": M when a certificate is given: the same
API over TLS, asking for a client certificate signed by CLIENT_CA) then
serves until killed. SPEC: {"pods": [POD...], "endpoints": [EP...]}
"services": [SVC...] and "nodes": [NODE...] with the compact forms below;
each becomes a full object.
  POD: {"name", "namespace", "port", "labels", "annotations", "ip",
        "big": N (adds a last-applied-configuration annotation of N bytes)}
  EP:  {"name", "namespace", "ip", "port", "port_name", "pod"}
  SVC: {"name", "namespace", "port", "annotations"}
  NODE: {"name", "ip"} (cluster-scoped, InternalIP ip, kubelet port 10250)

Control (the test's side):
  POST /__ctl/event   {"collection": "pods", "type": "ADDED"|"MODIFIED"|"DELETED",
                       "spec": POD, "silent": false}
                      applies it and sends it to open watches (silent:
                      only a new list shows it)
  POST /__ctl/compact {"mode": "event"|"status"}  resourceVersions up to
                      now are gone: a watch from one of them gets an ERROR
                      event with code 410 (event) or HTTP 410 (status)
  POST /__ctl/drop    closes every open watch connection mid-stream
  POST /__ctl/bookmarks {"on": true|false}  while on, a watch answers one
                      BOOKMARK at the resourceVersion it was asked from
                      and ends at once (a proxy that cuts every watch)
  GET  /__ctl/log     {"lists": {coll: n}, "watches": [{"collection", "rv",
                       "query"}], "last_rv": {coll: rv of the last event
                       sent}, "bad_rv": [rvs asked that were never sent],
                       "auth": {Authorization header: requests}}
"""
import http.server
import json
import socketserver
import ssl
import sys
import threading
import urllib.parse
import zlib

lock = threading.Condition()
state = {"pods": {}, "endpoints": {}, "services": {}, "nodes": {}}
events = {"pods": [], "endpoints": [], "services": [], "nodes": []}  # (rv, type, object)
issued = set()  # every resourceVersion handed out
rv_counter = [1000]
compact = {"rv": 0, "mode": "event"}
log = {"lists": {"pods": 0, "endpoints": 0, "services": 0, "nodes": 0}, "watches": [], "last_rv": {}, "bad_rv": [],
       "auth": {}}
generation = [0]  # bumped by /__ctl/drop
bookmarks_only = [False]  # /__ctl/bookmarks


def next_rv():
    rv_counter[0] += 1
    issued.add(str(rv_counter[0]))
    return str(rv_counter[0])


def pod_object(s):
    name, ns = s["name"], s.get("namespace", "shop")
    uid = "6f1c%04x-2b1e-4c8e-9a57-%012x" % (len(name), zlib.crc32(name.encode()))
    port = s.get("port")
    ctr = {
        "name": "app",
        "image": "registry.example/shop/%s:1.4.2" % name,
        "resources": {},
        "terminationMessagePath": "/dev/termination-log",
        "imagePullPolicy": "IfNotPresent",
    }
    if port:
        ctr["ports"] = [{"name": "http-pprof", "containerPort": port, "protocol": "TCP"}]
    return {
        "metadata": {
            "name": name,
            "generateName": name.rsplit("-", 1)[0] + "-",
            "namespace": ns,
            "uid": uid,
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "labels": s.get("labels", {"app.kubernetes.io/name": "web", "pod-template-hash": "7d4b9c8f6"}),
            "annotations": dict(s.get("annotations", {}), **(
                {"kubectl.kubernetes.io/last-applied-configuration": "{" + "x" * s["big"] + "}"}
                if s.get("big") else {})),
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9c8f6",
                "uid": "0b4d9a3e-5c1f-4f7e-9d2a-1c3e5f7a9b0d", "controller": True,
                "blockOwnerDeletion": True,
            }],
        },
        "spec": {
            "containers": [ctr],
            "restartPolicy": "Always",
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "nodeName": "node-a",
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "Initialized", "status": "True", "lastTransitionTime": "2024-05-01T10:00:00Z"},
                {"type": "Ready", "status": "True", "lastTransitionTime": "2024-05-01T10:00:03Z"},
                {"type": "ContainersReady", "status": "True", "lastTransitionTime": "2024-05-01T10:00:03Z"},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2024-05-01T10:00:00Z"},
            ],
            "hostIP": "10.0.0.11",
            "podIP": s.get("ip", "127.0.0.1"),
            "podIPs": [{"ip": s.get("ip", "127.0.0.1")}],
            "startTime": "2024-05-01T10:00:00Z",
            "containerStatuses": [{
                "name": "app", "ready": True, "restartCount": 0, "started": True,
                "image": "registry.example/shop/%s:1.4.2" % name,
                "imageID": "registry.example/shop/web@sha256:" + "ab" * 32,
                "containerID": "containerd://" + "c0ffee" * 10 + "abcd",
                "state": {"running": {"startedAt": "2024-05-01T10:00:02Z"}},
            }],
            "qosClass": "BestEffort",
        },
    }


def endpoints_object(s):
    return {
        "metadata": {
            "name": s["name"],
            "namespace": s.get("namespace", "shop"),
            "uid": "9e3a0c1d-7b2f-4d6e-8a1b-3c5d7e9f1a2b",
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "labels": {"app.kubernetes.io/name": s["name"]},
            "annotations": {"endpoints.kubernetes.io/last-change-trigger-time": "2024-05-01T10:00:03Z"},
        },
        "subsets": [{
            "addresses": [{
                "ip": s.get("ip", "127.0.0.1"),
                "nodeName": "node-a",
                "targetRef": {"kind": "Pod", "namespace": s.get("namespace", "shop"),
                              "name": s.get("pod", "web-7d4b9c8f6-abcde"),
                              "uid": "6f1c0001-2b1e-4c8e-9a57-000000000001"},
            }],
            "ports": [{"name": s.get("port_name", "http-pprof"), "port": s["port"], "protocol": "TCP"}],
        }],
    }


def service_object(s):
    return {
        "metadata": {
            "name": s["name"],
            "namespace": s.get("namespace", "shop"),
            "uid": "3a7c5e1f-9b2d-4f6a-8c0e-1d3f5a7b9c2e",
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "labels": {"app.kubernetes.io/name": s["name"]},
            "annotations": s.get("annotations", {}),
        },
        "spec": {
            "type": "ClusterIP",
            "clusterIP": "10.96.0.12",
            "clusterIPs": ["10.96.0.12"],
            "selector": {"app.kubernetes.io/name": s["name"]},
            "ports": [{"name": "http-pprof", "protocol": "TCP", "port": s["port"], "targetPort": s["port"]}],
            "sessionAffinity": "None",
        },
        "status": {"loadBalancer": {}},
    }


def node_object(s):
    # Nodes are cluster-scoped: no namespace.
    return {
        "metadata": {
            "name": s["name"],
            "uid": "5d2b7f1a-3c9e-4a8d-b6f0-%012x" % zlib.crc32(s["name"].encode()),
            "creationTimestamp": "2024-04-01T08:00:00Z",
            "labels": {"kubernetes.io/arch": "amd64", "kubernetes.io/hostname": s["name"]},
        },
        "spec": {"providerID": "aws:///eu-west-1a/i-0abc%s" % s["name"][-1]},
        "status": {
            "addresses": [{"type": "InternalIP", "address": s["ip"]},
                          {"type": "Hostname", "address": s["name"]}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        },
    }


MAKE = {"pods": pod_object, "endpoints": endpoints_object, "services": service_object,
        "nodes": node_object}


def key(o):
    return o["metadata"].get("namespace", "") + "/" + o["metadata"]["name"]


def apply(coll, typ, spec, silent):
    o = MAKE[coll](spec)
    with lock:
        o["metadata"]["resourceVersion"] = next_rv()
        k = key(o)
        if typ == "DELETED":
            state[coll].pop(k, None)
        else:
            state[coll][k] = o
        if not silent:
            events[coll].append((o["metadata"]["resourceVersion"], typ, o))
        lock.notify_all()


def field_value(o, path):
    for part in path.split("."):
        o = o.get(part, {}) if isinstance(o, dict) else {}
    return o if isinstance(o, str) else ""


def selector_match(o, query):
    for sel in query.get("labelSelector", []):
        for term in sel.split(","):
            k, _, v = term.partition("=")
            labels = o["metadata"].get("labels", {})
            if k not in labels or (v and labels[k] != v):
                return False
    # Field selectors as the API takes them: terms joined by ",", each
    # "path=value", "path==value" or "path!=value" over the object's fields
    # (metadata.name, metadata.namespace, spec.nodeName, status.phase).
    for sel in query.get("fieldSelector", []):
        for term in sel.split(","):
            if "!=" in term:
                k, v = term.split("!=", 1)
                if field_value(o, k) == v:
                    return False
            else:
                k, v = term.replace("==", "=").split("=", 1)
                if field_value(o, k) != v:
                    return False
    return True


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_json(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        req = json.loads(self.rfile.read(n) or b"{}")
        if self.path == "/__ctl/event":
            apply(req["collection"], req["type"], req["spec"], req.get("silent", False))
        elif self.path == "/__ctl/compact":
            with lock:
                compact["rv"] = rv_counter[0]
                compact["mode"] = req.get("mode", "event")
        elif self.path == "/__ctl/bookmarks":
            with lock:
                bookmarks_only[0] = bool(req.get("on"))
        elif self.path == "/__ctl/drop":
            with lock:
                generation[0] += 1
                lock.notify_all()
        else:
            return self.send_json(404, {"error": "no such control"})
        self.send_json(200, {"ok": True})

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query)
        if u.path == "/__ctl/log":
            with lock:
                return self.send_json(200, log)
        with lock:
            a = self.headers.get("Authorization", "")
            log["auth"][a] = log["auth"].get(a, 0) + 1
        parts = u.path.strip("/").split("/")
        # /api/v1/COLL or /api/v1/namespaces/NS/COLL
        ns = None
        if parts[:3] == ["api", "v1", "namespaces"] and len(parts) == 5:
            ns, coll = parts[3], parts[4]
        elif parts[:2] == ["api", "v1"] and len(parts) == 3:
            coll = parts[2]
        else:
            return self.send_json(404, {"kind": "Status", "code": 404})
        if coll not in state:
            return self.send_json(404, {"kind": "Status", "code": 404})

        def visible(o):
            return (ns is None or o["metadata"]["namespace"] == ns) and selector_match(o, q)

        if q.get("watch", ["0"])[0] not in ("1", "true"):
            with lock:
                log["lists"][coll] += 1
                items = [o for o in state[coll].values() if visible(o)]
                rv = str(rv_counter[0])
                issued.add(rv)
            kind = {"pods": "PodList", "endpoints": "EndpointsList", "services": "ServiceList",
                    "nodes": "NodeList"}[coll]
            return self.send_json(200, {"kind": kind, "apiVersion": "v1",
                                        "metadata": {"resourceVersion": rv}, "items": items})
        self.watch(coll, q, visible)

    def watch(self, coll, q, visible):
        rv = q.get("resourceVersion", [""])[0]
        with lock:
            log["watches"].append({"collection": coll, "rv": rv,
                                   "query": {k: v[0] for k, v in q.items()}})
            if rv not in issued:
                log["bad_rv"].append(rv)
            gone = rv.isdigit() and int(rv) < compact["rv"]
            mode = compact["mode"]
            gen = generation[0]
            only_bookmark = bookmarks_only[0]
        if gone and mode == "status":
            return self.send_json(410, {
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "too old resource version: %s (%d)" % (rv, compact["rv"]),
                "reason": "Expired", "code": 410})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def send(obj):
            data = json.dumps(obj).encode() + b"\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        try:
            if only_bookmark:
                send({"type": "BOOKMARK", "object": {"kind": "Pod", "apiVersion": "v1",
                                                     "metadata": {"resourceVersion": rv}}})
                self.wfile.write(b"0\r\n\r\n")
                return
            if gone:
                send({"type": "ERROR", "object": {
                    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "too old resource version: %s (%d)" % (rv, compact["rv"]),
                    "reason": "Expired", "code": 410}})
                self.wfile.write(b"0\r\n\r\n")
                return
            pos = 0
            start = int(rv) if rv.isdigit() else 0
            while True:
                with lock:
                    while pos < len(events[coll]) and int(events[coll][pos][0]) <= start:
                        pos += 1
                    if pos >= len(events[coll]) and generation[0] == gen:
                        lock.wait(30)
                    if generation[0] != gen:
                        break  # dropped: close mid-stream, no final chunk
                    batch = events[coll][pos:]
                    pos = len(events[coll])
                for erv, typ, o in batch:
                    if visible(o):
                        send({"type": typ, "object": o})
                        with lock:
                            log["last_rv"][coll] = erv
            self.close_connection = True
            self.connection.shutdown(2)
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass


def main():
    spec = json.load(open(sys.argv[1]))
    for p in spec.get("pods", []):
        apply("pods", "ADDED", p, True)
    for e in spec.get("endpoints", []):
        apply("endpoints", "ADDED", e, True)
    for e in spec.get("services", []):
        apply("services", "ADDED", e, True)
    for e in spec.get("nodes", []):
        apply("nodes", "ADDED", e, True)
    srv = Server(("127.0.0.1", 0), H)
    ports = {"port": srv.server_address[1]}
    if len(sys.argv) > 4:
        tls = Server(("127.0.0.1", 0), H)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(sys.argv[2], sys.argv[3])
        ctx.load_verify_locations(sys.argv[4])
        ctx.verify_mode = ssl.CERT_REQUIRED
        tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
        threading.Thread(target=tls.serve_forever, daemon=True).start()
        ports["tls_port"] = tls.server_address[1]
    print(json.dumps(ports), flush=True)
    srv.serve_forever()


main()
