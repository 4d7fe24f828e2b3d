"""The fixed playground rate: ``xmrgate dev``'s offline fiat prices, never in production.

``xmrgate serve`` refuses it at start (the command line run in a child process, as in
test_cli_refusals.py); the source answers its constants through the real rate book, so
``GET /rates`` and every quote name it; the checkout says it is not a market price; the
banner lists the pages and says the same.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from xmrgate.adapters.playground_rate import PlaygroundRateSource
from xmrgate.adapters.rate_sources import build_sources
from xmrgate.config import Settings
from xmrgate.core.rates import RateBook, RateSourceMiss
from xmrgate.domain.fiat import Quote
from xmrgate.domain.playground_rate import PLAYGROUND_RATE_NOTE, PLAYGROUND_RATE_SOURCE
from xmrgate.runtime.cli import load_settings, refuse_playground_rate
from xmrgate.runtime.dev_showcase import PLAYGROUND_RATE_SETTINGS, Showcase, showcase_lines
from xmrgate.web.checkout.page import price_html


def test_serve_refuses_the_playground_rate(tmp_path: Path) -> None:
    """The real command line: a clear error at start, no traceback, nothing started (not
    even the database)."""
    database = tmp_path / "x.sqlite3"
    command = [sys.executable, "-m", "xmrgate", "serve", "--sqlite", str(database)]
    result = subprocess.run(
        [*command, "--rate-sources", PLAYGROUND_RATE_SOURCE],
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode != 0
    assert f"refusing to serve with the rate source '{PLAYGROUND_RATE_SOURCE}'" in result.stderr
    assert PLAYGROUND_RATE_NOTE in result.stderr and "xmrgate dev" in result.stderr
    assert "Traceback" not in result.stderr
    assert not database.exists()


def test_the_environment_beside_a_market_source_is_refused_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RATE_SOURCES", f"kraken,{PLAYGROUND_RATE_SOURCE}")
    with pytest.raises(SystemExit, match="refusing to serve with the rate source"):
        refuse_playground_rate(load_settings([]))


def test_market_sources_are_not_refused() -> None:
    refuse_playground_rate(Settings())  # the defaults: coingecko, kraken, cryptocompare
    refuse_playground_rate(Settings(rate_sources="kraken"))
    assert PLAYGROUND_RATE_SOURCE not in Settings().rate_source_names
    with pytest.raises(SystemExit):
        refuse_playground_rate(Settings(**PLAYGROUND_RATE_SETTINGS))


def test_it_is_built_by_name_only() -> None:
    """Named in --rate-sources it is the in-process source; it has no URL to replace."""

    async def build() -> None:
        async with httpx.AsyncClient() as client:
            (source,) = build_sources([PLAYGROUND_RATE_SOURCE], {}, client=client)
            assert isinstance(source, PlaygroundRateSource)
            with pytest.raises(ValueError, match="unknown rate source"):
                build_sources(["kraken"], {PLAYGROUND_RATE_SOURCE: "http://x"}, client=client)

    asyncio.run(build())
    with pytest.raises(ValueError, match="unknown rate source"):
        Settings(rate_source_url=f"{PLAYGROUND_RATE_SOURCE}=http://127.0.0.1:1")


def test_the_book_quotes_it_under_its_name() -> None:
    """Through the real rate book: the rate, the source named in GET /rates' snapshot and
    in a quote's sources; a currency it has no rate for is a miss, never a price."""
    settings = Settings(**PLAYGROUND_RATE_SETTINGS)
    book = RateBook(
        [PlaygroundRateSource()],
        (*settings.rate_currency_list, "JPY"),
        refresh=60,
        max_age=300,
        max_spread=0.05,
        min_sources=1,
    )
    asyncio.run(book.refresh_once())
    snapshot: dict[str, Any] = book.snapshot("EUR")
    assert snapshot["rate"] == "200"
    assert [s["name"] for s in snapshot["sources"]] == [PLAYGROUND_RATE_SOURCE]
    assert book.snapshot("USD")["rate"] == "250"
    assert book.snapshot("JPY")["rate"] is None
    with pytest.raises(RateSourceMiss, match="no JPY"):
        asyncio.run(PlaygroundRateSource().fetch("JPY"))
    assert asyncio.run(PlaygroundRateSource().fetch("eur")) == Decimal("200")


def quote(*sources: str) -> Quote:
    at = datetime(2026, 11, 26, 10, 0, tzinfo=UTC)
    return Quote(amount="12.50", currency="EUR", rate="200", sources=sources, rate_at=at)


def test_the_checkout_says_it_is_not_a_market_price() -> None:
    html = price_html(quote(PLAYGROUND_RATE_SOURCE), None)
    assert 'id="price-source"' in html and f"A {PLAYGROUND_RATE_NOTE}" in html
    assert "12.50 EUR" in html and "Rate 1 XMR = " in html
    # A market rate's price renders as before: no such line.
    assert "price-source" not in price_html(quote("kraken", "coingecko"), None)


def test_the_banner_lists_the_pages_and_names_the_rate() -> None:
    url = "http://127.0.0.1:5000"
    shown = Showcase(
        dashboard=f"{url}/admin",
        pos=f"{url}/pos#key=xgs_k",
        link=f"{url}/l/coffee",
        link_title="A coffee",
        link_xmr="0.05",
        fiat_checkout=f"{url}/pay/8abc",
        fiat_price="12.50 EUR",
        fiat_xmr="0.0625",
    )
    text = "\n".join(showcase_lines(shown, None, url))
    for wanted in (f"{url}/admin", f"{url}/pos#key=xgs_k", f"{url}/l/coffee", f"{url}/pay/8abc"):
        assert wanted in text
    assert "12.50 EUR = 0.0625 XMR" in text and "No API keys" in text
    assert PLAYGROUND_RATE_NOTE.upper() in text and "1 XMR = 200 EUR = 250 USD" in text
    # The sample `pay` command is found by " pay " in the banner: nothing before it says so.
    assert " pay " not in text
    failed = "\n".join(showcase_lines(None, "the sample payment link: 500", url))
    assert "could not be made: the sample payment link: 500" in failed
    assert f"{url}/admin" in failed and PLAYGROUND_RATE_NOTE.upper() in failed
