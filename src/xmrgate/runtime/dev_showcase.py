"""What ``xmrgate dev`` makes for a newcomer to open: every page, ready to try.

Once the playground's gateway is healthy, :func:`make_showcase` makes, through the API
as any client would:

* a key of scope ``pos`` for the point-of-sale screen (a key of the default store: the
  playground runs without configured keys, and the screen always asks for one), given
  to the screen in its URL (``/pos#key=KEY``, read by ``web/pos/static/pos_key.js``);
* a payment link (``POST /links``), whose public page is ``/l/<slug>``;
* a request priced in fiat (12.50 EUR), whose checkout is ``/pay/<address>``.

Fiat prices come from the fixed playground rate (``domain/playground_rate.py``), so they
work offline; :data:`PLAYGROUND_RATE_SETTINGS` configures it and the banner says it is
not a market price. :func:`showcase_lines` is the banner's part about all this.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx

from xmrgate.domain.money import piconero_to_xmr
from xmrgate.domain.playground_rate import (
    PLAYGROUND_RATE_NOTE,
    PLAYGROUND_RATE_SOURCE,
    PLAYGROUND_RATES,
    playground_rate_text,
)
from xmrgate.domain.stores import DEFAULT_STORE

#: The playground's ``--rate-*`` settings: the fixed rate only, in its currencies.
PLAYGROUND_RATE_SETTINGS: dict[str, Any] = {
    "rate_sources": PLAYGROUND_RATE_SOURCE,
    "rate_currencies": ",".join(PLAYGROUND_RATES),
}
#: The fiat-priced sample request.
FIAT_PRICE = {"amount": "12.50", "currency": "EUR"}
#: The sample payment link (a fixed amount, 0.05 XMR).
LINK = {
    "slug": "coffee",
    "title": "A coffee",
    "description": "Made by xmrgate dev: Pay makes a payment request and opens its checkout.",
    "amount": 50_000_000_000,
}
#: The rate book's first answers are fetched in the background at start-up, so a fiat
#: price may meet a 503 for a moment after /health first says 200.
RATE_WAIT = 15.0


class ShowcaseError(Exception):
    """The gateway refused (or did not answer) a call the showcase needed."""


class _NoRateYet(ShowcaseError):
    """503: the rate book has no answer yet (it fetches in the background)."""


@dataclass(frozen=True, slots=True)
class Showcase:
    """The URLs the banner prints, and what they show."""

    dashboard: str
    pos: str
    link: str
    link_title: str
    link_xmr: str
    fiat_checkout: str
    fiat_price: str
    fiat_xmr: str


def make_showcase(client: httpx.Client, url: str) -> Showcase:
    """Make the POS key, the payment link and the fiat-priced request on the gateway at
    ``url``; raises :class:`ShowcaseError` saying which call failed and its answer."""
    key = _call(
        client,
        "POST",
        f"{url}/stores/{DEFAULT_STORE}/keys",
        {"scopes": ["pos"]},
        "the point of sale's key",
    )
    link = _call(client, "POST", f"{url}/links", LINK, "the sample payment link")
    deadline = time.monotonic() + RATE_WAIT
    while True:
        try:
            fiat = _call(
                client,
                "POST",
                f"{url}/receive",
                {"price": FIAT_PRICE, "description": "Playground order priced in EUR"},
                "the fiat-priced sample request",
            )
            break
        except _NoRateYet:
            if time.monotonic() >= deadline:
                raise ShowcaseError(
                    f"no fixed playground rate within {RATE_WAIT:g} s (503 from POST /receive)"
                ) from None
            time.sleep(0.2)
    try:
        return Showcase(
            dashboard=f"{url}/admin",
            pos=f"{url}/pos#key={key['key']}",
            link=str(link["url"]),
            link_title=str(link["title"]),
            link_xmr=piconero_to_xmr(int(link["amount"])),
            fiat_checkout=f"{url}/pay/{fiat['address']}",
            fiat_price=f"{FIAT_PRICE['amount']} {FIAT_PRICE['currency']}",
            fiat_xmr=piconero_to_xmr(int(fiat["amount"])),
        )
    except (KeyError, TypeError, ValueError) as exc:
        # An answer without the field the banner needs (a gateway of another version):
        # the pages are extras, the playground goes on without them.
        raise ShowcaseError(f"an answer lacked what the banner shows: {exc!r}") from exc


def _call(
    client: httpx.Client, method: str, target: str, body: dict[str, Any], what: str
) -> dict[str, Any]:
    """The JSON answer of one API call, or :class:`ShowcaseError` naming ``what``."""
    try:
        answer = client.request(method, target, json=body)
    except httpx.HTTPError as exc:
        raise ShowcaseError(f"{what}: {method} {target}: no answer ({exc!r})") from exc
    if answer.status_code == 503:
        raise _NoRateYet(f"{what}: 503 {answer.text.strip()[:300]}")
    if answer.status_code != 200:
        raise ShowcaseError(f"{what}: {method} {target}: {answer.status_code} {answer.text[:300]}")
    found: dict[str, Any] = answer.json()
    return found


def showcase_lines(showcase: Showcase | None, problem: str | None, url: str) -> list[str]:
    """The banner's part about the pages: what to open, the keys, the fixed rate.

    ``problem`` (with ``showcase`` None) says why the pages could not be prepared; the
    playground still runs, so the banner says it and goes on.
    """
    host = url.removeprefix("http://")
    lines = ["Open in a browser:"]
    if showcase is None:
        lines.append(f"  (the sample pages could not be made: {problem})")
        lines.append(f"  dashboard      {url}/admin")
    else:
        lines += [
            f"  dashboard      {showcase.dashboard}",
            f"  point of sale  {showcase.pos}",
            "                 (the key after #key= was made for it: scope pos, sales only)",
            f"  payment link   {showcase.link}",
            f'                 ("{showcase.link_title}", {showcase.link_xmr} XMR; '
            "Pay opens its checkout)",
            f"  fiat checkout  {showcase.fiat_checkout}",
            f"                 ({showcase.fiat_price} = {showcase.fiat_xmr} XMR)",
        ]
    lines += [
        f"No API keys: the API and the dashboard are open to whoever reaches {host}",
        "(a production gateway takes --api-key; docs/pos.md, docs/stores.md).",
        "",
        f"Fiat prices use a {PLAYGROUND_RATE_NOTE.upper()}:",
        f"  {playground_rate_text()}, offline (rate source {PLAYGROUND_RATE_SOURCE},",
        "  only in xmrgate dev: xmrgate serve refuses it; docs/pricing.md).",
    ]
    return lines
