"""The shipped ``deploy/Caddyfile`` in front of a real gateway, with a real Caddy.

The file is used as it ships, but for its site address (``http://127.0.0.1:<port>``:
plain HTTP, so Caddy asks no certificate authority for anything), its upstream (the test
gateway's port) and two global options: ``admin off`` (the default admin port 2019 may be
another Caddy's) and ``default_bind 127.0.0.1`` (a site address with a port would
otherwise listen on every interface). Through it:

- every public page answers as the gateway answers it directly: a real payment request's
  checkout, a payment link and its "Pay" button, a Greenfield invoice made through Caddy
  and its ``checkoutLink`` (303 to a checkout that itself loads through Caddy), a real
  refund's claim page, the POS and the dashboard with all their files, Greenfield's
  ``/api/v1`` and the consent page ``/api-keys/authorize``;
- every other route of the application (the MoneroPay API, ``/health``, ``/metrics``)
  and the paths that merely look like public ones (``/payouts``, ``/refunds``,
  ``/pay/..%2Freceive``) are Caddy's empty 404, and the gateway's own request counter
  proves that none of them reached it;
- a body over the gateway's 64 KiB gets the gateway's own 413, through Caddy as directly;
- the file is as ``caddy fmt`` writes it.

Caddy comes from Debian (``caddy``: scripts/install-system-deps); a missing one fails
the test with the package to install, it never skips.
"""

from __future__ import annotations

import http.client
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.unit.gateway_builder import fake_app, fake_gateway
from testsupport.gateway import SYNC_WAIT, Gateway
from testsupport.ports import holds_listener
from testsupport.processes import stop_process, wait_until
from xmrgate.config import Settings
from xmrgate.devnet import Devnet, free_port
from xmrgate.devnet.processes import die_with_parent
from xmrgate.web import admin, pos

pytestmark = [
    pytest.mark.integration,
    # What is published depends on the Caddyfile, not on the database: one backend.
    pytest.mark.parametrize("gateway", ["sqlite"], indirect=True),
]

CADDYFILE = Path(__file__).resolve().parents[2] / "deploy" / "Caddyfile"
#: The shipped file's site address and upstream: the only parts of it replaced here.
SITE = "pay.example.com"
UPSTREAM = "127.0.0.1:5000"
#: Global options of the test's Caddy (see the module docstring).
TEST_GLOBALS = ["\tadmin off", "\tdefault_bind 127.0.0.1"]
#: How long Caddy gets to listen (it starts in well under a second).
CADDY_START = 20.0

#: As in production: an operator key (every scope, ``admin`` included: the consent page
#: asks for one), so every route that needs a key refuses a call without one.
OPERATOR = "caddy-operator-key-0123456789"
AUTH = {"Authorization": f"Bearer {OPERATOR}"}
#: No address pool: the few requests here come from the wallet, and the gateway is ready
#: sooner (it waits for a full pool).
GATEWAY_ARGS = ["--api-key", OPERATOR, "--address-pool-size", "0"]

#: The application's routes that the Caddyfile must publish (besides all of /api/v1).
PUBLIC_ROUTES = frozenset(
    {
        "/pay/{address}",
        "/pay/{address}/status.json",
        "/pay/{address}/qr.svg",
        "/i/{invoiceId}",
        "/invoice",
        "/l/{slug:path}",
        "/refund/{token:path}",
        "/api-keys/authorize",
        "/pos",
        "/pos/static/{name}",
        "/pos/config",
        "/pos/sales",
        "/pos/sales/{address}",
        "/admin",
        "/admin/static/{name}",
    }
)
GREENFIELD_PREFIX = "/api/v1/"
#: Paths no route has, next to public ones: Caddy's 404, never the gateway's.
LOOK_ALIKES = [
    "/pay",
    "/PAYOUTS",
    "/refunds/x",
    "/links/x",
    "/invoices",
    "/posx",
    "/adminx",
    "/admin/",
    "/admin/x",
    "/api/v1",
    "/api/v2/server/info",
    "/api-keys/current",
    "/api-keys/authorizex",
    # Decoded and cleaned, each is a private path: Caddy judges them as such.
    "/pay/..%2Freceive",
    "/pay/x/%2e%2e/%2e%2e/balance",
    "/api/v1/..%2F..%2Ftransfer",
    "/l/../metrics",
    "//receive",
]
#: The consent page's query, as WooCommerce's "connect" button sends it.
CONSENT_QUERY = urlencode(
    [
        ("applicationName", "WooCommerce"),
        ("strict", "true"),
        ("selectiveStores", "true"),
        ("redirect", "https://shop.example/?btcpay-settings-callback"),
        ("permissions", "btcpay.store.canviewinvoices"),
        ("permissions", "btcpay.store.cancreateinvoice"),
        ("permissions", "btcpay.store.canviewstoresettings"),
        ("permissions", "btcpay.store.canmodifyinvoices"),
    ]
)


@dataclass(frozen=True)
class Answer:
    """One HTTP answer, as read from the socket (no client normalised its path)."""

    status: int
    headers: http.client.HTTPMessage
    body: bytes


@dataclass
class Caddy:
    """The running Caddy: its base URL, its process and its log."""

    url: str
    port: int
    proc: subprocess.Popen[bytes]
    log: Path
    client: httpx.Client


def caddy_binary() -> str:
    """Caddy's path, or a failure naming the Debian package that has it."""
    path = shutil.which("caddy")
    if path is None:
        pytest.fail("caddy is missing: apt-get install caddy (scripts/install-system-deps)")
    return path


def local_config(shipped: str, port: int, upstream_port: int) -> str:
    """The shipped Caddyfile served on ``http://127.0.0.1:port`` and proxying to
    ``127.0.0.1:upstream_port``, with the test's global options; nothing else changed."""
    lines = shipped.splitlines()
    sites = [i for i, line in enumerate(lines) if line.rstrip() == f"{SITE} {{"]
    assert len(sites) == 1, f"{CADDYFILE}: one site block '{SITE} {{' expected"
    lines[sites[0]] = f"http://127.0.0.1:{port} {{"
    proxies = [i for i, line in enumerate(lines) if line.strip() == f"reverse_proxy {UPSTREAM}"]
    assert proxies, f"{CADDYFILE}: no 'reverse_proxy {UPSTREAM}'"
    for i in proxies:
        lines[i] = lines[i].replace(UPSTREAM, f"127.0.0.1:{upstream_port}")
    # Into the global options block when the file has one (its first block), else a new one.
    first = next(i for i, line in enumerate(lines) if line.strip() and not line.startswith("#"))
    if lines[first].strip() == "{":
        lines[first + 1 : first + 1] = TEST_GLOBALS
    else:
        lines[first:first] = ["{", *TEST_GLOBALS, "}", ""]
    return "\n".join(lines) + "\n"


def raw(port: int, method: str, path: str, headers: dict[str, str] | None = None) -> Answer:
    """One request with ``path`` sent byte for byte (httpx would clean ``..`` out of it)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, headers=headers or {})
        found = conn.getresponse()
        return Answer(found.status, found.headers, found.read())
    finally:
        conn.close()


@pytest.fixture(scope="module")
def caddy(gateway: Gateway, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Caddy]:
    """``caddy run`` on the shipped Caddyfile in front of ``gateway``, stopped by PID."""
    binary = caddy_binary()
    workdir = tmp_path_factory.mktemp("caddy")
    port = free_port()
    config = workdir / "Caddyfile"
    config.write_text(local_config(CADDYFILE.read_text(), port, gateway.port))
    log = workdir / "caddy.log"
    # Caddy keeps its state (autosaved config, certificates, locks) under these.
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workdir),
        "XDG_DATA_HOME": str(workdir / "data"),
        "XDG_CONFIG_HOME": str(workdir / "config"),
    }
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [binary, "run", "--config", str(config), "--adapter", "caddyfile"],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            preexec_fn=die_with_parent(),  # it dies with the test process, as the gateway
        )
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30, trust_env=False)
    try:

        def listening() -> tuple[bool, str]:
            # Only an answer from Caddy's own socket counts (not a stranger's on the port).
            try:
                status = raw(port, "GET", "/").status
            except OSError as exc:
                return False, f"{type(exc).__name__}: {exc}"
            return holds_listener(proc.pid, port), str(status)

        wait_until(f"Caddy on port {port}", listening, timeout=CADDY_START, log=log, proc=proc)
        yield Caddy(f"http://127.0.0.1:{port}", port, proc, log, client)
    finally:
        client.close()
        stop_process(proc)


def same_answer(gateway: Gateway, caddy: Caddy, path: str, **kw: Any) -> httpx.Response:
    """GET ``path`` from the gateway and through Caddy: the same status, type and body
    (Caddy only adds its headers); the answer through Caddy."""
    direct = gateway.get(path, **kw)
    proxied = caddy.client.get(path, **kw)
    assert proxied.status_code == direct.status_code, f"{path}: {proxied.status_code}"
    assert proxied.headers.get("content-type") == direct.headers.get("content-type"), path
    assert proxied.content == direct.content, path
    # The gateway's own security headers pass unchanged; Caddy's are added.
    for name in ("content-security-policy", "x-frame-options", "referrer-policy"):
        assert proxied.headers.get(name) == direct.headers.get(name), f"{path}: {name}"
    assert proxied.headers["x-content-type-options"] == "nosniff", path
    assert proxied.headers["strict-transport-security"].startswith("max-age="), path
    assert "server" not in proxied.headers, path
    return proxied


def app_routes() -> list[tuple[str, str]]:
    """Every (method, path template) of the application, as the gateway builds it with
    the default settings (the test gateway's: checkout, dashboard and metrics on)."""
    app = fake_app(Settings(), fake_gateway())
    found = {
        (method, str(route.path))
        for route in app.routes
        for method in sorted(getattr(route, "methods", None) or ["GET"])
        if hasattr(route, "path") and method != "HEAD"
    }
    return sorted(found)


def concrete(template: str) -> str:
    """A path of ``template`` (each ``{parameter}`` filled in with a word)."""
    return re.sub(r"\{[^}]+\}", "x", template)


def is_public(template: str) -> bool:
    """Is this route one the Caddyfile must publish?"""
    return template in PUBLIC_ROUTES or template.startswith(GREENFIELD_PREFIX)


def requests_seen(gateway: Gateway) -> float:
    """How many requests the gateway has answered, by its own counter (every route and
    ``(unmatched)``), the scrapes of ``/metrics`` left out."""
    answer = gateway.get("/metrics", headers=AUTH)
    assert answer.status_code == 200, answer.text
    total = 0.0
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            if sample.name == "xmrgate_http_requests_total" and (
                sample.labels.get("route") != "/metrics"
            ):
                total += sample.value
    return total


def receive(gateway: Gateway, amount: int, description: str) -> str:
    """A new payment request (the operator's key); its address."""
    made = gateway.post(
        "/receive", json={"amount": amount, "description": description}, headers=AUTH
    )
    assert made.status_code == 200, made.text
    address: str = made.json()["address"]
    return address


def test_the_shipped_caddyfile_is_as_caddy_fmt_writes_it(caddy: Caddy) -> None:
    """Caddy warns at every start about a file it would format otherwise."""
    done = subprocess.run(
        [caddy_binary(), "fmt", str(CADDYFILE)], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == CADDYFILE.read_text(), "run: caddy fmt --overwrite deploy/Caddyfile"


def test_every_private_path_is_caddys_404_and_never_reaches_the_gateway(
    gateway: Gateway, caddy: Caddy
) -> None:
    """Each route outside the public list (found in the application itself, so a new
    route is judged too) and each look-alike path: Caddy's empty 404, and the gateway's
    request counter does not move."""
    private = [(m, concrete(t)) for m, t in app_routes() if not is_public(t)]
    # The API is there: /receive, /transfer, /stores, /metrics, /health, ...
    paths = {path for _, path in private}
    assert {"/receive", "/transfer", "/balance", "/stores", "/metrics", "/health"} <= paths
    before = requests_seen(gateway)
    for method, path in [*private, *(("GET", p) for p in LOOK_ALIKES)]:
        # With the operator's key: even a key does not open a private path through Caddy.
        answer = raw(caddy.port, method, path, AUTH)
        assert (answer.status, answer.body) == (404, b""), f"{method} {path}: {answer.status}"
    assert requests_seen(gateway) == before, "a private path reached the gateway"
    # Directly, the gateway answers them (without a key: 401; /health is public there).
    assert gateway.get("/receive").status_code == 401
    assert gateway.get("/health").status_code == 200


def test_every_public_route_reaches_the_gateway(gateway: Gateway, caddy: Caddy) -> None:
    """Each public route, with a made-up parameter and no key, is answered through Caddy
    exactly as the gateway answers it (a 404 page, a 401, a 400 page): it got there."""
    routes = app_routes()
    # The list above names routes the application has (none renamed away from it).
    assert {template for _, template in routes} >= PUBLIC_ROUTES
    public = [(m, concrete(t)) for m, t in routes if is_public(t)]
    before = requests_seen(gateway)
    for method, path in public:
        direct = raw(gateway.port, method, path)
        proxied = raw(caddy.port, method, path)
        assert proxied.status == direct.status, f"{method} {path}: {proxied.status}"
        assert proxied.body == direct.body, f"{method} {path}"
    # Each was answered by the gateway twice: directly and through Caddy. (The counter
    # is written once an answer is sent: a moment after the client may have it.)
    gateway.wait_for(
        "the gateway to count every request",
        lambda: requests_seen(gateway),
        lambda seen: seen == before + 2 * len(public),
        timeout=5,
    )


def test_the_buyers_pages_through_caddy(gateway: Gateway, caddy: Caddy) -> None:
    """A payment request's checkout (page, status, QR code), a payment link's page and
    its "Pay" button (303 to a checkout that loads through Caddy)."""
    address = receive(gateway, 10**12, "Through Caddy")
    for suffix in ("", "/status.json", "/qr.svg"):
        assert same_answer(gateway, caddy, f"/pay/{address}{suffix}").status_code == 200

    made = gateway.post("/links", json={"title": "Caddy", "amount": 10**11}, headers=AUTH)
    assert made.status_code == 200, made.text
    slug = made.json()["slug"]
    page = same_answer(gateway, caddy, f"/l/{slug}")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    # The form posted from its page (Origin: Caddy's site): the gateway sees Caddy's
    # Host, so it knows the post for its own.
    paid = caddy.client.post(
        f"/l/{slug}", data={}, headers={"Origin": caddy.url}, follow_redirects=False
    )
    assert paid.status_code == 303, paid.text
    checkout = urlsplit(paid.headers["location"]).path
    assert checkout.startswith("/pay/")
    assert same_answer(gateway, caddy, checkout).status_code == 200


def test_greenfield_and_the_consent_page_through_caddy(gateway: Gateway, caddy: Caddy) -> None:
    """What a shop plugin does over Caddy: server/info, an invoice whose checkoutLink is
    Caddy's own address (the Host passed on) and leads to a checkout that loads; and
    the consent page behind the "connect" button, up to its store step."""
    plugin = {"Authorization": f"token {OPERATOR}", "Accept": "application/json"}
    info = same_answer(gateway, caddy, "/api/v1/server/info", headers=plugin)
    assert info.status_code == 200
    invoice = caddy.client.post(
        "/api/v1/stores/default/invoices",
        json={"amount": "0.01", "currency": "XMR", "metadata": {"orderId": "42"}},
        headers=plugin,
    )
    assert invoice.status_code == 200, invoice.text
    link = invoice.json()["checkoutLink"]
    assert link == f"{caddy.url}/i/{invoice.json()['id']}"
    to_checkout = caddy.client.get(link, follow_redirects=False)
    assert to_checkout.status_code == 303
    assert to_checkout.headers["location"].startswith("/pay/")
    assert same_answer(gateway, caddy, to_checkout.headers["location"]).status_code == 200

    authorize = f"/api-keys/authorize?{CONSENT_QUERY}"
    first = same_answer(gateway, caddy, authorize)
    assert first.status_code == 200 and 'name="operator_key"' in first.text
    # The operator's key typed in, posted from the page (Caddy's origin): the store step.
    step = caddy.client.post(
        authorize,
        data={"operator_key": OPERATOR, "step": "key"},
        headers={"Origin": caddy.url},
    )
    assert step.status_code == 200, step.text
    assert 'name="token"' in step.text


def test_the_pos_and_the_dashboard_through_caddy(gateway: Gateway, caddy: Caddy) -> None:
    """The POS and the dashboard pages with every file they load, and the POS's API
    with a key."""
    for path in ("/pos", "/admin"):
        page = same_answer(gateway, caddy, path)
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    files = [*(pos.STATIC_PREFIX + n for n in pos.STATIC_FILES)]
    files += [admin.STATIC_PREFIX + n for n in admin.STATIC_FILES]
    for path in files:
        assert same_answer(gateway, caddy, path).status_code == 200, path
    assert same_answer(gateway, caddy, "/pos/config", headers=AUTH).status_code == 200


def test_a_refund_claim_page_through_caddy(gateway: Gateway, caddy: Caddy, devnet: Devnet) -> None:
    """A real refund of a paid request: its claim page loads through Caddy as directly."""
    address = receive(gateway, 10**11, "Refunded through Caddy")
    devnet.pay(address, 10**11, mine_blocks=1)
    # A refund gives back what the request received in mined transfers only.
    gateway.wait_for(
        "the payment mined",
        lambda: gateway.get(f"/receive/{address}", headers=AUTH).json(),
        lambda s: any(t.get("confirmations", 0) >= 1 for t in s.get("transactions", [])),
        timeout=SYNC_WAIT,
    )
    made = gateway.post(f"/receive/{address}/refunds", json={}, headers=AUTH)
    assert made.status_code == 200, made.text
    claim = urlsplit(made.json()["claim_url"]).path
    assert claim.startswith("/refund/")
    page = same_answer(gateway, caddy, claim)
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]


def post_raw(port: int, path: str, body: bytes, headers: dict[str, str]) -> Answer | OSError:
    """POST ``body``; the answer, or the error of a connection the server cut."""
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            conn.request("POST", path, body=body, headers=headers)
            found = conn.getresponse()
            return Answer(found.status, found.headers, found.read())
        finally:
            conn.close()
    except OSError as exc:  # the body's rest refused: a reset or a broken pipe
        return exc


def test_bodies_over_the_limits_are_refused(gateway: Gateway, caddy: Caddy) -> None:
    """Over the gateway's 64 KiB: its own 413 (in Greenfield's shape here), through Caddy
    as directly; far over Caddy's ceiling: refused too, whoever speaks first."""
    path = "/api/v1/stores/default/invoices"
    plugin = {"Authorization": f"token {OPERATOR}", "Content-Type": "application/json"}
    body = b'{"amount": "0.01", "currency": "XMR", "metadata": {"x": "%s"}}' % (b"a" * 70_000)
    direct = post_raw(gateway.port, path, body, plugin)
    proxied = post_raw(caddy.port, path, body, plugin)
    assert isinstance(direct, Answer) and isinstance(proxied, Answer)
    assert (proxied.status, proxied.body) == (direct.status, direct.body)
    assert direct.status == 413
    huge = post_raw(caddy.port, path, b"a" * 5_000_000, plugin)
    assert isinstance(huge, OSError) or huge.status in (413, 502), huge
