"""A webhook receiver for the bench, in a process of its own: answers every POST with 204 and
counts them, keeping connections alive; ``GET /count`` answers the count. ``python -m bench.webhook_sink`` prints its port."""

from __future__ import annotations

import sys

import h11
import trio

_count = 0


async def _handle(stream: trio.SocketStream) -> None:
    global _count
    conn = h11.Connection(h11.SERVER)
    try:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(65536)
                if not data:
                    return
                conn.receive_data(data)
            elif isinstance(event, h11.Request):
                method = event.method
            elif isinstance(event, h11.EndOfMessage):
                if method == b"POST":
                    _count += 1
                    body = b""
                else:
                    body = str(_count).encode()
                headers = [(b"content-length", str(len(body)).encode())]
                await stream.send_all(
                    conn.send(
                        h11.Response(status_code=204 if method == b"POST" else 200, headers=headers)
                    )
                    + (conn.send(h11.Data(data=body)) if body else b"")
                    + conn.send(h11.EndOfMessage())
                )
                if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    return
                conn.start_next_cycle()  # kept alive, as the sender asks
            elif isinstance(event, h11.ConnectionClosed):
                return
    except (trio.BrokenResourceError, h11.ProtocolError):
        return
    finally:
        await trio.aclose_forcefully(stream)


async def main() -> None:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1", backlog=1024)
    print(listeners[0].socket.getsockname()[1], flush=True)
    await trio.serve_listeners(_handle, listeners)


if __name__ == "__main__":
    try:
        trio.run(main)
    except KeyboardInterrupt:
        sys.exit(0)
