"""Per-connection and per-request bounds (README "Limits"), shared by every connection."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-connection and per-request bounds (README "Limits")."""

    http_body: int = 5 * 1024 * 1024
    #: Seconds a client has to send a request body once its head arrived (as geth's 30 s read
    #: timeout): a body trickled slower gets 408 and the connection is closed.
    http_body_timeout: float = 30.0
    #: Seconds an HTTP reply may take to be written: a client that stops reading is dropped.
    http_write_timeout: float = 30.0
    ws_message: int = 1024 * 1024
    outbox: int = 4 * 1024 * 1024
    max_inflight: int = 64
    ping_interval: float = 30.0
    shutdown_grace: float = 10.0
    #: Bytes of encoded chain answers the response cache keeps (0: no cache).
    response_cache: int = 64 * 1024 * 1024
    #: Seconds a dropped connection can be resumed (and events are kept readable) for; 0: no
    #: cursors, no resume.
    resume_window: float = 300.0
