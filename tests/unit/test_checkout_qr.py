"""The checkout QR code, as a browser draws it, decodes to exactly the payment URI.

``qr_svg``'s own output (the inline ``<svg>`` the page embeds) is put on a page
with the checkout's real stylesheet, drawn by headless Chromium at the page's size
(17rem, one device pixel per CSS pixel: the least sharp a phone shows it), and read
back with zbarimg, a real QR reader. Needs Debian's chromium and zbar-tools (``make
system-deps``); without them this fails rather than skips.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from importlib.resources import files
from pathlib import Path

import pytest

from testsupport.browser import chromium
from testsupport.page_shots import assert_fits, clear_emulation, emulate, settle, viewport_png
from xmrgate.web.checkout.qr import payment_uri, qr_svg

pytestmark = pytest.mark.browser

ADDRESS = (
    "8AEsrzFAKbdNZUEhQWLD2xNw9kSf7gYATeuDbMGbkFGzbDUmPrdyvpifk"
    "kh4sNAp3L5vN2Bd4AAXDcb1oA3xm8DPL72ZBja"
)
CASES = [
    (1_234_500_000_000, "Order #42"),
    (1, ""),
    (0, "tip jar"),
    (2**63 - 1, "</p><script>alert(1)</script> & ünïcødé €"),
    (10**12, "€" * 60),  # the longest URI: the description is cut to 100 bytes
]
URIS = [payment_uri(ADDRESS, amount, description) for amount, description in CASES]


def need(program: str, package: str) -> str:
    """The path of ``program``; fail (not skip) when it is missing."""
    path = shutil.which(program)
    if path is None:
        pytest.fail(
            f"{program} not found: install Debian's {package} (make system-deps); "
            "the QR code test must not be skipped"
        )
    return path


def run(cmd: list[str], what: str, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    """Run ``cmd`` in its own process group (ended as a whole if it hangs)."""
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"{what} did not finish in {timeout}s:\n{err.decode(errors='replace')[-2000:]}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def qr_page(svgs: list[str]) -> str:
    """The SVGs as the checkout page shows them: in a .qr-box, with checkout.css."""
    css = (files("xmrgate.web.checkout") / "static" / "checkout.css").read_text()
    boxes = "".join(f'<figure class="qr-box">{svg}</figure>' for svg in svgs)
    # One row of 17rem boxes (the page's .qr-box max-width), with quiet space between.
    layout = (
        f"body{{display:grid;grid-template-columns:repeat({len(svgs)},17rem);"
        "gap:3rem;margin:2rem;width:max-content}.qr-box{margin:0}"
    )
    return f'<!doctype html><meta charset="utf-8"><style>{css}{layout}</style><body>{boxes}</body>'


def screenshot(html: str, tmp: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A PNG of ``html`` drawn by this process's headless Chromium, one device pixel per
    CSS pixel, in a window of the page's size. (The shared one of ``testsupport/browser.py``:
    a Chromium started for this alone, ``chromium --screenshot``, took 2 s.)"""
    page = tmp / "qr.html"
    page.write_text(html, encoding="utf-8")
    size = (len(CASES) * (272 + 48) + 64, 400)  # 17rem + 3rem gap each, 2rem margins
    with chromium(tmp_path_factory, size) as driver:
        driver.get(page.as_uri())
        emulate(driver, size)  # one device pixel per CSS pixel, not a phone
        driver.execute_cdp_cmd("Emulation.setScrollbarsHidden", {"hidden": True})
        try:
            settle(driver)
            assert_fits(driver, "the QR codes", "window")
            return viewport_png(driver, tmp / "qr.png")
        finally:
            driver.execute_cdp_cmd("Emulation.setScrollbarsHidden", {"hidden": False})
            clear_emulation(driver)


def zbar(png: Path) -> list[str]:
    """Every QR code zbarimg reads in ``png``, one string each."""
    zbarimg = need("zbarimg", "zbar-tools")
    result = run([zbarimg, "--quiet", "--raw", "-Sdisable", "-Sqrcode.enable", str(png)], "zbarimg")
    # 0: found codes; 4: found none (an answer, not an error).
    if result.returncode not in (0, 4):
        pytest.fail(f"zbarimg failed ({result.returncode}): {result.stderr.decode()[-2000:]}")
    return result.stdout.decode("utf-8").splitlines()


@pytest.fixture(scope="module")
def decoded(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """What zbarimg reads from Chromium's drawing of every case's ``qr_svg`` (one page)."""
    tmp = tmp_path_factory.mktemp("qr")
    svgs = [qr_svg(uri, title="Payment QR code") for uri in URIS]
    return zbar(screenshot(qr_page(svgs), tmp, tmp_path_factory))


def test_every_code_is_read(decoded: list[str]) -> None:
    """One code per case, and nothing zbar read is other than a URI we rendered."""
    assert sorted(decoded) == sorted(URIS)


@pytest.mark.parametrize("uri", URIS, ids=[f"{a}-{len(d)}chars" for a, d in CASES])
def test_qr_decodes_to_payment_uri(uri: str, decoded: list[str]) -> None:
    """The code qr_svg draws carries the URI byte for byte."""
    assert uri in decoded, f"no QR code read back as {uri!r}; zbarimg read {decoded!r}"
