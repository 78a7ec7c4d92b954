"""Where a webhook may POST (sans-io but for the name lookup): its URL's scheme, host and port,
and the addresses that host may resolve to. Loopback, private, link-local and other addresses
that are not the public internet are refused unless the webhook allows them (``allowPrivate``),
and the check is made on the very addresses the sender connects to, so a name that resolves to
an inside address at delivery time (DNS rebinding) is refused too."""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

import trio

from schemas.errors import InvalidParams

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class RefusedTarget(Exception):
    """The URL's host is not one a webhook may reach."""


@dataclass(frozen=True, slots=True)
class Target:
    """A webhook URL, parsed: where to connect and what to ask for."""

    url: str
    scheme: str
    host: str
    port: int
    path: str

    @classmethod
    def parse(cls, url: str) -> Target:
        """The target of ``url`` (InvalidParams when it is not an http(s) URL of a host)."""
        if len(url) > 2048:
            raise InvalidParams("invalid params: url is longer than 2048 characters")
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise InvalidParams(f"invalid params: url: {exc}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidParams(
                "invalid params: url must be an http:// or https:// URL with a host"
            )
        if parts.username is not None or parts.password is not None:
            raise InvalidParams("invalid params: url must not carry credentials")
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        default = 443 if parts.scheme == "https" else 80
        return cls(url, parts.scheme, parts.hostname, port or default, path)

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"

    def literal_address(self) -> IpAddress | None:
        """The host as an IP address, when it is one."""
        try:
            return ipaddress.ip_address(self.host)
        except ValueError:
            return None


def is_public(address: IpAddress) -> bool:
    """Whether ``address`` is on the public internet (not loopback, private, link-local,
    multicast, reserved or unspecified; an IPv4-mapped IPv6 address is judged as its IPv4)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_global and not address.is_multicast


def check_literal(target: Target, *, allow_private: bool) -> None:
    """Refuse, when the webhook is created, a URL whose host is an inside IP address."""
    address = target.literal_address()
    if address is not None and not allow_private and not is_public(address):
        raise InvalidParams(
            f"invalid params: {target.host} is not a public address (set allowPrivate to allow it)"
        )


async def resolve(target: Target, *, allow_private: bool) -> list[str]:
    """The addresses to connect to for ``target``, each one checked (RefusedTarget when none
    may be reached)."""
    literal = target.literal_address()
    if literal is not None:
        found = [literal]
    else:
        try:
            infos = await trio.socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise RefusedTarget(f"cannot resolve {target.host}: {exc}") from None
        found = [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]
    allowed = [str(a) for a in found if allow_private or is_public(a)]
    if not allowed:
        raise RefusedTarget(
            f"{target.host} resolves to {', '.join(sorted({str(a) for a in found}))}: not a "
            "public address (the webhook does not allowPrivate)"
        )
    return list(dict.fromkeys(allowed))
