"""Calling merchants back without becoming a way into the operator's network (SSRF).

``CallbackUrlGuard`` (the core's ``UrlGuard``) judges ``callback_url`` and
``return_url`` at ``POST /receive``; ``HttpCallbackSender`` (the core's
``CallbackSender``) delivers. Both use the one parser of ``domain/callback_urls`` and
the same ``Destinations`` check.

Pinned connections: the sender speaks HTTP/1.1 through an httpcore connection pool
whose network backend is ``_CheckedBackend``. httpcore never resolves a name itself:
it asks the backend for a TCP connection to (URL host, port), and the backend resolves
the host ONCE with ``loop.getaddrinfo``, checks every address it got, and connects to
those checked addresses only (in order). TLS then runs over that socket with the URL's
host name as SNI and for the certificate check, and the request carries the URL's
``Host``. There is no second lookup that a DNS-rebinding server could answer
differently. A kept-alive connection is reused only for the same scheme, host and port
(httpcore's origin), and it leads to an address that was checked when it was opened.

Answers: redirects are not followed (a 3xx is a failed try), ``Accept-Encoding:
identity`` is sent and nothing is decompressed, and at most 64 KB of the body is read
before the connection is closed. The total deadline of a try is the worker's
(``core/callbacks.py``); the per-read timeouts given to httpcore are only a backstop.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections.abc import Awaitable, Callable, Iterable, Mapping

import httpcore

from xmrgate.adapters.tls import httpcore_context
from xmrgate.core.ports import DeliveryResult
from xmrgate.domain.callback_urls import (
    AllowEntry,
    InvalidUrl,
    IPAddress,
    Refusal,
    Target,
    normalize_host,
    parse_url,
    refusal,
)
from xmrgate.domain.errors import InvalidInput

# host, port -> addresses, in the resolver's order
Resolver = Callable[[str, int], Awaitable[list[IPAddress]]]

MAX_ANSWER_BYTES = 64 * 1024
# How long POST /receive waits for DNS before accepting a name it cannot resolve.
CHECK_RESOLVE_TIMEOUT = 5.0


class DnsFailure(Exception):
    """The host name did not resolve."""


class RefusedDestination(Exception):
    """The host is, or resolves to, an internal address that no entry permits."""

    def __init__(self, refused: Refusal) -> None:
        super().__init__(refused.kind)
        self.refusal = refused


async def system_resolver(host: str, port: int) -> list[IPAddress]:
    """The addresses of ``host`` from the event loop's getaddrinfo (deduplicated, in order)."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise DnsFailure(host) from exc
    found: list[IPAddress] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        ip = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if ip not in found:
            found.append(ip)
    return found


class Destinations:
    """Resolve a target once and check every address against the policy and the allow list."""

    def __init__(self, allow: Iterable[AllowEntry], resolver: Resolver = system_resolver) -> None:
        self.allow = tuple(allow)
        self._resolve = resolver

    def named_in_allow_list(self, target: Target) -> bool:
        """True when an entry names the target's host (so any address of it is permitted)."""
        return target.ip is None and any(e.permits(target, None) for e in self.allow)

    async def addresses(self, target: Target) -> list[IPAddress]:
        """The checked addresses to connect to; raises DnsFailure or RefusedDestination."""
        if target.ip is not None:
            found = [target.ip]
        else:
            found = await self._resolve(target.host, target.port)
            if not found:
                raise DnsFailure(target.host)
        refused = refusal(target, found, self.allow)
        if refused is not None:
            raise RefusedDestination(refused)
        return found


class CallbackUrlGuard:
    """The ``UrlGuard`` of ``POST /receive``: refuses invalid URLs and internal destinations.

    A name that does not resolve now (or not within 5 s) is accepted: it may be set up
    later, and every delivery resolves and checks again before it connects. The
    ``return_url`` is never fetched by the gateway; this check is all it gets.
    """

    def __init__(
        self, destinations: Destinations, *, resolve_timeout: float = CHECK_RESOLVE_TIMEOUT
    ) -> None:
        self._destinations = destinations
        self._resolve_timeout = resolve_timeout

    async def check(self, url: str, field: str) -> None:
        """Raise InvalidInput naming ``field`` (and the flag to use) when ``url`` is refused."""
        try:
            target = parse_url(url)
        except InvalidUrl as exc:
            raise InvalidInput(f"{field}: {exc}") from None
        if self._destinations.named_in_allow_list(target):
            return
        try:
            async with asyncio.timeout(self._resolve_timeout):
                await self._destinations.addresses(target)
        except RefusedDestination as exc:
            message = exc.refusal.message(field, target, resolved=target.ip is None)
            raise InvalidInput(message) from None
        except (DnsFailure, TimeoutError):
            return


class _CheckedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's only way to open a socket: resolve once, check, connect to what was checked."""

    def __init__(self, destinations: Destinations, inner: httpcore.AsyncNetworkBackend) -> None:
        self._destinations = destinations
        self._inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Connect to the first checked address of ``host`` that accepts."""
        name, ip = normalize_host(f"[{host}]" if ":" in host else host)
        target = Target(scheme="http", host=name, port=port, request_target="/", ip=ip)
        failure: Exception | None = None
        for address in await self._destinations.addresses(target):
            try:
                return await self._inner.connect_tcp(
                    str(address),
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None  # addresses() never returns an empty list
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Never used: callbacks go over TCP only."""
        raise httpcore.ConnectError("callbacks do not use unix sockets")

    async def sleep(self, seconds: float) -> None:
        """httpcore's retry back-off (unused: retries are 0)."""
        await asyncio.sleep(seconds)


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _failure(exc: Exception) -> str | None:
    """The merchant-facing ``last_error`` of a transport failure (None: not ours to map)."""
    if isinstance(exc, DnsFailure):
        return "DNS lookup failed"
    if isinstance(exc, RefusedDestination):
        return "refused: internal address (see --callback-allow)"
    if isinstance(exc, httpcore.TimeoutException):
        return "timeout"
    if isinstance(exc, httpcore.ConnectError):
        if _caused_by(exc, ssl.SSLError):
            return "TLS error"
        if _caused_by(exc, ConnectionRefusedError):
            return "connection refused"
        return "connection failed"
    if isinstance(exc, httpcore.RemoteProtocolError):
        return "invalid or no HTTP answer"
    if isinstance(exc, httpcore.NetworkError):
        return "connection lost"
    return None


class HttpCallbackSender:
    """The ``CallbackSender``: POSTs over pinned, checked connections (see the module doc)."""

    def __init__(
        self,
        destinations: Destinations,
        *,
        timeout: float,
        max_connections: int,
        ssl_context: ssl.SSLContext | None = None,
        network: httpcore.AsyncNetworkBackend | None = None,
    ) -> None:
        self._timeout = timeout
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context or httpcore_context(),  # made once: adapters/tls.py
            max_connections=max_connections,
            max_keepalive_connections=max_connections,
            keepalive_expiry=30.0,
            http1=True,
            http2=False,
            retries=0,
            network_backend=_CheckedBackend(destinations, network or httpcore.AnyIOBackend()),
        )

    async def send(self, url: str, body: bytes, headers: Mapping[str, str]) -> DeliveryResult:
        """POST once; failures come back as a result with a short, merchant-fit error."""
        try:
            target = parse_url(url)
        except InvalidUrl:
            return DeliveryResult(False, error="invalid URL", permanent=True)
        request = httpcore.Request(
            b"POST",
            httpcore.URL(
                scheme=target.scheme.encode(),
                host=target.host.encode(),
                port=target.port,
                target=target.request_target.encode(),
            ),
            headers=[
                (b"Host", target.netloc.encode()),
                (b"Accept-Encoding", b"identity"),
                (b"Content-Length", str(len(body)).encode()),
                *((k.encode(), v.encode()) for k, v in headers.items()),
            ],
            content=body,
            extensions={
                "timeout": dict.fromkeys(("connect", "read", "write", "pool"), self._timeout)
            },
        )
        try:
            response = await self._pool.handle_async_request(request)
            try:
                await _drain(response)
            finally:
                await response.aclose()
        except Exception as exc:
            error = _failure(exc)
            if error is None:
                raise
            return DeliveryResult(False, error=error)
        if 200 <= response.status < 300:
            return DeliveryResult(True, status_code=response.status)
        return DeliveryResult(False, status_code=response.status, error=f"HTTP {response.status}")

    async def aclose(self) -> None:
        """Close every kept-alive connection."""
        await self._pool.aclose()


async def _drain(response: httpcore.Response) -> None:
    """Read (and drop) the body up to 64 KB; a bigger one is left unread and the
    connection is closed by ``aclose`` instead of being kept alive."""
    for name, value in response.headers:
        too_long = value.isdigit() and int(value) > MAX_ANSWER_BYTES
        if name.lower() == b"content-length" and too_long:
            return
    seen = 0
    async for chunk in response.aiter_stream():
        seen += len(chunk)
        if seen > MAX_ANSWER_BYTES:
            return
