"""Per-connection and per-request bounds (README "Limits"), shared by every connection."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-connection and per-request bounds (README "Limits")."""

    http_body: int = 5 * 1024 * 1024
    ws_message: int = 1024 * 1024
    outbox: int = 4 * 1024 * 1024
    max_inflight: int = 64
    ping_interval: float = 30.0
    shutdown_grace: float = 10.0
