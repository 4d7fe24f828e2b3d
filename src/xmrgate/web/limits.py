"""The limits of the public forms: the refund claim (``web/refund_page``) and "Pay"
on a payment link (``web/link_page``).

``PublicLimit`` is one limit of a page (a name, ``limit`` attempts per key in ``window``
seconds). Where it is counted depends on the app:

- with a shared counter (``app.state.flood_counter``: PostgreSQL, set by
  ``runtime/app.py``), in the database, so the limit holds for every worker process and
  host together (``adapters/store/flood_windows.py``: a window fixed from a key's first
  attempt);
- otherwise (SQLite: one process) in this process's memory, ``SlidingWindow``: each key
  may make ``limit`` attempts in any ``window`` seconds. Memory is bounded twice: a key
  keeps at most ``limit`` timestamps, and at most ``max_keys`` keys are tracked (the
  least recently seen is forgotten first).

A shared counter that fails raises (``XmrgateError``): the pages refuse the attempt (503,
fail closed) rather than let a flood through uncounted.
"""

from __future__ import annotations

import ipaddress
import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable

from fastapi import Request

from xmrgate.core.limit_ports import WindowCounter

#: Keys tracked at most per limiter (a few hundred kilobytes at 10 attempts per key).
MAX_KEYS = 10_000


class SlidingWindow:
    """At most ``limit`` attempts per key in any ``window`` seconds."""

    def __init__(
        self,
        limit: int,
        window: float,
        *,
        max_keys: int = MAX_KEYS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if limit < 1 or window <= 0 or max_keys < 1:
            raise ValueError("limit, window and max_keys must be positive")
        self.limit = limit
        self.window = window
        self.max_keys = max_keys
        self._clock = clock
        self._hits: OrderedDict[str, deque[float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._hits)

    def hit(self, key: str) -> int:
        """Count an attempt of ``key``: 0 when allowed, else the seconds to wait (>= 1).

        A refused attempt is not counted: waiting ``Retry-After`` seconds is enough.
        """
        now = self._clock()
        hits = self._hits.get(key)
        if hits is None:
            hits = deque()
            self._hits[key] = hits
        else:
            self._hits.move_to_end(key)
            while hits and hits[0] <= now - self.window:
                hits.popleft()
        if len(hits) >= self.limit:
            return max(1, math.ceil(hits[0] + self.window - now))
        hits.append(now)
        while len(self._hits) > self.max_keys:
            self._hits.popitem(last=False)
        return 0


class PublicLimit:
    """One limit of a public form: ``limit`` attempts per key in ``window`` seconds,
    counted by the app's shared counter when it has one, else in this process."""

    def __init__(self, name: str, limit: int, window: float) -> None:
        self.name = name
        self.limit = limit
        self.window = window
        self.local = SlidingWindow(limit, window)

    async def hit(self, request: Request, key: str) -> int:
        """Count an attempt of ``key``: 0 when allowed, else the seconds to wait (>= 1).

        With a shared counter, an XmrgateError when it cannot count (the database).
        """
        counter = shared_counter(request)
        if counter is None:
            return self.local.hit(key)
        return await counter.hit(self.name, key, self.limit, self.window)


def shared_counter(request: Request) -> WindowCounter | None:
    """The app's counter of limits shared by its processes (None: count in memory)."""
    counter: WindowCounter | None = getattr(request.app.state, "flood_counter", None)
    return counter


def client_key(host: str | None) -> str:
    """The key of a client's address: itself for IPv4, its /64 for IPv6 (one machine
    usually holds a whole /64, and would otherwise get a fresh budget per address)."""
    if not host:
        return "?"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host[:64]
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is None:
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)
