"""The callback HTTP adapter against real sockets on loopback: pinned addresses (no DNS
rebinding), the allow list, TLS names, redirects, answer size, and merchant-fit errors.

The resolver is injected (names resolve to what each test says); the connections and
HTTP exchanges are real.
"""

from __future__ import annotations

import asyncio
import ipaddress
import shutil
import ssl
import subprocess
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import httpcore
import pytest

from xmrgate.adapters.callback_http import (
    CallbackUrlGuard,
    Destinations,
    DnsFailure,
    HttpCallbackSender,
)
from xmrgate.domain.callback_urls import IPAddress, parse_allow_list
from xmrgate.domain.errors import InvalidInput

PUBLIC = ipaddress.ip_address("93.184.216.34")
LOOPBACK = ipaddress.ip_address("127.0.0.1")
HEADERS = {"Content-Type": "application/json", "X-Xmrgate-Event": "transfer.confirmed"}


@dataclass
class Seen:
    """What a test server saw: request heads, TLS server names, bytes it managed to send."""

    heads: list[bytes] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    server_names: list[str | None] = field(default_factory=list)
    sent: int = 0
    closed_early: bool = False


Reply = Callable[[asyncio.StreamWriter, Seen], Awaitable[None]]


async def ok(writer: asyncio.StreamWriter, _seen: Seen) -> None:
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")


def status(code: int, extra: bytes = b"") -> Reply:
    async def reply(writer: asyncio.StreamWriter, _seen: Seen) -> None:
        writer.write(b"HTTP/1.1 %d X\r\nContent-Length: 0\r\n%s\r\n" % (code, extra))

    return reply


async def serve(
    reply: Reply, seen: Seen, tls: ssl.SSLContext | None = None
) -> tuple[asyncio.Server, int]:
    """An HTTP/1.1 server on 127.0.0.1 that records requests and answers with ``reply``."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                seen.heads.append(head)
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                seen.bodies.append(await reader.readexactly(length))
                await reply(writer, seen)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        except asyncio.CancelledError:  # the test is over and closes the server
            return
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=tls)
    return server, server.sockets[0].getsockname()[1]


def resolver_of(answers: dict[str, list[list[IPAddress]]], calls: list[str]):  # type: ignore[no-untyped-def]
    """Each lookup of a name returns its next answer (the last one repeats)."""

    async def resolve(host: str, port: int) -> list[IPAddress]:
        calls.append(host)
        queue = answers.get(host)
        if not queue:
            raise DnsFailure(host)
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return resolve


class RedirectToLoopback(httpcore.AsyncNetworkBackend):
    """Records where the sender connects; reaches the test server on loopback instead.

    Lets a test use a public address (which the policy accepts) while the bytes go to
    a local server: what matters is which address the sender asked for.
    """

    def __init__(self, port: int) -> None:
        self.port = port
        self.asked: list[tuple[str, int]] = []
        self._real = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        self.asked.append((host, port))
        return await self._real.connect_tcp("127.0.0.1", self.port, timeout=timeout)


def sender(
    allow: str = "",
    answers: dict[str, list[list[IPAddress]]] | None = None,
    calls: list[str] | None = None,
    **kw: object,
) -> HttpCallbackSender:
    calls = calls if calls is not None else []
    destinations = Destinations(parse_allow_list(allow), resolver_of(answers or {}, calls))
    return HttpCallbackSender(destinations, timeout=5, max_connections=4, **kw)  # type: ignore[arg-type]


def test_rebinding_name_connects_to_the_address_it_checked() -> None:
    """DNS answers public, then loopback: one lookup per connection, and the connection goes
    to exactly the checked public address; the next lookup (loopback) is refused unsent."""

    async def main() -> None:
        seen = Seen()
        server, port = await serve(status(200, b"Connection: close\r\n"), seen)
        calls: list[str] = []
        answers = {"rebind.test": [[PUBLIC], [LOOPBACK]]}
        network = RedirectToLoopback(port)
        s = sender("", answers, calls, network=network)
        try:
            first = await s.send("http://rebind.test:8080/cb?x=1", b"{}", HEADERS)
            assert first.delivered, first
            assert calls == ["rebind.test"]
            assert network.asked == [(str(PUBLIC), 8080)]
            assert b"Host: rebind.test:8080\r\n" in seen.heads[0]
            second = await s.send("http://rebind.test:8080/cb?x=1", b"{}", HEADERS)
            assert not second.delivered
            assert second.error == "refused: internal address (see --callback-allow)"
            assert calls == ["rebind.test", "rebind.test"]
            assert network.asked == [(str(PUBLIC), 8080)], "never connected to loopback"
            assert len(seen.heads) == 1
        finally:
            await s.aclose()
            server.close()

    asyncio.run(main())


def test_guard_then_delivery_each_check_their_own_lookup() -> None:
    """POST /receive saw a public address; delivery resolves again, gets loopback, refuses."""

    async def main() -> None:
        calls: list[str] = []
        destinations = Destinations((), resolver_of({"shop.test": [[PUBLIC], [LOOPBACK]]}, calls))
        await CallbackUrlGuard(destinations).check("https://shop.test/hook", "callback_url")
        s = HttpCallbackSender(destinations, timeout=5, max_connections=4)
        try:
            result = await s.send("https://shop.test/hook", b"{}", HEADERS)
        finally:
            await s.aclose()
        assert not result.delivered and result.error is not None
        assert result.error.startswith("refused")
        assert calls == ["shop.test", "shop.test"]

    asyncio.run(main())


def test_name_with_one_private_address_is_refused() -> None:
    """Public and loopback in one answer: refused, nothing connects."""

    async def main() -> None:
        network = RedirectToLoopback(9)
        s = sender("", {"mixed.test": [[PUBLIC, LOOPBACK]]}, network=network)
        try:
            result = await s.send("http://mixed.test/", b"{}", HEADERS)
        finally:
            await s.aclose()
        assert result.error == "refused: internal address (see --callback-allow)"
        assert network.asked == []

    asyncio.run(main())


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:{port}/cb",
        "http://2130706433:{port}/cb",
        "http://0x7f.1:{port}/cb",
        "http://[::ffff:127.0.0.1]:{port}/cb",
        "http://localhost:{port}/cb",
    ],
)
def test_loopback_is_refused_without_an_allow_entry(url: str) -> None:
    """Every spelling of loopback is refused at delivery too, before any connection."""

    async def main() -> None:
        seen = Seen()
        server, port = await serve(ok, seen)
        s = sender("", {"localhost": [[LOOPBACK]]})
        try:
            result = await s.send(url.format(port=port), b"{}", HEADERS)
        finally:
            await s.aclose()
            server.close()
        assert result.error == "refused: internal address (see --callback-allow)"
        assert seen.heads == []

    asyncio.run(main())


def test_allowed_loopback_is_delivered_with_identity_encoding() -> None:
    """With 127.0.0.1:<port> allowed it is delivered: Host as in the URL, no compression."""

    async def main() -> None:
        seen = Seen()
        server, port = await serve(ok, seen)
        s = sender(f"127.0.0.1:{port}")
        try:
            result = await s.send(f"http://127.0.0.1:{port}/cb?order=42", b'{"a":1}', HEADERS)
            other_port = await s.send(f"http://127.0.0.1:{port + 1}/cb", b"{}", HEADERS)
        finally:
            await s.aclose()
            server.close()
        assert result.delivered and result.status_code == 200
        head = seen.heads[0].lower()
        assert head.startswith(b"post /cb?order=42 http/1.1\r\n")
        assert f"host: 127.0.0.1:{port}\r\n".encode() in head
        assert b"accept-encoding: identity\r\n" in head
        assert seen.bodies == [b'{"a":1}']
        assert other_port.error == "refused: internal address (see --callback-allow)"

    asyncio.run(main())


def test_errors_are_short_and_merchant_fit() -> None:
    """A closed port, a 500 and a redirect (not followed) give plain last_error texts."""

    async def main() -> None:
        seen = Seen()
        server, port = await serve(status(500), seen)
        redirect_seen = Seen()
        redirect, redirect_port = await serve(
            status(302, b"Location: http://169.254.169.254/latest/meta-data/\r\n"), redirect_seen
        )
        probe = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        closed_port = probe.sockets[0].getsockname()[1]
        probe.close()
        await probe.wait_closed()
        s = sender("127.0.0.1")
        try:
            refused = await s.send(f"http://127.0.0.1:{closed_port}/", b"{}", HEADERS)
            failed = await s.send(f"http://127.0.0.1:{port}/", b"{}", HEADERS)
            moved = await s.send(f"http://127.0.0.1:{redirect_port}/", b"{}", HEADERS)
            dns = await s.send("http://nowhere.test/", b"{}", HEADERS)
            bad = await s.send("http://127.0.0.1:99999/p", b"{}", HEADERS)
            newline = await s.send("http://127.0.0.1/p\nX: y", b"{}", HEADERS)
        finally:
            await s.aclose()
            server.close()
            redirect.close()
        assert (refused.delivered, refused.error) == (False, "connection refused")
        assert (failed.status_code, failed.error) == (500, "HTTP 500")
        assert (moved.status_code, moved.error) == (302, "HTTP 302")
        assert len(redirect_seen.heads) == 1, "the redirect was not followed"
        assert dns.error == "DNS lookup failed" and not dns.permanent
        assert (bad.error, bad.permanent) == ("invalid URL", True)
        assert (newline.error, newline.permanent) == ("invalid URL", True)

    asyncio.run(main())


async def huge_answer(writer: asyncio.StreamWriter, seen: Seen, *, chunked: bool) -> None:
    """Try to send a 100 MB answer; count what got out before the client hung up."""
    total = 100 * 1024 * 1024
    block = b"x" * 65536
    if chunked:
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
    else:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % total)
    try:
        while seen.sent < total:
            writer.write(b"10000\r\n" + block + b"\r\n" if chunked else block)
            await writer.drain()
            seen.sent += len(block)
    except ConnectionError:
        seen.closed_early = True
        raise


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_huge_answer_is_cut_after_64_kb(chunked: bool) -> None:
    """A 100 MB answer is not read: the connection is closed after at most 64 KB of body."""

    async def main() -> None:
        seen = Seen()

        async def reply(writer: asyncio.StreamWriter, s: Seen) -> None:
            await huge_answer(writer, s, chunked=chunked)

        server, port = await serve(reply, seen)
        s = sender("127.0.0.1")
        try:
            result = await s.send(f"http://127.0.0.1:{port}/", b"{}", HEADERS)
            for _ in range(200):
                if seen.closed_early:
                    break
                await asyncio.sleep(0.01)
        finally:
            await s.aclose()
            server.close()
        assert result.delivered  # the status line said 200
        assert seen.closed_early, "the gateway read the whole answer"
        # What the kernel buffers on loopback, at most; far from 100 MB.
        assert seen.sent < 16 * 1024 * 1024, seen.sent

    asyncio.run(main())


def make_tls(tmp_path: Path, name: str) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A self-signed certificate for ``name``: (server context, client context trusting it)."""
    if shutil.which("openssl") is None:
        pytest.fail("openssl is missing: apt-get install openssl (scripts/install-system-deps)")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
            "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", f"/CN={name}",
            "-addext", f"subjectAltName=DNS:{name}", "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert, key)
    client = ssl.create_default_context(cafile=str(cert))
    return server, client


def test_tls_uses_the_url_host_for_sni_and_the_certificate(tmp_path: Path) -> None:
    """Connected to the checked address, TLS still names and verifies the URL's host."""

    async def main() -> None:
        server_ctx, client_ctx = make_tls(tmp_path, "shop.test")
        seen = Seen()

        def record_sni(_sock: ssl.SSLObject, name: str | None, _ctx: ssl.SSLContext) -> None:
            seen.server_names.append(name)

        server_ctx.sni_callback = record_sni  # type: ignore[assignment]
        server, port = await serve(ok, seen, tls=server_ctx)
        answers = {"shop.test": [[LOOPBACK]], "other.test": [[LOOPBACK]]}
        s = sender("shop.test,other.test", answers, ssl_context=client_ctx)
        try:
            good = await s.send(f"https://shop.test:{port}/hook", b"{}", HEADERS)
            wrong = await s.send(f"https://other.test:{port}/hook", b"{}", HEADERS)
        finally:
            await s.aclose()
            server.close()
        assert good.delivered, good
        assert seen.server_names[0] == "shop.test"
        assert f"Host: shop.test:{port}\r\n".encode() in seen.heads[0]
        assert (wrong.delivered, wrong.error) == (False, "TLS error")
        assert "other.test" in seen.server_names and len(seen.heads) == 1

    asyncio.run(main())


def guard(allow: str = "", answers: dict[str, list[list[IPAddress]]] | None = None, **kw):  # type: ignore[no-untyped-def]
    calls: list[str] = []
    destinations = Destinations(parse_allow_list(allow), resolver_of(answers or {}, calls))
    return CallbackUrlGuard(destinations, **kw), calls


def refused_message(g: CallbackUrlGuard, url: str, field: str = "callback_url") -> str:
    with pytest.raises(InvalidInput) as raised:
        asyncio.run(g.check(url, field))
    return raised.value.message


def test_guard_refuses_loopback_naming_the_flag() -> None:
    """The operator's shop on the same host gets a 400 that names --callback-allow host:port."""
    g, _ = guard()
    message = refused_message(g, "http://127.0.0.1:8000/hook?token=abc")
    assert message.startswith("callback_url: ")
    assert "loopback" in message and "--callback-allow 127.0.0.1:8000" in message
    assert "abc" not in message
    message = refused_message(g, "http://[::1]/x", "return_url")
    assert message.startswith("return_url: ") and "--callback-allow [::1]:80" in message
    assert "--callback-allow 127.0.0.1:80" in refused_message(g, "http://0x7f.1/")


def test_guard_refuses_names_resolving_inside() -> None:
    """A name that resolves to a private address is refused; the message names the host."""
    g, _ = guard("", {"intranet.test": [[ipaddress.ip_address("10.1.2.3")]]})
    message = refused_message(g, "https://intranet.test/hook")
    assert "--callback-allow intranet.test:443" in message and "10.1.2.3" not in message


def test_guard_accepts_public_allowed_and_unresolvable() -> None:
    """Public names, allowed internal ones (without a lookup) and names that do not resolve
    (delivery checks them again) are accepted."""
    g, calls = guard(
        "127.0.0.1:8000,*.shop.lan", {"shop.example": [[PUBLIC]], "a.shop.lan": [[LOOPBACK]]}
    )
    for url in (
        "https://shop.example/hook",
        "http://127.0.0.1:8000/hook",
        "http://a.shop.lan/x",
        "https://not-yet.example/",
    ):
        asyncio.run(g.check(url, "callback_url"))
    assert "a.shop.lan" not in calls
    assert "--callback-allow 127.0.0.1:8001" in refused_message(g, "http://127.0.0.1:8001/")


def test_guard_accepts_a_name_whose_lookup_hangs() -> None:
    """A lookup that takes too long does not hold POST /receive: accepted after the timeout."""

    async def slow(host: str, port: int) -> list[IPAddress]:
        await asyncio.sleep(30)
        return [LOOPBACK]

    g = CallbackUrlGuard(Destinations((), slow), resolve_timeout=0.2)
    asyncio.run(asyncio.wait_for(g.check("http://slow.test/", "callback_url"), 5))


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:99999/p", "http://shop.example/p\nX-Injected: 1", "ftp://shop.example/"],
)
def test_guard_refuses_invalid_urls_naming_the_field(url: str) -> None:
    """Invalid URLs are a 400 at POST /receive, with the parser that delivers them."""
    g, _ = guard()
    assert refused_message(g, url, "return_url").startswith("return_url: ")


def test_system_resolver_reads_numeric_hosts_and_fails_cleanly() -> None:
    """The real getaddrinfo path: numeric forms resolve to loopback, junk is a DnsFailure."""
    from xmrgate.adapters.callback_http import system_resolver

    assert asyncio.run(system_resolver("127.0.0.1", 80)) == [LOOPBACK]
    with pytest.raises(DnsFailure):
        asyncio.run(system_resolver("name.invalid", 80))
