# SPDX-License-Identifier: Apache-2.0
"""export_peer.py - fake OTLP/HTTP receivers for test_agent_export.sh.

    python3 export_peer.py record PORT OUT   answer 200 to every POST and
                                             append its path and headers
                                             to OUT (one JSON per line)
    python3 export_peer.py record-tls PORT OUT CERT KEY
                                             the same over TLS (HTTPS) with
                                             the certificate chain CERT and
                                             its key KEY (PEM files); failed
                                             handshakes are appended to
                                             OUT.tls as one line each
    python3 export_peer.py hang PORT         accept connections, read the
                                             request, never answer

Each prints "listening PORT" on stdout once its socket listens, so that
the test can wait for it rather than guess how long Python takes to start.
"""
import http.server
import json
import socket
import ssl
import sys
import threading
import time


def record(port, out, cert=None, key=None):
    class H(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            n = int(self.headers.get("Content-Length", 0))
            body = self.rfile.read(n)
            with open(out, "a") as f:
                f.write(json.dumps({"path": self.path, "bytes": len(body),
                                    "headers": dict(self.headers.items())}) + "\n")
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *a):
            pass

    class TLSServer(http.server.ThreadingHTTPServer):
        def get_request(self):
            c, addr = self.socket.accept()
            try:  # the handshake here: one that fails is recorded, not served
                return ctx.wrap_socket(c, server_side=True), addr
            except (ssl.SSLError, OSError) as e:
                with open(out + ".tls", "a") as f:
                    f.write(f"handshake failed: {e}\n")
                c.close()
                raise OSError("handshake failed")

    if cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        srv = TLSServer(("127.0.0.1", port), H)
    else:
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), H)
    print(f"listening {port}", flush=True)
    srv.serve_forever()


def hang(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(64)
    print(f"listening {port}", flush=True)
    held = []

    def drain(c):
        try:
            while c.recv(65536):
                pass
        except OSError:
            pass

    while True:
        c, _ = s.accept()
        held.append(c)  # never answered, never closed
        threading.Thread(target=drain, args=(c,), daemon=True).start()


if __name__ == "__main__":
    if sys.argv[1] == "record":
        record(int(sys.argv[2]), sys.argv[3])
    elif sys.argv[1] == "record-tls":
        record(int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5])
    elif sys.argv[1] == "hang":
        hang(int(sys.argv[2]))
    else:
        time.sleep(0)
        sys.exit("usage: export_peer.py record PORT OUT | record-tls PORT OUT CERT KEY | hang PORT")
