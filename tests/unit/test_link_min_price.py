"""An open fiat link's minimum in its own currency: ``min_price``.

In process, on the apps of ``test_links_api`` (the ``/links`` API) and ``test_link_page``
(the public page ``/l/<slug>``), both over the real ``Links`` use case and the in-memory
link book:

- ``POST /links {"currency": "EUR", "min_price": "5"}`` keeps "5.00" (the currency's
  decimals written out) and answers it; a minimum without a currency, with
  ``min_amount`` too, with more decimals than the currency has, or on a fixed amount is
  400 and stores nothing; PATCH moves a link from one kind of minimum to the other.
- The page shows "At least 5.00 EUR." beside the EUR field (no XMR); "4.99" is the form
  again saying "at least 5.00 EUR", with the rates down too (no rate is needed to
  compare), and makes nothing; "5" makes a request priced 5.00 EUR.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.unit.test_link_page import Shop, assert_form, assert_safe, build_shop, checkout_address
from tests.unit.test_links_api import Api, build_api

XMR = 10**12


@pytest.fixture
def api(tmp_path: Path) -> Api:
    return build_api(tmp_path)


@pytest.fixture
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Shop]:
    monkeypatch.chdir(tmp_path)  # Settings' default database path: never the repository's
    built = build_shop()
    yield built
    built.client.close()


def refused(answer: Any, words: str) -> None:
    assert answer.status_code == 400, answer.text
    body = answer.json()
    assert body["status"] == 400 and words in body["message"], body
    assert "not permitted" not in body["message"]  # a known field's bad value


# ------------------------------------------------------------------ the API


def test_a_fiat_minimum_is_kept_in_its_currency(api: Api) -> None:
    made = api.create({"slug": "tips", "title": "Tips", "currency": "eur", "min_price": "5"})
    assert made.status_code == 200, made.text
    link = made.json()
    assert (link["currency"], link["min_price"], link["min_amount"]) == ("EUR", "5.00", None)
    assert link["expires_in"] == 900  # fiat: the rate lock
    got = api.client.get(f"/links/{link['id']}", headers=api.as_())
    assert got.json()["min_price"] == "5.00"
    plain = api.create({"title": "XMR tips", "min_amount": XMR // 100}).json()
    assert plain["min_price"] is None


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"min_price": "5.00"}, "give currency too"),
        ({"currency": "EUR", "min_price": "5.00", "min_amount": XMR}, "not both"),
        ({"currency": "EUR", "min_price": "5.001"}, "at most 2 decimals"),
        ({"currency": "EUR", "min_price": "0"}, "above zero"),
        ({"currency": "EUR", "min_price": "-5"}, "min_price"),
        ({"currency": "EUR", "min_price": 5}, "min_price"),
        ({"amount": XMR, "min_price": "5.00"}, "for an open amount"),
    ],
)
def test_a_bad_fiat_minimum_is_400(api: Api, body: dict[str, Any], words: str) -> None:
    refused(api.create({"title": "Tips", **body}), words)
    assert not api.book.links


def test_patch_moves_between_the_two_kinds_of_minimum(api: Api) -> None:
    link = api.create({"title": "Tips", "min_amount": XMR // 100}).json()
    path = f"/links/{link['id']}"
    to_fiat = api.client.patch(
        path, json={"currency": "EUR", "min_price": "2.5", "expires_in": 600}, headers=api.as_()
    )
    assert to_fiat.status_code == 200, to_fiat.text
    assert (to_fiat.json()["min_price"], to_fiat.json()["min_amount"]) == ("2.50", None)
    back = api.client.patch(
        path, json={"currency": None, "min_amount": XMR // 10}, headers=api.as_()
    )
    assert back.status_code == 200, back.text
    assert (back.json()["min_price"], back.json()["min_amount"]) == (None, XMR // 10)


# ------------------------------------------------------------------ the page


def test_the_page_shows_the_minimum_in_the_links_currency(shop: Shop) -> None:
    shop.link("tips-eur", title="Tips", currency="EUR", min_price="5", expires_in=600)
    page = shop.client.get("/l/tips-eur")
    assert page.status_code == 200
    assert_safe(page)
    html = page.text
    assert "Amount in EUR</label>" in html
    assert '<p class="min" id="amount-min">At least 5.00 EUR.</p>' in html
    assert "XMR." not in html  # no minimum in XMR under a field in EUR


@pytest.mark.parametrize("rates_down", [False, True])
def test_an_amount_below_the_fiat_minimum_is_refused_in_that_currency(
    shop: Shop, rates_down: bool
) -> None:
    link = shop.link("tips-eur", title="Tips", currency="EUR", min_price="5", expires_in=600)
    shop.rates.down = rates_down  # compared in EUR: no rate is asked
    answer = shop.pay("tips-eur", "4.99")
    assert answer.status_code == 400
    assert_form(answer)
    error = re.search(r'<p class="error" id="amount-error" role="alert">(.*?)</p>', answer.text)
    assert error is not None and "at least 5.00 EUR" in error.group(1), answer.text
    assert not shop.made(link) and not shop.pools["default"].taken


def test_an_amount_at_the_fiat_minimum_is_priced_in_it(shop: Shop) -> None:
    link = shop.link("tips-eur", title="Tips", currency="EUR", min_price="5", expires_in=600)
    address = checkout_address(shop.pay("tips-eur", "5"))
    made = shop.book.requests[address]
    assert made.price is not None and (made.price.amount, made.price.currency) == ("5", "EUR")
    assert [r.address for r in shop.made(link)] == [address]
