#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""scrape_fake_target.py - misbehaving (and one well-behaved) pprof
endpoints for tests/integration/test_scrape*.sh, one port per behaviour:

  ok:FILE   200 with FILE's bytes for every path (a static pprof target)
  hang      accepts, reads the request, never answers
  500       HTTP 500 with a short text body
  garbage   200 with text that is not a profile
  huge      200, Content-Length 1 GiB, streams zeros until the client leaves
  chunked   200, chunked, streams zeros (no length) up to 1 GiB

Usage: scrape_fake_target.py MODE... ; prints one JSON line {"MODE": port}
then serves until killed. GET /__stats on any port answers JSON
{"hits": {path: n}, "bytes": bytes of bodies sent, "conns": n}.
"""
import http.server
import json
import socketserver
import sys
import threading
import time

ONE_GIB = 1 << 30
CHUNK = b"\0" * (64 << 10)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def make_handler(mode, payload, stats, lock):
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def count(self, n):
            with lock:
                stats["bytes"] += n

        def do_GET(self):
            path = self.path.split("?")[0]
            if path == "/__stats":
                with lock:
                    body = json.dumps(stats).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            with lock:
                stats["hits"][path] = stats["hits"].get(path, 0) + 1
            try:
                getattr(self, "mode_" + mode)()
            except (BrokenPipeError, ConnectionResetError):
                pass

        def send(self, code, body, ctype="application/octet-stream"):
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.count(len(body))

        def mode_ok(self):
            self.send(200, payload)

        def mode_hang(self):
            time.sleep(3600)

        def mode_500(self):
            self.send(500, b"internal error: the database is on fire\n", "text/plain")

        def mode_garbage(self):
            self.send(200, b"<html>this is not a pprof profile</html>\n" * 50, "text/html")

        def mode_huge(self):
            self.send_response(200)
            self.send_header("Content-Length", str(ONE_GIB))
            self.end_headers()
            sent = 0
            while sent < ONE_GIB:
                self.wfile.write(CHUNK)
                sent += len(CHUNK)
                self.count(len(CHUNK))

        def mode_chunked(self):
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            sent = 0
            while sent < ONE_GIB:
                self.wfile.write(b"%x\r\n" % len(CHUNK) + CHUNK + b"\r\n")
                sent += len(CHUNK)
                self.count(len(CHUNK))
            self.wfile.write(b"0\r\n\r\n")

    return H


def main():
    ports = {}
    for spec in sys.argv[1:]:
        mode, _, arg = spec.partition(":")
        payload = open(arg, "rb").read() if mode == "ok" else b""
        stats = {"hits": {}, "bytes": 0}
        srv = Server(("127.0.0.1", 0), make_handler(mode, payload, stats, threading.Lock()))
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        ports[mode] = srv.server_address[1]
    print(json.dumps(ports), flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
