"""The dashboard's shell at /admin, on the real app (in-process ASGI, SQLite, no wallet).

The shell must be strict (CSP with nothing inline and nothing from another host),
small (< 150 KB with everything it loads), public without holding data, and gone
with ``--no-admin``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from xmrgate.config import Settings
from xmrgate.runtime.app import build_app
from xmrgate.runtime.cli import load_settings
from xmrgate.runtime.container import Services
from xmrgate.web.admin import SHELL_PATH, SHELL_PATHS, STATIC_FILES, STATIC_PREFIX

READ_KEY = "reader-key-0123456789"
MAX_PAGE_BYTES = 150 * 1024
ASSETS = [STATIC_PREFIX + name for name in STATIC_FILES]
# The SVG namespace is a name, not a URL anything is fetched from.
NAMESPACES = {"http://www.w3.org/2000/svg"}
URL = re.compile(r"""(?:https?:)?//[A-Za-z0-9.-]+\.[A-Za-z]{2,}[^\s"'<>)]*""")


def _client(tmp_path: Path, **options: object) -> TestClient:
    settings = Settings(sqlite=str(tmp_path / "x.sqlite3"), **options)  # type: ignore[arg-type]
    return TestClient(build_app(settings, Services.build(settings)))


@pytest.fixture
def open_client(tmp_path: Path) -> TestClient:
    return _client(tmp_path)


@pytest.fixture
def keyed(tmp_path: Path) -> TestClient:
    return _client(tmp_path, api_keys=f"{READ_KEY}:read")


def test_shell_has_a_strict_content_security_policy(open_client: TestClient) -> None:
    page = open_client.get(SHELL_PATH)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    csp = dict(d.strip().split(" ", 1) for d in page.headers["content-security-policy"].split(";"))
    assert csp["default-src"] == "'none'"
    for directive in ("script-src", "style-src", "connect-src"):
        assert csp[directive] == "'self'", directive
    assert csp["frame-ancestors"] == "'none'"
    assert csp["base-uri"] == "'none'"
    assert "unsafe" not in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["referrer-policy"] == "no-referrer"
    assert page.headers["x-content-type-options"] == "nosniff"
    # Nothing inline that the CSP would have to allow: no <style>, no inline script or handler.
    assert "<style" not in page.text
    assert re.search(r"<script(?![^>]*\bsrc=)", page.text) is None
    assert re.search(r"\son[a-z]+=", page.text) is None
    assert re.search(r"\sstyle=", page.text) is None


def test_page_and_everything_it_loads_stay_under_150_kb(open_client: TestClient) -> None:
    page = open_client.get(SHELL_PATH)
    loaded = re.findall(r'(?:src|href)="(admin/static/[^"]+)"', page.text)
    assert sorted("/" + p for p in loaded) == sorted(ASSETS)
    sizes = {path: len(open_client.get(path).content) for path in ASSETS}
    total = len(page.content) + sum(sizes.values())
    assert total < MAX_PAGE_BYTES, f"{total} bytes: {sizes}"


@pytest.mark.parametrize("path", [SHELL_PATH, *ASSETS])
def test_no_asset_names_another_host(open_client: TestClient, path: str) -> None:
    r = open_client.get(path)
    assert r.status_code == 200
    assert r.headers["x-content-type-options"] == "nosniff"
    found = set(URL.findall(r.text)) - NAMESPACES
    assert found == set(), f"{path} refers to other hosts: {found}"
    assert "@import" not in r.text and "url(" not in r.text


def test_static_files_have_their_media_types_and_revalidate(open_client: TestClient) -> None:
    js = open_client.get(STATIC_PREFIX + "admin.js")
    assert js.headers["content-type"].startswith("text/javascript")
    assert (
        open_client.get(STATIC_PREFIX + "admin.css").headers["content-type"].startswith("text/css")
    )
    etag = {"If-None-Match": js.headers["etag"]}
    again = open_client.get(STATIC_PREFIX + "admin.js", headers=etag)
    assert again.status_code == 304 and again.content == b""
    assert open_client.get(STATIC_PREFIX + "nope.js").status_code == 404
    assert open_client.get(STATIC_PREFIX + "../routes.py").status_code == 404


def test_shell_is_public_and_only_the_shell(keyed: TestClient) -> None:
    """With API keys: the shell loads without one; data, and any other /admin path, need one."""
    for path in SHELL_PATHS:
        assert keyed.get(path).status_code == 200, path
    assert "x-moneropay-address" not in keyed.get(SHELL_PATH).headers
    for path in ("/status", "/received/daily", "/receive", "/payouts"):
        assert keyed.get(path).status_code == 401, path
    for path in ("/admin/", "/admin/status", STATIC_PREFIX + "nope.js", "/adminx"):
        assert keyed.get(path).status_code == 401, path


def test_no_admin_turns_it_off(tmp_path: Path) -> None:
    client = _client(tmp_path, admin=False)
    for path in SHELL_PATHS:
        r = client.get(path)
        assert r.status_code == 404, path
        assert r.json()["status"] == 404


def test_no_admin_flag_is_on_the_command_line() -> None:
    assert load_settings(["--no-admin"]).admin is False
    assert load_settings([]).admin is True


def test_daily_sums_refuse_bad_input_with_400(open_client: TestClient) -> None:
    for query in ("days=0", "days=367", "utc_offset=841", "utc_offset=-841", "days=x"):
        r = open_client.get("/received/daily?" + query)
        assert r.status_code == 400, query
        assert r.json()["status"] == 400
