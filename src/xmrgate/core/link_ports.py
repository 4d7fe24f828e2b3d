"""What the payment-links use case needs from storage (``adapters/store/links.py``).

One repository is bound to one store, except ``by_slug`` (the public page finds a link
by its slug whatever its store, and learns the store from it).
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from xmrgate.domain.links import Link, LinkFields


class LinkRepository(Protocol):
    """The payment links of one store."""

    async def create(self, link_id: str, slug: str, fields: LinkFields, now: datetime) -> Link:
        """Insert a link; AlreadyExists (409) when the slug is taken (by any store)."""
        ...

    async def get(self, link_id: str) -> Link | None:
        """One link of this store, with its counts; None when unknown or another store's."""
        ...

    async def by_slug(self, slug: str) -> Link | None:
        """The link with this slug, of any store, with its counts."""
        ...

    async def listing(self, limit: int) -> list[Link]:
        """This store's links, newest first, with their counts."""
        ...

    async def update(self, link_id: str, fields: LinkFields) -> Link | None:
        """Replace a link's fields (the slug and id stay); None when not this store's."""
        ...

    async def delete(self, link_id: str) -> bool | None:
        """Delete a link that made no request (True); a link with requests is only made
        inactive (False: its requests keep their ``link``); None when not this store's."""
        ...

    async def open_request(self, link_id: str, address: str, now: datetime) -> bool:
        """Is ``address`` a request this link made that is still waiting (unpaid, nothing
        received, not expired)? The same browser reopening the link goes back to it."""
        ...

    async def prune_unpaid(self, before: datetime, limit: int) -> int:
        """Delete requests made by links (of any store) that expired before ``before``
        with no transfer ever seen; how many. Never a request with a transfer."""
        ...
