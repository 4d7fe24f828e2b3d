"""``xmrgate dev``: a new user starts it, runs the printed commands, and sees the payment;
opens the printed pages (dashboard, point of sale, payment link, fiat checkout) and sees
each one work, offline, at the fixed playground rate."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from testsupport.browser import chromium, css, displayed, shown, visible_text, wait_for
from testsupport.gateway import SYNC_WAIT
from testsupport.processes import wait_until
from xmrgate.devnet import free_port
from xmrgate.domain.playground_rate import PLAYGROUND_RATE_NOTE, PLAYGROUND_RATE_SOURCE

pytestmark = pytest.mark.integration


REPO = Path(__file__).resolve().parents[2]


def console_script() -> str:
    """The virtualenv's ``xmrgate``, relative to the repository, as ``make dev`` runs it
    (``.venv/bin/xmrgate``: not on PATH, so the banner must print it like that)."""
    return os.path.relpath(Path(sys.executable).with_name("xmrgate"), REPO)


def xmrgate(args: list[str]) -> list[str]:
    """``xmrgate ARGS`` started as ``make dev`` starts it (from the repository)."""
    assert args[0] == "xmrgate"
    return [console_script(), *args[1:]]


@dataclass
class Playground:
    """A running ``xmrgate dev`` started as ``make dev`` starts it, and its banner."""

    flags: list[str]
    workdir: Path
    port: int
    log_path: Path
    proc: subprocess.Popen[bytes]
    banner: str

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def state(self) -> dict[str, Any]:
        found: dict[str, Any] = json.loads((self.workdir / "state.json").read_text())
        return found


@pytest.fixture(scope="module", params=[[], ["--view-only"]], ids=["full", "view-only"])
def playground(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Playground]:
    """One playground per variant for every test of this module (a start takes half a
    minute); stopped with Ctrl-C at the end, which must stop every process it started."""
    flags: list[str] = request.param
    tmp_path = tmp_path_factory.mktemp("playground")
    workdir = tmp_path / "play"
    port = free_port()
    log_path = tmp_path / "dev.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            xmrgate(
                ["xmrgate", "dev", "--dir", str(workdir), "--bind", f"127.0.0.1:{port}", *flags]
            ),
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=REPO,
        )
    state: dict[str, Any] = {}
    try:
        wait_until(
            "`xmrgate dev` to print its banner (ending with the `mine 10` command)",
            lambda: ("mine 10" in (text := log_path.read_text()), text[-300:]),
            timeout=120,
            log=log_path,
            proc=proc,
            interval=0.5,
        )
        state = json.loads((workdir / "state.json").read_text())
        yield Playground(flags, workdir, port, log_path, proc, log_path.read_text())
    finally:
        proc.send_signal(signal.SIGINT)  # what Ctrl-C sends
        try:
            returncode = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            returncode = proc.wait()
    pids = state.get("pids") or {"monerod": None, "funder": None, "wallets": {}}  # no banner
    for pid in filter(None, [pids["monerod"], pids["funder"], *pids["wallets"].values()]):
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not (workdir / "state.json").exists()
    # Ctrl-C ends it quietly: no KeyboardInterrupt traceback after the clean-up.
    output = log_path.read_text()
    assert "Traceback" not in output and "KeyboardInterrupt" not in output, output[-3000:]
    assert output.rstrip().endswith("stopped."), output[-1000:]
    assert returncode == 0, f"Ctrl-C ended the playground with {returncode}: {output[-1000:]}"


def test_playground_pay_with_printed_commands(playground: Playground) -> None:
    """The banner's pay and mine commands turn the sample request complete; Ctrl-C stops all.

    With ``--view-only`` the gateway's wallet has no spend key: payments work the same,
    /health says so and POST /transfer is refused."""
    banner, url = playground.banner, playground.url
    pay = next(ln.strip() for ln in banner.splitlines() if " pay " in ln)
    mine = next(ln.strip() for ln in banner.splitlines() if ln.strip().endswith("mine 10"))
    checkout = re.search(r"checkout page: (\S+)", banner)
    assert checkout, banner
    address = shlex.split(pay)[-2]
    # Printed as it works from where `make dev` ran: run verbatim, no PATH lookup.
    assert shlex.split(pay)[0] == shlex.split(mine)[0] == console_script(), banner
    state = playground.state()

    subprocess.run(shlex.split(pay), check=True, timeout=120, cwd=REPO)
    with httpx.Client(timeout=10) as client:
        assert client.get(checkout.group(1)).status_code == 200
        if playground.flags:
            assert "VIEW-ONLY" in banner
            assert client.get(f"{url}/health").json()["wallet"] == "view-only"
            payout = {"destinations": [{"amount": 1, "address": state["funder_address"]}]}
            assert client.post(f"{url}/transfer", json=payout).status_code == 409
        subprocess.run(shlex.split(mine), check=True, timeout=120, cwd=REPO)

        def status() -> tuple[bool, dict[str, Any]]:
            body: dict[str, Any] = client.get(f"{url}/receive/{address}").json()
            return body["complete"], body

        body = wait_until(
            "the sample request to be complete after `pay` and `mine 10`",
            status,
            timeout=SYNC_WAIT,
            log=playground.log_path,
            proc=playground.proc,
            interval=0.3,
        )
    assert body["amount"] == {
        "expected": 1_500_000_000_000,
        "covered": {"total": 1_500_000_000_000, "unlocked": 1_500_000_000_000},
        "due": 0,
    }


def printed(banner: str, label: str) -> str:
    """The URL the banner prints after ``label`` at the start of a line."""
    found = re.search(rf"^\s+{label}\s+(http://\S+)$", banner, re.MULTILINE)
    assert found, f"no {label} URL in the banner:\n{banner}"
    return found.group(1)


@pytest.mark.browser
def test_the_printed_pages_open_in_chromium(
    playground: Playground, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Every page the banner prints opens in a browser as a newcomer would open it: the
    dashboard (open: no key), the POS (its key in the URL) at its keypad, the payment link
    with its title and Pay, the fiat checkout with its EUR price and the fixed rate named
    as such; GET /rates names the fixed source too, and the API needs no key."""
    # Both variants (a view-only wallet too): about 3 s each, and nothing is skipped.
    banner, url = playground.banner, playground.url
    assert "No API keys" in banner and PLAYGROUND_RATE_NOTE.upper() in banner
    pos = printed(banner, "point of sale")
    assert pos.startswith(f"{url}/pos#key=")
    with httpx.Client(timeout=10) as client:
        rates = client.get(f"{url}/rates", params={"currency": "EUR"}).json()
    assert rates["rate"] == "200"
    assert [s["name"] for s in rates["sources"]] == [PLAYGROUND_RATE_SOURCE]

    with chromium(tmp_path_factory, (1000, 900)) as browser:
        browser.get(printed(banner, "dashboard"))
        wait_for(
            browser,
            "the overview saying Healthy",
            lambda: visible_text(browser, "#health-status") == "Healthy",
        )
        assert css(browser, "#overview") and not css(browser, "#login")

        browser.get(pos)
        shown(browser, "#charge")
        assert displayed(browser, "#keypad-view") and not displayed(browser, "#login")
        # The key was taken out of the address bar; the screen offers the fiat currencies.
        assert browser.current_url == f"{url}/pos"
        currencies = [o.get_attribute("value") for o in css(browser, "#currency option")]
        assert currencies == ["XMR", "EUR", "USD"]

        browser.get(printed(banner, "payment link"))
        assert visible_text(browser, "#link-title") == "A coffee"
        assert visible_text(browser, "#pay") == "Pay"

        browser.get(printed(banner, "fiat checkout"))
        assert visible_text(browser, "#price-amount") == "12.50 EUR"
        assert visible_text(browser, "#amount") == "0.0625"
        assert PLAYGROUND_RATE_NOTE in visible_text(browser, "#price-source")
