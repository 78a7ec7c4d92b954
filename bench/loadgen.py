"""The load generator: one process, many raw non-blocking sockets, one ``epoll`` loop.

Run as ``python -m bench.loadgen INDEX``; it answers JSON-line commands on stdin with JSON lines on
stdout, and keeps serving its sockets (answering pings) while it waits for the next command.

``{"cmd": "connect", "port", "path", "count", "script", "origin", "window"}``
    opens ``count`` WebSocket connections (at most ``window`` handshaking at once), each sending the
    JSON-RPC calls of ``script`` (``[[method, params], ...]``) one after the other and waiting for each
    reply. A connection's subscription id (a string, or Solana's integer) is taken from the last reply. ``origin`` (a prefix) gives
    every connection an ``Origin`` of its own, hence a session identity of its own.
``{"cmd": "script", "script"}``
    runs ``script`` on every ready connection (``"$sub"`` in params stands for the connection's
    current subscription id), e.g. to move every subscription from newHeads to logs.
``{"cmd": "arm", "count": K, "method": M, "timeout": T}``
    expects K notifications on every ready connection; answers ``{"armed": n}`` at once, then, once
    every connection has its K (or after T seconds), the time each event reached its *last*
    connection (``time.monotonic()``, the clock the servers stamp publish times with).
``{"cmd": "http", "port", "path", "body", "clients", "seconds", "warmup"}``
    keep-alive HTTP POSTs from ``clients`` connections, each waiting for its reply before the next.
``{"cmd": "close", "count": n}`` closes the n newest connections (all without ``count``);
``{"cmd": "exit"}``.

Frames are counted without being decoded: a text frame is counted when its last byte arrives, so
receiving costs a header parse per frame and one ``recv`` per wake-up however many frames it holds.
One connection in ``sample_every`` decodes everything it receives and checks it (method, subscription
id, consecutive block numbers or Solana slots), so that a server sending the wrong bytes cannot look fast.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import json
import os
import resource
import select
import socket
import sys
import time
from collections import deque
from typing import Any, Final

from bench.stats import percentile

RECV_SIZE: Final = 1 << 18
SETUP_RECV_SIZE: Final = 1 << 16
COALESCE_BELOW: Final = 64
COALESCE_DELAY: Final = 0.0005
CONNECTING: Final = 0
UPGRADING: Final = 1
SETUP: Final = 2
READY: Final = 3
DEAD: Final = 4

OP_TEXT: Final = 0x1
OP_CLOSE: Final = 0x8
OP_PING: Final = 0x9
OP_PONG: Final = 0xA


def client_frame(payload: bytes, opcode: int = OP_TEXT) -> bytes:
    """A masked client frame (RFC 6455 §5.3)."""
    length = len(payload)
    if length < 126:
        header = bytes((0x80 | opcode, 0x80 | length))
    elif length < 65536:
        header = bytes((0x80 | opcode, 0x80 | 126)) + length.to_bytes(2, "big")
    else:
        header = bytes((0x80 | opcode, 0x80 | 127)) + length.to_bytes(8, "big")
    mask = os.urandom(4)
    keystream = (mask * (length // 4 + 1))[:length]
    masked = (int.from_bytes(payload, "big") ^ int.from_bytes(keystream, "big")).to_bytes(
        length, "big"
    )
    return header + mask + masked


def parse_frames(buffer: bytes) -> tuple[list[tuple[int, bool, bytes]], bytes]:
    """Complete frames of ``buffer`` as (opcode, fin, payload), and the incomplete rest."""
    frames = []
    pos = 0
    size = len(buffer)
    while size - pos >= 2:
        first = buffer[pos]
        length = buffer[pos + 1] & 0x7F
        head = 2
        if length == 126:
            if size - pos < 4:
                break
            length = int.from_bytes(buffer[pos + 2 : pos + 4], "big")
            head = 4
        elif length == 127:
            if size - pos < 10:
                break
            length = int.from_bytes(buffer[pos + 2 : pos + 10], "big")
            head = 10
        end = pos + head + length
        if end > size:
            break
        frames.append((first & 0x0F, bool(first & 0x80), buffer[pos + head : end]))
        pos = end
    return frames, buffer[pos:]


class Conn:
    """One client connection and its parsing state."""

    __slots__ = (
        "count",
        "error",
        "fd",
        "in_job",
        "inbuf",
        "index",
        "messages",
        "origin",
        "sample",
        "skip",
        "skip_counts",
        "sock",
        "started",
        "state",
        "step",
        "sub_id",
        "was_ready",
    )

    def __init__(self, sock: socket.socket, index: int, origin: str | None, sample: bool) -> None:
        self.sock = sock
        self.fd = sock.fileno()
        self.index = index
        self.origin = origin
        self.sample = sample
        self.state = CONNECTING
        self.inbuf = b""
        self.skip = 0  # bytes of a data frame still to come
        self.skip_counts = False  # whether that frame is a final one (a message)
        self.count = 0
        self.step = 0
        self.sub_id: str | int | None = None
        self.messages: list[bytes] = []
        self.error: str | None = None
        self.started = 0.0
        self.in_job = True
        self.was_ready = False


def count_frames(conn: Conn, data: bytes | bytearray, size: int) -> int:
    """Consume ``data[:size]``; the number of messages it completes. Control frames are handled."""
    frames = 0
    skip = conn.skip
    if skip:
        if skip > size:
            conn.skip = skip - size
            return 0
        pos = skip
        conn.skip = 0
        if conn.skip_counts:
            frames = 1
    else:
        pos = 0
    if conn.inbuf:
        data = conn.inbuf + bytes(data[pos:size])
        conn.inbuf = b""
        pos = 0
        size = len(data)
    last = size - 4
    while pos < size:
        # The usual frame first, in fewer steps: a whole text message of 126 to 65,535 bytes (a
        # notification). The generator must stay faster than the servers it measures: this path
        # costs about two thirds of the general one below (0.9 against 1.4 us a frame).
        if pos <= last and data[pos] == 0x81 and data[pos + 1] == 126:
            end = pos + 4 + ((data[pos + 2] << 8) | data[pos + 3])
            if end <= size:
                frames += 1
                pos = end
                continue
            conn.skip = end - size
            conn.skip_counts = True
            break
        if size - pos < 2:
            conn.inbuf = bytes(data[pos:size])
            break
        first = data[pos]
        length = data[pos + 1] & 0x7F
        if length < 126:
            end = pos + 2 + length
        elif length == 126:
            if size - pos < 4:
                conn.inbuf = bytes(data[pos:size])
                break
            end = pos + 4 + ((data[pos + 2] << 8) | data[pos + 3])
        else:
            if size - pos < 10:
                conn.inbuf = bytes(data[pos:size])
                break
            end = pos + 10 + int.from_bytes(data[pos + 2 : pos + 10], "big")
        opcode = first & 0x0F
        if opcode < 3:
            if end > size:
                conn.skip = end - size
                conn.skip_counts = bool(first & 0x80)
                break
            if first & 0x80:
                frames += 1
        else:
            if end > size:
                conn.inbuf = bytes(data[pos:size])
                break
            control(conn, opcode, bytes(data[pos + 2 : end]))
        pos = end
    return frames


def control(conn: Conn, opcode: int, payload: bytes) -> None:
    if opcode == OP_PING:
        with contextlib.suppress(OSError):
            conn.sock.send(client_frame(payload, OP_PONG))
    elif opcode == OP_CLOSE:
        conn.state = DEAD
        code = int.from_bytes(payload[:2], "big") if len(payload) >= 2 else 1005
        conn.error = f"closed by server: {code} {payload[2:].decode(errors='replace')}"


class LoadGenerator:
    """The command loop and the sockets of one load generator process."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.epoll = select.epoll()
        self.conns: dict[int, Conn] = {}
        self.stdin = sys.stdin.fileno()
        os.set_blocking(self.stdin, False)
        self.epoll.register(self.stdin, select.EPOLLIN)
        self.pending_input = b""
        self.running = True
        self.opened = 0
        # connect
        self.connecting: dict[str, Any] | None = None
        # arm
        self.armed = False
        self.expected = 0
        self.remaining = 0
        self.last: list[float] = []
        self.deadline = 0.0
        self.method = ""
        self.group = 1
        self.received = 0
        self.lost: list[str] = []

    # -- protocol with the orchestrator ----------------------------------------------------------

    @staticmethod
    def reply(message: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    def read_commands(self) -> None:
        try:
            data = os.read(self.stdin, 65536)
        except BlockingIOError:
            return
        if not data:
            self.running = False
            return
        self.pending_input += data
        while b"\n" in self.pending_input:
            line, self.pending_input = self.pending_input.split(b"\n", 1)
            if line.strip():
                self.command(json.loads(line))

    def command(self, command: dict[str, Any]) -> None:
        name = command["cmd"]
        if name in ("connect", "script"):
            self.start_connect(command)
        elif name == "arm":
            self.arm(command)
        elif name == "http":
            self.reply(http_load(command))
        elif name == "close":
            closing = sorted(self.conns.values(), key=lambda c: c.index, reverse=True)
            if command.get("count") is not None:
                closing = closing[: command["count"]]
            for conn in closing:
                self.drop(conn)
            self.reply({"closed": len(closing), "open": len(self.conns)})
        elif name == "exit":
            self.running = False
        else:
            self.reply({"error": f"unknown command {name}"})

    # -- the loop ----------------------------------------------------------------------------------

    def run(self) -> None:
        conns = self.conns
        epoll = self.epoll
        stdin = self.stdin
        buffer = bytearray(RECV_SIZE)  # one receive buffer: recv(n) would allocate n bytes a call
        while self.running:
            timeout = 0.05 if (self.armed or self.connecting) else 1.0
            events = epoll.poll(timeout, 4096)
            now = time.monotonic()
            for fd, mask in events:
                if fd == stdin:
                    self.read_commands()
                    continue
                conn = conns.get(fd)
                if conn is None:
                    continue
                if conn.state == READY and not conn.sample:
                    try:
                        size = conn.sock.recv_into(buffer)
                    except BlockingIOError:
                        continue
                    except OSError as exc:
                        self.fail(conn, f"recv: {exc}")
                        continue
                    if not size:
                        self.fail(conn, "closed by server")
                        continue
                    frames = count_frames(conn, buffer, size)
                    if frames and self.armed:
                        self.record(conn, frames, now)
                    if conn.state == DEAD:
                        self.fail(conn, conn.error or "closed")
                else:
                    self.slow_path(conn, mask, now)
            if self.armed:
                if self.remaining <= 0 or now > self.deadline:
                    self.finish_arm()
                elif len(events) < COALESCE_BELOW:
                    # Few sockets ready: let more frames queue so that one recv() takes several.
                    # Costs at most COALESCE_DELAY of latency, against hundreds of milliseconds.
                    time.sleep(COALESCE_DELAY)
            if self.connecting is not None:
                self.progress_connect(now)

    def record(self, conn: Conn, frames: int, now: float) -> None:
        self.received += frames
        start = conn.count
        end = start + frames
        conn.count = end
        expected = self.expected
        if start < expected:
            stop = min(end, expected)
            self.last[start:stop] = [now] * (stop - start)
            if end >= expected:
                self.remaining -= 1

    # -- connections: handshake and setup -------------------------------------------------------

    def start_connect(self, command: dict[str, Any]) -> None:
        job = self.connecting = {
            "count": 0,
            "window": 256,
            **command,
            "next": 0,
            "active": 0,
            "ready": 0,
            "failed": 0,
            "errors": [],
            "started": time.monotonic(),
            "base": self.opened,
        }
        self.opened += job["count"]
        if command["cmd"] == "script":  # run the script on every ready connection instead
            for conn in [c for c in self.conns.values() if c.state == READY]:
                conn.state = SETUP
                conn.in_job = True
                conn.step = 0
                job["active"] += 1
                self.send_step(conn)
        self.progress_connect(time.monotonic())

    def progress_connect(self, now: float) -> None:
        job = self.connecting
        assert job is not None
        while job["active"] < job["window"] and job["next"] < job["count"]:
            self.open_one(job)
        timed_out = now - job["started"] > job.get("timeout", 600)
        if (job["active"] == 0 and job["next"] >= job["count"]) or timed_out:
            self.connecting = None
            self.reply(
                {
                    "ready": job["ready"],
                    "failed": job["failed"] + (job["active"] if timed_out else 0),
                    "errors": job["errors"][:5],
                    "seconds": round(time.monotonic() - job["started"], 3),
                }
            )

    def open_one(self, job: dict[str, Any]) -> None:
        index = job["base"] + job["next"]
        job["next"] += 1
        job["active"] += 1
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        origin = f"{job['origin']}-{self.index}-{index}.example" if job.get("origin") else None
        sample = index % job.get("sample_every", 1000) == 0
        conn = Conn(sock, index, origin, sample)
        conn.started = time.monotonic()
        self.conns[conn.fd] = conn
        result = sock.connect_ex(("127.0.0.1", job["port"]))
        if result not in (0, errno.EINPROGRESS):
            self.fail(conn, f"connect: {os.strerror(result)}")
            return
        self.epoll.register(conn.fd, select.EPOLLOUT)

    def slow_path(self, conn: Conn, mask: int, now: float) -> None:
        job = self.connecting
        if conn.state == CONNECTING:
            error = conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if error:
                self.fail(conn, f"connect: {os.strerror(error)}")
                return
            assert job is not None
            key = base64.b64encode(os.urandom(16)).decode()
            lines = [
                f"GET {job['path']} HTTP/1.1",
                f"Host: 127.0.0.1:{job['port']}",
                "Upgrade: websocket",
                "Connection: Upgrade",
                f"Sec-WebSocket-Key: {key}",
                "Sec-WebSocket-Version: 13",
            ]
            if conn.origin:
                lines.append(f"Origin: {conn.origin}")
            conn.sock.send(("\r\n".join(lines) + "\r\n\r\n").encode())
            conn.state = UPGRADING
            self.epoll.modify(conn.fd, select.EPOLLIN)
            return
        try:
            data = conn.sock.recv(SETUP_RECV_SIZE)
        except BlockingIOError:
            return
        except OSError as exc:
            self.fail(conn, f"recv: {exc}")
            return
        if not data:
            self.fail(conn, conn.error or "closed by server")
            return
        conn.inbuf += data
        if conn.state == UPGRADING:
            head_end = conn.inbuf.find(b"\r\n\r\n")
            if head_end < 0:
                return
            status = conn.inbuf[: conn.inbuf.find(b"\r\n")]
            if b" 101 " not in status + b" ":
                self.fail(conn, f"upgrade refused: {status.decode(errors='replace')}")
                return
            conn.inbuf = conn.inbuf[head_end + 4 :]
            conn.state = SETUP
            self.send_step(conn)
        frames, conn.inbuf = parse_frames(conn.inbuf)
        for opcode, fin, payload in frames:
            if opcode >= 8:
                control(conn, opcode, payload)
                if conn.state == DEAD:
                    self.fail(conn, conn.error or "closed")
                    return
            elif conn.state == SETUP:
                self.on_setup_reply(conn, payload)
                if conn.state == DEAD:
                    return
            elif conn.state == READY and fin:
                conn.messages.append(payload)
                if self.armed:
                    self.record(conn, 1, now)

    def send_step(self, conn: Conn) -> None:
        job = self.connecting
        assert job is not None
        script = job["script"]
        if conn.step >= len(script):
            self.ready(conn)
            return
        method, params = script[conn.step]
        message = {"jsonrpc": "2.0", "id": conn.step + 1, "method": method, "params": params}
        text = json.dumps(message, separators=(",", ":"))
        if conn.sub_id is not None:
            text = text.replace('"$sub"', json.dumps(conn.sub_id))
        conn.sock.send(client_frame(text.encode()))

    def on_setup_reply(self, conn: Conn, payload: bytes) -> None:
        message = json.loads(payload)
        if message.get("id") != conn.step + 1:
            return  # a notification (sessionChanged) met during setup
        if "error" in message:
            self.fail(conn, f"step {conn.step}: {message['error']}")
            return
        result = message.get("result")
        if isinstance(result, dict) and isinstance(result.get("result"), dict):
            result = result["result"].get("result")  # wallet_invokeMethod's answer
        if _is_subscription_id(result):
            conn.sub_id = result
        conn.step += 1
        self.send_step(conn)

    def ready(self, conn: Conn) -> None:
        conn.state = READY
        conn.in_job = False
        conn.was_ready = True
        job = self.connecting
        if job is not None:
            job["active"] -= 1
            job["ready"] += 1

    def fail(self, conn: Conn, reason: str) -> None:
        if conn.fd not in self.conns:
            return
        conn.state = DEAD
        conn.error = reason
        job = self.connecting
        if conn.in_job:
            if job is not None:
                job["active"] -= 1
                job["failed"] += 1
                job["errors"].append(reason)
        elif self.armed and conn.count < self.expected:
            self.remaining -= 1
            self.lost.append(reason)
        self.drop(conn)

    def drop(self, conn: Conn) -> None:
        if self.conns.pop(conn.fd, None) is not None:
            with contextlib.suppress(OSError, ValueError):
                self.epoll.unregister(conn.fd)
            conn.sock.close()

    # -- measuring a burst ------------------------------------------------------------------------

    def arm(self, command: dict[str, Any]) -> None:
        self.expected = int(command["count"])
        self.group = int(command.get("group", 1))
        self.method = command.get("method", "eth_subscription")
        self.last = [0.0] * self.expected
        self.received = 0
        self.lost = []
        ready = [c for c in self.conns.values() if c.state == READY]
        for conn in ready:
            conn.count = 0
            conn.messages = []
        self.remaining = len(ready)
        self.deadline = time.monotonic() + float(command.get("timeout", 60))
        self.armed = True
        self.reply({"armed": len(ready)})

    def finish_arm(self) -> None:
        self.armed = False
        problems = []
        checked = 0
        for conn in self.conns.values():
            if conn.sample and conn.state == READY:
                checked += 1
                problem = verify(conn, self.expected, self.method, self.group)
                if problem:
                    problems.append(problem)
        self.reply(
            {
                "last": self.last,
                "missing": self.remaining,
                "received": self.received,
                "lost": self.lost[:5],
                "checked": checked,
                "problems": problems[:5],
            }
        )


def verify(conn: Conn, expected: int, method: str, group: int = 1) -> str | None:
    """What is wrong with the notifications a sample connection got, or None (``group``: that
    many notifications in a row are of one block, as a block's logs)."""
    if len(conn.messages) != expected:
        return f"conn {conn.index}: {len(conn.messages)} messages, expected {expected}"
    numbers = []
    for raw in conn.messages:
        message = json.loads(raw)
        if message.get("method") != method:
            return f"conn {conn.index}: method {message.get('method')}, expected {method}"
        params = message["params"]
        if method == "wallet_notify":
            params = params["notification"]["params"]
        if conn.sub_id is not None and params["subscription"] != conn.sub_id:
            return f"conn {conn.index}: subscription {params['subscription']} != {conn.sub_id}"
        numbers.append(_sequence_number(params["result"]))
    if numbers != [numbers[0] + i // group for i in range(len(numbers))]:
        return f"conn {conn.index}: block numbers not consecutive: {numbers[:5]}..."
    return None


def _is_subscription_id(value: Any) -> bool:
    """An EVM subscription id (a hex string) or a Solana one (an integer)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _sequence_number(result: dict[str, Any]) -> int:
    """The block or slot a notification's result is for: an EVM head's or log's block number, a
    Solana ``slotNotification``'s slot, or the context slot of Solana's wrapped results."""
    if "slot" in result:
        return int(result["slot"])
    if "context" in result:
        return int(result["context"]["slot"])
    return int(result.get("number") or result.get("blockNumber"), 16)


# -- HTTP -------------------------------------------------------------------------------------------


class HttpConn:
    __slots__ = ("inbuf", "sent", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.inbuf = b""
        self.sent = 0.0


def http_load(command: dict[str, Any]) -> dict[str, Any]:
    """Keep-alive POSTs from ``clients`` connections for ``warmup`` + ``seconds`` seconds."""
    body = command["body"].encode()
    request = (
        f"POST {command['path']} HTTP/1.1\r\nHost: 127.0.0.1:{command['port']}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    epoll = select.epoll()
    buffer = bytearray(RECV_SIZE)
    conns: dict[int, HttpConn] = {}
    for _ in range(command["clients"]):
        sock = socket.create_connection(("127.0.0.1", command["port"]))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        conns[sock.fileno()] = HttpConn(sock)
        epoll.register(sock.fileno(), select.EPOLLIN)
    started = time.monotonic()
    measure_from = started + command.get("warmup", 1.0)
    stop = measure_from + command["seconds"]
    for conn in conns.values():
        conn.sent = time.monotonic()
        conn.sock.send(request)
    done = 0
    errors = 0
    statuses: dict[str, int] = {}
    latencies: list[float] = []
    # (sent, answered) of each request, when asked: the caller picks those of an interval
    samples: list[tuple[float, float]] | None = [] if command.get("samples") else None
    sample = b""
    now = started
    # A probe (``interval``): each connection sends its next call that long after an answer,
    # so that the probe measures the server without loading it (or the load core) much.
    interval = float(command.get("interval", 0.0))
    resting: deque[tuple[float, HttpConn]] = deque()
    while now < stop and conns:
        while resting and resting[0][0] <= now:
            _, conn = resting.popleft()
            conn.sent = now
            conn.sock.send(request)
        wait = min(0.5, max(0.0, resting[0][0] - now)) if resting else 0.5
        for fd, _mask in epoll.poll(wait):
            conn = conns[fd]
            try:
                size = conn.sock.recv_into(buffer)
            except BlockingIOError:
                continue
            data = bytes(buffer[:size])
            if not data:
                epoll.unregister(fd)
                del conns[fd]
                errors += 1
                continue
            conn.inbuf += data
            head_end = conn.inbuf.find(b"\r\n\r\n")
            if head_end < 0:
                continue
            head = conn.inbuf[:head_end].lower()
            length = 0
            at = head.find(b"content-length:")
            if at >= 0:
                end = head.find(b"\r\n", at)
                length = int(head[at + 15 : end if end >= 0 else len(head)].strip() or 0)
            if len(conn.inbuf) < head_end + 4 + length:
                continue
            now = time.monotonic()
            status = head[9:12].decode()
            statuses[status] = statuses.get(status, 0) + 1
            if not sample:
                sample = conn.inbuf[head_end + 4 : head_end + 4 + 200]
            conn.inbuf = conn.inbuf[head_end + 4 + length :]
            if now >= measure_from:
                done += 1
                latencies.append(now - conn.sent)
                if samples is not None:
                    samples.append((conn.sent, now))
            if interval:
                resting.append((now + interval, conn))
                continue
            conn.sent = now
            conn.sock.send(request)
        now = time.monotonic()
    elapsed = now - measure_from
    for conn in conns.values():
        conn.sock.close()
    epoll.close()
    return {
        "requests": done,
        "seconds": round(elapsed, 3),
        "req_per_s": round(done / elapsed, 1) if elapsed > 0 else 0.0,
        "p50_ms": round(percentile(latencies, 0.5) * 1000, 3),
        "p99_ms": round(percentile(latencies, 0.99) * 1000, 3),
        "errors": errors,
        "statuses": statuses,
        "sample": sample.decode(errors="replace"),
        **({"samples": samples} if samples is not None else {}),
    }


def main() -> None:
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    index = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    LoadGenerator(index).run()


if __name__ == "__main__":
    main()
