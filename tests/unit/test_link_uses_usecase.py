"""``Links.pay`` when the store decides: a link's request is admitted where it
is inserted, so what another process did after this payer's page read the link is what
counts. Over the in-memory fakes (``testsupport/fake_links.py``, whose pool admits a
link's request as the SQL store does): used up or turned off meanwhile is Gone and
makes nothing; a database failing at the insert is its own error, nothing made."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest

from tests.unit.fakes import AllowAll, FakeOutbox, FakePaymentStore, FakeWallet
from testsupport.fake_links import FakeLinkPool, FakeLinkStore, LinkBook, pool_address
from xmrgate.core.links import Links
from xmrgate.core.payment_requests import PaymentRequests
from xmrgate.domain.errors import DatabaseUnavailable
from xmrgate.domain.links import Link, LinkFields, LinkInactive, LinkUsedUp


class FailingPool(FakeLinkPool):
    """A pool whose database fails while admitting or inserting."""

    async def take(self, values: Any) -> Any:
        raise DatabaseUnavailable("database unavailable")


def _links(book: LinkBook, pool: FakeLinkPool) -> Links:
    requests = PaymentRequests(
        FakeWallet(),
        FakePaymentStore(requests=book.requests),  # type: ignore[arg-type]
        FakeOutbox(),
        AllowAll(),
        pool=pool,
    )
    return Links(FakeLinkStore(book), requests, AllowAll())


def _another_process_paid(book: LinkBook, link: Link, index: int) -> None:
    """A request of ``link`` made by another process (in the shared database)."""
    address = pool_address("default", index)
    made = asyncio.run(
        FakeLinkPool(book, first_index=index).take(
            {
                "amount": 5,
                "description": "",
                "callback_url": None,
                "return_url": None,
                "link_id": link.id,
            }
        )
    )
    assert made is not None and made.address == address


def test_a_link_used_up_by_another_process_after_the_read_makes_nothing() -> None:
    book = LinkBook()
    links = _links(book, FakeLinkPool(book))
    link = asyncio.run(links.create(LinkFields(title="Coffee", amount=5, max_uses=1)))
    read = asyncio.run(links.find(link.slug))  # uses 0: the page may offer Pay
    _another_process_paid(book, link, 500)
    with pytest.raises(LinkUsedUp):
        asyncio.run(links.pay(read, None, None))
    assert len(book.made(link.id)) == 1


def test_a_link_turned_off_after_the_read_makes_nothing() -> None:
    book = LinkBook()
    links = _links(book, FakeLinkPool(book))
    link = asyncio.run(links.create(LinkFields(title="Coffee", amount=5)))
    read = asyncio.run(links.find(link.slug))
    book.links[link.id] = replace(link, fields=replace(link.fields, active=False))
    with pytest.raises(LinkInactive):
        asyncio.run(links.pay(read, None, None))
    assert book.requests == {}


def test_a_database_failing_at_the_insert_is_unavailable_and_makes_nothing() -> None:
    book = LinkBook()
    links = _links(book, FailingPool(book))
    link = asyncio.run(links.create(LinkFields(title="Coffee", amount=5, max_uses=3)))
    with pytest.raises(DatabaseUnavailable):
        asyncio.run(links.pay(link, None, None))
    assert book.requests == {}
