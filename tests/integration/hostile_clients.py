#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""hostile_clients.py - clients for tests/integration/test_server_hostile.sh.

  hostile_clients.py attack PORT SECONDS --idle N --idle-src ADDR
                     --slow N --slow-src ADDR
      N connections from ADDR that each send one keep-alive request and
      then stay idle, and N connections from another address that send a
      request header one byte per second and never finish it (slowloris);
      a connection the server closes is opened again. Prints a JSON
      summary: connections established, held at the peak, closed by the
      server, refused.
  hostile_clients.py probe PORT SECONDS --otlp FILE --query PATH
      a normal client: every 0.1 s a new connection with a query (GET
      PATH), then one with an ingest (POST FILE as OTLP), each with a 1 s
      timeout. Prints a JSON summary: requests, their worst latency, the
      ones not answered within 1 s or not 200, ingests acknowledged.
  hostile_clients.py attack ... --grpc
      the same against the OTLP/gRPC port, over HTTP/2: an idle
      connection sends the connection preface and one call and stays;
      a slowloris one sends the preface a byte a second.
  hostile_clients.py probe ... --grpc-port PORT
      also, each round, an OTLP/gRPC Export of FILE on a new connection
      (1 s timeout), counted as acknowledged when the answer carries the
      response message and ends the stream.
  hostile_clients.py abandon PORT COUNT --otlp FILE
      COUNT OTLP/gRPC Exports of FILE that leave before the answer: every
      other one resets its stream (RST_STREAM) right after the message,
      the rest close the connection; prints how many were sent.
  hostile_clients.py stall PORT SECONDS
      one connection that announces a 1 GiB body and sends none of it,
      and one that sends nothing at all; prints after how many seconds
      the server closed each (null: still open at the end).
"""
import argparse
import json
import selectors
import socket
import sys
import time


H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
EXPORT = "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"


def h2_frame(ftype, flags, stream, payload=b""):
    """An HTTP/2 frame (RFC 9113 section 4.1)."""
    return (len(payload).to_bytes(3, "big") + bytes([ftype, flags]) +
            stream.to_bytes(4, "big") + payload)


def hpack_int(v, prefix_bits):
    """An HPACK integer with a zero-flagged prefix (RFC 7541 section 5.1)."""
    top = (1 << prefix_bits) - 1
    if v < top:
        return bytes([v])
    out, v = [top], v - top
    while v >= 128:
        out.append(v % 128 + 128)
        v //= 128
    return bytes(out + [v])


def h2_headers(fields):
    """A header block of literals without indexing, no Huffman (RFC 7541 6.2.2)."""
    out = b""
    for k, v in fields:
        out += b"\x00" + hpack_int(len(k), 7) + k.encode() + hpack_int(len(v), 7) + v.encode()
    return out


def grpc_call(path, message=None):
    """Preface, SETTINGS and one unary call on stream 1 (the message None: no body)."""
    hdr = h2_headers([(":method", "POST"), (":scheme", "http"), (":path", path),
                      (":authority", "x"), ("content-type", "application/grpc"),
                      ("te", "trailers")])
    out = H2_PREFACE + h2_frame(4, 0, 0)
    if message is None:
        return out + h2_frame(1, 0x5, 1, hdr)  # END_STREAM | END_HEADERS
    out += h2_frame(1, 0x4, 1, hdr)
    body = b"\x00" + len(message).to_bytes(4, "big") + message
    chunks = [body[i:i + 16384] for i in range(0, len(body), 16384)] or [b""]
    for i, c in enumerate(chunks):
        out += h2_frame(0, 0x1 if i == len(chunks) - 1 else 0, 1, c)
    return out


def grpc_export(port, message, timeout=1.0, half_close=False):
    """One Export on a new connection: (acknowledged, seconds); with
    half_close the client shuts its side down right after the call."""
    t0 = time.time()
    ok = False
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        s.sendall(grpc_call(EXPORT, message))
        if half_close:
            s.shutdown(socket.SHUT_WR)
        buf, got_data = b"", False
        while True:
            s.settimeout(max(0.01, timeout - (time.time() - t0)))
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
            done = False
            while len(buf) >= 9:
                n = int.from_bytes(buf[:3], "big")
                if len(buf) < 9 + n:
                    break
                ftype, flags = buf[3], buf[4]
                stream = int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
                buf = buf[9 + n:]
                if ftype == 4 and not flags & 1 and not half_close:
                    s.sendall(h2_frame(4, 1, 0))  # SETTINGS ACK
                if stream == 1 and ftype == 0 and n > 0:
                    got_data = True
                if stream == 1 and ftype == 1 and flags & 1:
                    ok, done = got_data, True
                if (stream == 1 and ftype == 3) or ftype == 7:
                    done = True
            if done:
                break
        s.close()
    except OSError:
        ok = False
    return ok, time.time() - t0


def connect(port, src, blocking=False):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if src:
        s.bind((src, 0))
    s.setblocking(blocking)
    try:
        s.connect(("127.0.0.1", port))
    except BlockingIOError:
        pass
    return s


def attack(a):
    sel = selectors.DefaultSelector()
    st = {"established": 0, "closed_by_server": 0, "refused": 0, "peak_idle": 0,
          "peak_slow": 0, "errors": 0}
    conns = {}  # socket -> dict(kind, state, sent)
    header = b"GET /api/v1/profile-types HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 4096
    hello = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    if a.grpc:
        header, hello = H2_PREFACE, grpc_call("/none")

    def open_one(kind):
        try:
            s = connect(a.port, a.idle_src if kind == "idle" else a.slow_src)
        except OSError:
            st["errors"] += 1
            return
        conns[s] = {"kind": kind, "state": "connecting", "sent": 0, "t": time.time()}
        sel.register(s, selectors.EVENT_WRITE | selectors.EVENT_READ)

    def drop(s, by_server):
        c = conns.pop(s)
        sel.unregister(s)
        s.close()
        if by_server:
            if c["state"] == "connecting":
                st["refused"] += 1
            else:
                st["closed_by_server"] += 1

    for _ in range(a.idle):
        open_one("idle")
    for _ in range(a.slow):
        open_one("slow")
    end = time.time() + a.seconds
    next_tick = time.time()
    while time.time() < end:
        for key, ev in sel.select(timeout=0.05):
            s = key.fileobj
            c = conns.get(s)
            if c is None:
                continue
            if c["state"] == "connecting" and ev & selectors.EVENT_WRITE:
                err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err:
                    drop(s, True)
                    continue
                c["state"] = "open"
                st["established"] += 1
                sel.modify(s, selectors.EVENT_READ)
                if c["kind"] == "idle":
                    try:
                        s.send(hello)
                    except OSError:
                        drop(s, True)
                continue
            if ev & selectors.EVENT_READ:
                try:
                    data = s.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    drop(s, True)
                    continue
                if c["kind"] == "idle":
                    c["state"] = "held"
        now = time.time()
        if now >= next_tick:  # one more header byte per slow connection
            next_tick = now + 1.0
            for s, c in list(conns.items()):
                if c["kind"] == "slow" and c["state"] == "open" and c["sent"] < len(header):
                    try:
                        s.send(header[c["sent"]:c["sent"] + 1])
                        c["sent"] += 1
                    except OSError:
                        drop(s, True)
        held = sum(1 for c in conns.values() if c["kind"] == "idle" and c["state"] == "held")
        slow = sum(1 for c in conns.values() if c["kind"] == "slow" and c["state"] == "open")
        st["peak_idle"] = max(st["peak_idle"], held)
        st["peak_slow"] = max(st["peak_slow"], slow)
        # keep the pressure up: reopen what the server closed
        for kind, want in (("idle", a.idle), ("slow", a.slow)):
            have = sum(1 for c in conns.values() if c["kind"] == kind)
            for _ in range(min(want - have, 50)):
                open_one(kind)
    st["open_at_end"] = len(conns)
    for s in list(conns):
        drop(s, False)
    print(json.dumps(st))


def http(port, method, path, body=None, ctype=None, timeout=1.0):
    """One request on a new connection; (status, seconds), status 0 on failure."""
    t0 = time.time()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        s.settimeout(max(0.01, timeout - (time.time() - t0)))
        req = "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" % (method, path)
        if body is not None:
            req += "Content-Type: %s\r\nContent-Length: %d\r\n" % (ctype, len(body))
        s.sendall(req.encode() + b"\r\n" + (body or b""))
        data = b""
        while True:
            s.settimeout(max(0.01, timeout - (time.time() - t0)))
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.") else 0
    except (OSError, ValueError, IndexError):
        status = 0
    return status, time.time() - t0


def probe(a):
    body = open(a.otlp, "rb").read()
    st = {"requests": 0, "worst_s": 0.0, "late_or_failed": [], "acked": 0}
    end = time.time() + a.seconds
    kinds = ("query", "ingest") + (("grpc",) if a.grpc_port else ())
    while time.time() < end:
        for kind in kinds:
            if kind == "query":
                status, dt = http(a.port, "GET", a.query)
            elif kind == "grpc":
                ok, dt = grpc_export(a.grpc_port, body)
                status = 200 if ok else 0
                st["acked"] += ok
            else:
                status, dt = http(a.port, "POST", "/v1development/profiles", body,
                                  "application/x-protobuf")
                st["acked"] += status == 200
            st["requests"] += 1
            st["worst_s"] = max(st["worst_s"], round(dt, 3))
            if status != 200 or dt > 1.0:
                st["late_or_failed"].append([kind, status, round(dt, 3)])
        time.sleep(0.1)
    print(json.dumps(st))


def abandon(a):
    body = open(a.otlp, "rb").read()
    sent = 0
    for i in range(int(a.seconds)):
        try:
            s = socket.create_connection(("127.0.0.1", a.port), timeout=2)
            s.sendall(grpc_call(EXPORT, body))
            if i % 2:
                time.sleep(0.002)  # the server has it on a worker by now, or nearly
                s.sendall(h2_frame(3, 0, 1, (8).to_bytes(4, "big")))  # RST_STREAM CANCEL
            sent += 1
            s.close()
        except OSError:
            pass
    print(json.dumps({"sent": sent}))


def stall(a):
    big = connect(a.port, None, True)
    big.sendall(b"POST /api/v1/debuginfo/0123456789abcdef0123456789abcdef01234567 HTTP/1.1\r\n"
                b"Host: x\r\n"
                b"Content-Type: application/octet-stream\r\nContent-Length: 1073741824\r\n\r\n")
    mute = connect(a.port, None, True)
    t0 = time.time()
    closed = {"upload": None, "silent": None}
    socks = {big: "upload", mute: "silent"}
    sel = selectors.DefaultSelector()
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    while time.time() - t0 < a.seconds and any(v is None for v in closed.values()):
        for key, _ in sel.select(timeout=0.1):
            s = key.fileobj
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if not data:
                closed[socks[s]] = round(time.time() - t0, 2)
                sel.unregister(s)
    print(json.dumps(closed))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["attack", "probe", "stall", "abandon"])
    p.add_argument("port", type=int)
    p.add_argument("seconds", type=float)
    p.add_argument("--idle", type=int, default=0)
    p.add_argument("--idle-src", default="127.0.0.2")
    p.add_argument("--slow", type=int, default=0)
    p.add_argument("--slow-src", default="127.0.0.3")
    p.add_argument("--otlp")
    p.add_argument("--query", default="/api/v1/profile-types")
    p.add_argument("--grpc", action="store_true")
    p.add_argument("--grpc-port", type=int, default=0)
    a = p.parse_args()
    {"attack": attack, "probe": probe, "stall": stall, "abandon": abandon}[a.mode](a)


if __name__ == "__main__":
    sys.exit(main())
