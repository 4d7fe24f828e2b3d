"""Fake exchange-rate providers on loopback, answering in the providers' real shapes.

One real HTTP server per provider (CoinGecko, Kraken, CryptoCompare), each on an
ephemeral port of 127.0.0.1, so that one provider can be down (connection refused)
while the others answer. What a provider answers for a currency is set at run time::

    with FakeRates() as fake:
        fake.set("kraken", "EUR", "150.25")           # a price, in Kraken's shape
        fake.set("coingecko", "EUR", status(500))     # or a behaviour below
        fake.down("cryptocompare")                    # connection refused until up()
        gateway_args = ["--rate-source-url", fake.option()]

A currency nobody set is answered the way the provider answers a currency it does not
price. Behaviours: :func:`price`, :func:`literal` (any JSON text in the value's place:
``NaN``, ``-1``, ``0``, ``"abc"``, ``true``; Kraken's real value is a JSON string, so
``literal('"-1.0"')`` there), :func:`status`, :func:`slow`, :func:`malformed`,
:func:`oversized`, :func:`redirect`, :func:`unknown`, :func:`drop`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import parse_qs, urlsplit

PROVIDERS = ("coingecko", "kraken", "cryptocompare")
# Kraken names the classic fiat currencies with a Z (and XMR with an X) in its answers.
_KRAKEN_Z = frozenset({"EUR", "USD", "GBP", "JPY", "CAD"})


@dataclass(frozen=True)
class Answer:
    """What a provider answers for one currency (build it with the functions below)."""

    kind: str
    value: str = ""  # JSON text put where the provider puts the price
    status: int = 200
    delay: float = 0.0
    location: str = ""
    size: int = 0
    declare_length: bool = True


def price(value: str | Decimal | int) -> Answer:
    """The price, in the provider's real shape (a JSON number; Kraken: a string)."""
    text = str(Decimal(value))
    return Answer("price", text)


def literal(json_text: str) -> Answer:
    """The provider's real shape with ``json_text`` in the price's place."""
    return Answer("literal", json_text)


def status(code: int) -> Answer:
    """An HTTP error status with a small JSON body."""
    return Answer("status", status=code)


def slow(seconds: float, then: Answer | str | Decimal | int) -> Answer:
    """``then``, after ``seconds`` of silence."""
    return replace(_answer(then), delay=seconds)


def malformed() -> Answer:
    """The first half of a real answer: JSON that does not parse."""
    return Answer("malformed", "100")


def oversized(size: int = 100_000, *, declare_length: bool = True) -> Answer:
    """A real answer padded with spaces (still valid JSON) to ``size`` bytes; without
    ``declare_length`` no Content-Length is sent and the body ends when the connection
    closes."""
    return Answer("oversized", "100", size=size, declare_length=declare_length)


def redirect(location: str) -> Answer:
    """A 302 to ``location`` (another host, say)."""
    return Answer("redirect", status=302, location=location)


def unknown() -> Answer:
    """The provider's own answer to a currency it does not price."""
    return Answer("unknown")


def drop() -> Answer:
    """Close the connection without answering."""
    return Answer("drop")


def _answer(value: Answer | str | Decimal | int) -> Answer:
    return value if isinstance(value, Answer) else price(value)


def _kraken_ticker(last: str) -> str:
    """A whole ticker as Kraken sends it, ``last`` (JSON text) as the last trade's price."""
    return (
        '{"a":["1.0","1","1.000"],"b":["1.0","1","1.000"],'
        f'"c":[{last},"0.50000000"],"v":["10.0","20.0"],"p":["1.0","1.0"],'
        '"t":[10,20],"l":["1.0","1.0"],"h":["1.0","1.0"],"o":"1.0"}'
    )


def _body(provider: str, currency: str, answer: Answer) -> str:
    """The provider's JSON for ``currency`` with ``answer.value`` as the price."""
    value = answer.value
    if provider == "kraken" and answer.kind in ("price", "malformed", "oversized"):
        value = f'"{Decimal(value):.8f}"'
    if provider == "coingecko":
        if answer.kind == "unknown":
            return '{"monero":{}}'
        return f'{{"monero":{{"{currency.lower()}":{value}}}}}'
    if provider == "kraken":
        if answer.kind == "unknown":
            return '{"error":["EQuery:Unknown asset pair"]}'
        pair = f"XXMRZ{currency}" if currency in _KRAKEN_Z else f"XMR{currency}"
        return f'{{"error":[],"result":{{"{pair}":{_kraken_ticker(value)}}}}}'
    if answer.kind == "unknown":
        message = f"cccagg_or_exchange market does not exist for this coin pair (XMR-{currency})"
        return json.dumps(
            {
                "Response": "Error",
                "Message": message,
                "HasWarning": False,
                "Type": 2,
                "RateLimit": {},
                "Data": {},
                "Cooldown": 0,
            }
        )
    return f'{{"{currency}":{value}}}'


def _currency_asked(provider: str, path: str, query: dict[str, list[str]]) -> str | None:
    """The currency of a request to one of the provider's paths (after any prefix)."""
    if provider == "coingecko" and path.endswith("/api/v3/simple/price"):
        wanted = query.get("vs_currencies", [])
        return wanted[0].upper() if query.get("ids") == ["monero"] and len(wanted) == 1 else None
    if provider == "kraken" and path.endswith("/0/public/Ticker"):
        pair = query.get("pair", [""])[0]
        return pair[3:] if pair.startswith("XMR") and len(pair) > 3 else None
    if provider == "cryptocompare" and path.endswith("/data/price"):
        wanted = query.get("tsyms", [])
        return wanted[0] if query.get("fsym") == ["XMR"] and len(wanted) == 1 else None
    return None


class FakeRates:
    """The three fake providers; a context manager that closes them all."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._answers: dict[tuple[str, str], Answer] = {}
        self._hits: dict[tuple[str, str], int] = {}
        self._targets: dict[str, list[str]] = {p: [] for p in PROVIDERS}
        self._servers: dict[str, ThreadingHTTPServer | None] = {}
        self._ports: dict[str, int] = {}
        for provider in PROVIDERS:
            self._serve(provider, 0)

    def __enter__(self) -> FakeRates:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- the test's controls -----------------------------------------------------

    def set(self, provider: str, currency: str, answer: Answer | str | Decimal | int) -> None:
        """What ``provider`` answers for ``currency`` from now on."""
        if provider not in PROVIDERS:
            raise ValueError(f"unknown provider {provider!r}")
        with self._lock:
            self._answers[(provider, currency.upper())] = _answer(answer)

    def set_all(self, currency: str, answer: Answer | str | Decimal | int) -> None:
        """What every provider answers for ``currency`` from now on."""
        for provider in PROVIDERS:
            self.set(provider, currency, answer)

    def reset(self) -> None:
        """Forget every answer set and every request seen; serve every provider again."""
        with self._lock:
            self._answers.clear()
            self._hits.clear()
            for targets in self._targets.values():
                targets.clear()
        for provider in PROVIDERS:
            self.up(provider)

    def down(self, provider: str) -> None:
        """Stop ``provider``'s server: connections are refused until :meth:`up`."""
        with self._lock:
            server = self._servers[provider]
            self._servers[provider] = None
        if server is not None:
            server.shutdown()
            server.server_close()

    def up(self, provider: str) -> None:
        """Serve ``provider`` again, on the same port."""
        if self._servers[provider] is None:
            self._serve(provider, self._ports[provider])

    def base(self, provider: str) -> str:
        """``provider``'s base URL (``http://127.0.0.1:PORT``)."""
        return f"http://127.0.0.1:{self._ports[provider]}"

    @property
    def bases(self) -> dict[str, str]:
        """Every provider's base URL, by name."""
        return {provider: self.base(provider) for provider in PROVIDERS}

    def option(self) -> str:
        """The ``--rate-source-url`` value that points the gateway at these servers."""
        return ",".join(f"{name}={url}" for name, url in self.bases.items())

    def hits(self, provider: str, currency: str | None = None) -> int:
        """Requests ``provider`` got (for ``currency``, or in all)."""
        with self._lock:
            return sum(
                n for (p, c), n in self._hits.items() if p == provider and currency in (None, c)
            )

    def targets(self, provider: str) -> list[str]:
        """The request targets (path and query) ``provider`` got, in order."""
        with self._lock:
            return list(self._targets[provider])

    def close(self) -> None:
        """Stop every server; sleeping answers wake up and go unsent."""
        self._closing.set()
        for provider in PROVIDERS:
            self.down(provider)

    def __repr__(self) -> str:
        return f"FakeRates({self.option()})"

    # -- the servers -------------------------------------------------------------

    def _serve(self, provider: str, port: int) -> None:
        server = ThreadingHTTPServer(("127.0.0.1", port), self._handler(provider))
        server.daemon_threads = True
        self._ports[provider] = server.server_address[1]
        with self._lock:
            self._servers[provider] = server
        threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    def _handler(self, provider: str) -> Callable[..., BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                fake._answer_request(self, provider)

            def log_message(self, format: str, *args: object) -> None:
                pass  # the tests' output stays readable

        return Handler

    def _answer_request(self, handler: BaseHTTPRequestHandler, provider: str) -> None:
        target = urlsplit(handler.path)
        currency = _currency_asked(provider, target.path, parse_qs(target.query))
        with self._lock:
            self._targets[provider].append(handler.path)
            if currency is not None:
                key = (provider, currency)
                self._hits[key] = self._hits.get(key, 0) + 1
            answer = self._answers.get((provider, currency or ""), unknown())
        if currency is None:
            _send(handler, 404, b'{"error":"not found"}')
            return
        if answer.delay and self._closing.wait(answer.delay):
            return  # closing: never answer
        if answer.kind == "drop":
            handler.close_connection = True
            return
        if answer.kind == "status":
            _send(handler, answer.status, b'{"error":"fake failure"}')
        elif answer.kind == "redirect":
            _send(handler, answer.status, b"", {"Location": answer.location})
        else:
            body = _body(provider, currency, answer).encode()
            if answer.kind == "malformed":
                body = body[: len(body) // 2]
            elif answer.kind == "oversized":
                body += b" " * max(answer.size - len(body), 0)
            _send(handler, 200, body, declare_length=answer.declare_length)


def _send(
    handler: BaseHTTPRequestHandler,
    code: int,
    body: bytes,
    headers: dict[str, str] | None = None,
    *,
    declare_length: bool = True,
) -> None:
    try:
        handler.send_response(code)
        handler.send_header("Content-Type", "application/json")
        if declare_length:
            handler.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(body)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the client gave up (a size cap, a timeout): what the test wanted
