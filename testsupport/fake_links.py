"""An in-memory ``LinkRepository`` (``core/link_ports.py``) for use-case and page tests.

It follows the rules of the SQL store (``adapters/store/links.py``): one store's view
(``by_slug`` excepted), slugs unique across stores (409), a link with requests is only
made inactive by ``delete``, its counts come from the requests it made.

The requests live where the test's ``PaymentRequests`` keeps them: a ``dict`` of
address -> ``PaymentRequest`` (``tests/unit/fakes.py`` ``FakePaymentStore.requests``).
:class:`FakeLinkPool` is an address pool that writes into that dict and records
``link_id`` (the column a link's request carries) in the shared :class:`LinkBook`, so
``PaymentRequests(..., pool=FakeLinkPool(book, store.requests))`` makes requests the
fake repository counts, and admits a link's request as the SQL store does (active,
under ``max_uses``, when it is taken). What a request received is ``LinkBook.received``
(tests set it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from xmrgate.domain.errors import AlreadyExists, MissingReference
from xmrgate.domain.links import Link, LinkFields, LinkInactive, LinkUsedUp
from xmrgate.domain.records import PaymentRequest

_PAID = frozenset({"paid", "complete", "paid_late"})
_HAS_LINK_FIELD = "link" in {f.name for f in dataclasses.fields(PaymentRequest)}


@dataclass
class LinkBook:
    """What every store's fake repository shares: links, and which link made which request."""

    links: dict[str, Link] = field(default_factory=dict)
    # address -> link id, for requests made by a link.
    made_by: dict[str, str] = field(default_factory=dict)
    # address -> piconero received (every transfer seen); absent: nothing.
    received: dict[str, int] = field(default_factory=dict)
    # The requests of every store, by address (shared with the PaymentRequests fakes).
    requests: dict[str, PaymentRequest] = field(default_factory=dict)

    def made(self, link_id: str) -> list[PaymentRequest]:
        """The requests a link made that still exist."""
        return [
            r
            for address, made_by in self.made_by.items()
            if made_by == link_id and (r := self.requests.get(address)) is not None
        ]

    def counted(self, link: Link) -> Link:
        """``link`` with its counts as the SQL store computes them."""
        made = self.made(link.id)
        return replace(
            link,
            uses=len(made),
            paid=sum(1 for r in made if r.status in _PAID),
            received=sum(self.received.get(r.address, 0) for r in made),
        )


class FakeLinkStore:
    """One store's view of a ``LinkBook``."""

    def __init__(self, book: LinkBook, store_id: str = "default") -> None:
        self.book = book
        self.store_id = store_id

    def _mine(self, link_id: str) -> Link | None:
        link = self.book.links.get(link_id)
        return link if link is not None and link.store_id == self.store_id else None

    async def create(self, link_id: str, slug: str, fields: LinkFields, now: datetime) -> Link:
        if any(link.slug == slug for link in self.book.links.values()):
            raise AlreadyExists(f"the slug {slug!r} is taken")
        link = Link(id=link_id, store_id=self.store_id, slug=slug, fields=fields, created_at=now)
        self.book.links[link_id] = link
        return link

    async def get(self, link_id: str) -> Link | None:
        link = self._mine(link_id)
        return None if link is None else self.book.counted(link)

    async def by_slug(self, slug: str) -> Link | None:
        link = next((x for x in self.book.links.values() if x.slug == slug), None)
        return None if link is None else self.book.counted(link)

    async def listing(self, limit: int) -> list[Link]:
        mine = [x for x in self.book.links.values() if x.store_id == self.store_id]
        mine.sort(key=lambda x: x.created_at, reverse=True)
        return [self.book.counted(x) for x in mine[:limit]]

    async def update(self, link_id: str, fields: LinkFields) -> Link | None:
        link = self._mine(link_id)
        if link is None:
            return None
        self.book.links[link_id] = replace(link, fields=fields)
        return self.book.counted(self.book.links[link_id])

    async def delete(self, link_id: str) -> bool | None:
        link = self._mine(link_id)
        if link is None:
            return None
        if any(made_by == link_id for made_by in self.book.made_by.values()):
            self.book.links[link_id] = replace(link, fields=replace(link.fields, active=False))
            return False
        del self.book.links[link_id]
        return True

    async def open_request(self, link_id: str, address: str, now: datetime) -> bool:
        if self._mine(link_id) is None or self.book.made_by.get(address) != link_id:
            return False
        request = self.book.requests.get(address)
        return (
            request is not None
            and request.status == "waiting"
            and not self.book.received.get(address)
            and (request.expires_at is None or request.expires_at > now)
        )

    async def prune_unpaid(self, before: datetime, limit: int) -> int:
        pruned = 0
        for address in list(self.book.made_by):
            request = self.book.requests.get(address)
            if pruned >= limit or request is None:
                continue
            expired = request.expires_at is not None and request.expires_at < before
            if expired and not self.book.received.get(address):
                del self.book.requests[address]
                del self.book.made_by[address]
                pruned += 1
        return pruned


class FakeLinkPool:
    """An address pool (``core/address_pool.py`` ``AddressPoolRepository``) of one store
    that makes requests into ``book.requests`` and records which link made each."""

    def __init__(self, book: LinkBook, store_id: str = "default", first_index: int = 1) -> None:
        self.book = book
        self.store_id = store_id
        self.next_index = first_index
        self.taken: list[Mapping[str, Any]] = []  # the columns of each request made

    async def size(self) -> int:
        return 1_000_000

    async def highest_index(self) -> int:
        return self.next_index - 1

    async def add(self, entries: Sequence[tuple[str, int]]) -> None:
        return None

    async def take(self, values: Mapping[str, Any]) -> PaymentRequest | None:
        link_id = values.get("link_id")
        if link_id is not None:
            self.admit(link_id)
        index = self.next_index
        self.next_index += 1
        address = pool_address(self.store_id, index)
        columns = dict(values)
        link_id = columns.pop("link_id", None)
        extra: dict[str, Any] = {"link": link_id} if _HAS_LINK_FIELD else {}
        request = PaymentRequest(
            id=len(self.book.requests) + 1,
            address=address,
            subaddr_index=index,
            created_at=datetime.now(UTC),
            created_height=None,
            store_id=self.store_id,
            **columns,
            **extra,
        )
        self.taken.append(values)
        self.book.requests[address] = request
        if link_id is not None:
            self.book.made_by[address] = link_id
        return request

    def admit(self, link_id: str) -> None:
        """As the SQL store admits a link's request when inserting it (the link as it is
        now, not as the payer's page read it): active, under its ``max_uses``."""
        link = self.book.links.get(link_id)
        if link is None:
            raise MissingReference("the link was deleted meanwhile")
        if not link.fields.active:
            raise LinkInactive("this link is not taking payments")
        limit = link.fields.max_uses
        if limit is not None and len(self.book.made(link_id)) >= limit:
            raise LinkUsedUp("this link has been used as often as it may be")


def pool_address(store_id: str, index: int) -> str:
    """A base58-looking subaddress (95 characters, starting with 8) of ``store_id``."""
    base58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
    tag = "".join(c for c in store_id if c in base58)[:20] or "X"
    return ("8" + tag + "B" * 95)[:85] + f"{index:010d}".replace("0", "A")
