"""What ``pip install .`` installs is what the tests run: the built wheel holds every file
of the source tree, and the gateway started from it answers every page.

Every other test imports the source tree, so a template left out of the package (the
consent page's once: a 500 on a merchant's server) goes unseen. Here, once per module:

- the tree (``pyproject.toml``, ``README.md``, ``src/xmrgate``, plus a stray bytecode
  cache) is copied aside and built into a wheel by the build backend's PEP 517 hook,
  the venv's own setuptools (nothing fetched, nothing written into the checkout);
- the wheel is installed with ``pip install --target`` into a folder of its own, and
  every ``xmrgate`` process below runs from there (``PYTHONPATH``, ahead of the venv's
  editable install of the tree; each process prints which ``xmrgate`` it imported);
- the installed package migrates a new SQLite database (``xmrgate migrate``), the shop's
  rows go in (``testsupport/shop_rows.py``), and ``xmrgate serve`` starts without a
  wallet: the pages read only the database.

Then the installed files are compared with the tree's, and every page, template and
static file is fetched over HTTP. A new template or static folder must be added to the
tables below: the tests fail until it is.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest

from testsupport.ports import holds_listener
from testsupport.processes import stop_process, wait_until
from testsupport.shop_rows import ADDRESS, INVOICE, LINK_SLUG, REFUND_TOKEN, SHOP, seed_shop
from xmrgate.devnet.processes import free_port

ROOT = Path(__file__).resolve().parents[2]
TREE = ROOT / "src" / "xmrgate"
OPERATOR = "operator-key-0123456789"
NO_WALLET = "http://127.0.0.1:9/json_rpc"
# Every process says which package it runs, then runs the command line as ``xmrgate`` would.
LAUNCH = (
    "import sys, xmrgate; print('xmrgate package:', xmrgate.__file__, flush=True); "
    "from xmrgate.runtime.cli import main; main(sys.argv[1:])"
)
CONSENT = "/api-keys/authorize?" + urlencode(
    [
        ("permissions", "btcpay.store.cancreateinvoice"),
        ("applicationName", "WooCommerce"),
        ("redirect", "https://shop.example/?btcpay-settings-callback"),
    ]
)
KEY = {"Authorization": f"Bearer {OPERATOR}"}

# Each page: (path, its status, whether it needs the operator's key).
PAGES: dict[str, tuple[str, int, bool]] = {
    "checkout": (f"/pay/{ADDRESS}", 200, False),
    "checkout status": (f"/pay/{ADDRESS}/status.json", 200, False),
    "checkout QR code": (f"/pay/{ADDRESS}/qr.svg", 200, False),
    "unknown checkout": ("/pay/no-such-address", 404, False),
    "invoice link": (f"/i/{INVOICE}", 303, False),
    "invoice by query": (f"/invoice?id={INVOICE}", 303, False),
    "unknown invoice": ("/i/no-such-invoice", 404, False),
    "payment link": (f"/l/{LINK_SLUG}", 200, False),
    "unknown payment link": ("/l/no-such-link", 404, False),
    "refund claim": (f"/refund/{REFUND_TOKEN}", 200, False),
    "unknown refund": ("/refund/no-such-token", 404, False),
    "consent": (CONSENT, 200, False),
    "dashboard": ("/admin", 200, False),
    "point of sale": ("/pos", 200, False),
    "API reference": ("/docs", 200, True),
    "OpenAPI": ("/openapi.json", 200, True),
}
# Each template (under src/xmrgate) and a page it is rendered on ("consent approval": the
# consent page's last step, which posts the new key to the plugin).
TEMPLATES = {
    "web/admin/templates/index.html": "dashboard",
    "web/checkout/templates/page.html": "checkout",
    "web/checkout/templates/not_found.html": "unknown checkout",
    "web/consent_page/templates/consent.html": "consent",
    "web/consent_page/templates/post.html": "consent approval",
    "web/link_page/templates/link.html": "payment link",
    "web/pos/templates/index.html": "point of sale",
    "web/public_page_templates/page.html": "refund claim",
    "web/public_page_templates/message.html": "unknown payment link",
    "web/refund_page/templates/claim.html": "refund claim",
}
# Each static folder and where its files are served (None: inlined in the checkout page).
STATIC = {
    "web/admin/static": "/admin/static/",
    "web/pos/static": "/pos/static/",
    "web/checkout/static": None,
}


def tree_files(top: Path) -> set[str]:
    """The package's files under ``top``, relative to it, without bytecode caches."""
    return {
        p.relative_to(top).as_posix()
        for p in top.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo")
    }


def _run(*command: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, f"{command} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def build_wheel(work: Path) -> Path:
    """The wheel of a copy of the tree, as ``pip install .`` builds it (the venv's backend)."""
    source = work / "source"
    (source / "src").mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(TREE, source / "src" / "xmrgate", ignore=shutil.ignore_patterns("__pycache__"))
    # A checkout that ran anything has bytecode caches: they must not ship.
    stray = source / "src" / "xmrgate" / "web" / "__pycache__"
    stray.mkdir()
    (stray / "app.cpython-311.pyc").write_bytes(b"not shipped")
    wheels = work / "wheels"
    # The PEP 517 hook ``pip install .`` calls, here with the venv's setuptools (the
    # version pyproject.toml's test extra pins): what ``pip wheel --no-build-isolation``
    # does, without its second pass for the metadata (half the time).
    build = f"from setuptools import build_meta; build_meta.build_wheel({str(wheels)!r})"
    _run(sys.executable, "-c", build, cwd=source)
    [wheel] = wheels.glob("xmrgate-*.whl")
    return wheel


@dataclass
class Installed:
    """The package installed from its wheel, and the gateway served from it."""

    wheel: Path
    target: Path
    log: Path
    #: A client of the served gateway (its base URL set; redirects not followed).
    client: httpx.Client

    def get(self, path: str, *, key: bool = False) -> httpx.Response:
        """GET ``path`` of the served gateway."""
        return self.client.get(path, headers=KEY if key else None)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    work = tmp_path_factory.mktemp("installed-package")
    wheel = build_wheel(work)
    target = work / "site"
    # Compiled as pip installs by default: each process below would compile it again.
    options = ("-q", "--no-deps", "--no-index", "--target", str(target))
    _run(sys.executable, "-m", "pip", "install", *options, str(wheel), cwd=work)
    env = {**os.environ, "PYTHONPATH": str(target)}
    database = work / "gateway.sqlite3"
    migrate = (sys.executable, "-c", LAUNCH, "migrate", "--sqlite", str(database))
    migrated = _run(*migrate, cwd=work, env=env)
    assert f"xmrgate package: {target}" in migrated, migrated
    seed_shop(f"sqlite+aiosqlite:///{database}")
    port = free_port()
    log = work / "gateway.log"
    serve = [
        *(sys.executable, "-c", LAUNCH, "serve", "--sqlite", str(database)),
        *("--bind", f"127.0.0.1:{port}", "--api-key", OPERATOR, "--rpc-address", NO_WALLET),
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(serve, cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"

    def answers() -> tuple[bool, str]:
        if not holds_listener(proc.pid, port):
            return False, "not listening yet"
        try:
            return httpx.get(url + "/admin", timeout=2).status_code == 200, "answered"
        except httpx.HTTPError as exc:
            return False, repr(exc)

    try:
        wait_until("the installed gateway to serve", answers, timeout=60, log=log, proc=proc)
        with httpx.Client(base_url=url, timeout=30) as client:
            yield Installed(wheel=wheel, target=target, log=log, client=client)
    finally:
        stop_process(proc)


def test_it_serves_the_installed_package(installed: Installed) -> None:
    started = installed.log.read_text(errors="replace")
    found = re.search(r"^xmrgate package: (.+)$", started, flags=re.M)
    assert found is not None, started
    assert Path(found.group(1)).is_relative_to(installed.target), found.group(1)


def test_the_installed_package_holds_every_file_of_the_tree(installed: Installed) -> None:
    shipped = tree_files(installed.target / "xmrgate")
    assert shipped == tree_files(TREE), {
        "missing": sorted(tree_files(TREE) - shipped),
        "extra": sorted(shipped - tree_files(TREE)),
    }
    # Named here too, so a failure says which kind went missing.
    for kind in ("templates/", "static/", "migrations/versions/", "py.typed", "devnet/"):
        assert any(kind in name for name in shipped), kind
    names = [n for n in shipped if n.endswith((".c", ".mako", ".html", ".css", ".js"))]
    assert names and all((installed.target / "xmrgate" / n).is_file() for n in names)


def test_the_wheel_ships_no_bytecode_cache(installed: Installed) -> None:
    listing = _run(
        sys.executable, "-m", "zipfile", "-l", str(installed.wheel), cwd=installed.target
    )
    assert "__pycache__" not in listing and ".pyc" not in listing, listing


@pytest.mark.parametrize("name", sorted(PAGES))
def test_every_page_answers(installed: Installed, name: str) -> None:
    path, status, key = PAGES[name]
    answer = installed.get(path, key=key)
    assert answer.status_code == status, (name, answer.status_code, answer.text[:500])
    if status == 303:
        assert answer.headers["location"] == f"/pay/{ADDRESS}"


def test_the_consent_page_approves_a_key(installed: Installed) -> None:
    """Its three steps: the key asked, the store chosen, the page posting the new key."""
    form = {"operator_key": OPERATOR}
    chosen = installed.client.post(CONSENT, data={**form, "step": "key"})
    assert chosen.status_code == 200, chosen.text
    token = re.search(r'<input type="hidden" name="token" value="([^"]*)">', chosen.text)
    assert token is not None, chosen.text
    data = {**form, "step": "approve", "token": unescape(token.group(1)), "store": SHOP}
    approved = installed.client.post(CONSENT, data=data)
    assert approved.status_code == 200, approved.text
    assert 'id="post-redirect"' in approved.text


def test_every_template_is_on_a_page() -> None:
    templates = {
        name
        for name in tree_files(TREE)
        if Path(name).parent.name.endswith("templates") and name.endswith(".html")
    }
    assert templates == set(TEMPLATES), "a template without a page here (or gone):\n" + str(
        sorted(templates ^ set(TEMPLATES))
    )
    assert set(TEMPLATES.values()) <= {*PAGES, "consent approval"}


def test_every_static_file_is_served(installed: Installed) -> None:
    folders = {str(Path(n).parent) for n in tree_files(TREE) if "/static/" in f"/{n}"}
    assert folders == set(STATIC), f"a static folder without a URL here: {folders ^ set(STATIC)}"
    checkout = installed.get(f"/pay/{ADDRESS}").text
    for folder, prefix in STATIC.items():
        for file in sorted((TREE / folder).iterdir()):
            text = file.read_text(encoding="utf-8").replace("\r\n", "\n")
            if prefix is None:
                assert text in checkout, f"{folder}/{file.name} is not in the checkout page"
                continue
            answer = installed.get(prefix + file.name)
            assert answer.status_code == 200, (file.name, answer.status_code)
            assert answer.text.replace("\r\n", "\n") == text, file.name
