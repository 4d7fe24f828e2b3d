"""monerod's ZeroMQ announcements (``--zmq-pub``): a new block or pool transaction wakes sync.

monerod publishes ``json-minimal-chain_main`` for each block added to the main chain and
``json-minimal-txpool_add`` for transactions entering the pool. Subscribing to them lets
the sync tick start as soon as something happened instead of on its next poll. ZeroMQ
reconnects by itself after monerod restarts; what is published while nobody is
connected is lost, which is why the poll stays as the safety net.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import zmq
import zmq.asyncio

log = logging.getLogger(__name__)

#: The topics that can change what the wallet sees.
TOPICS = (b"json-minimal-chain_main", b"json-minimal-txpool_add")
#: How long one wait for a message lasts before ``stop`` is looked at again (ms).
RECEIVE_TIMEOUT_MS = 500


class DaemonAnnouncements:
    """Subscribes to monerod's ZMQ publisher at ``url`` and calls ``on_change`` per message."""

    def __init__(self, url: str, on_change: Callable[[], None]) -> None:
        """``url`` is what monerod's ``--zmq-pub`` binds, e.g. ``tcp://127.0.0.1:18083``."""
        self.url = url
        self._on_change = on_change
        #: Messages received, by topic (for logs and tests).
        self.received: dict[str, int] = {}

    async def run(self, stop: asyncio.Event) -> None:
        """Listen until ``stop``; every announcement calls ``on_change`` (the sync loop's wake)."""
        context = zmq.asyncio.Context()
        socket = context.socket(zmq.SUB)
        try:
            socket.setsockopt(zmq.LINGER, 0)
            for prefix in TOPICS:
                socket.setsockopt(zmq.SUBSCRIBE, prefix)
            socket.connect(self.url)
            log.info("listening to monerod's announcements at %s", self.url)
            while not stop.is_set():
                if not await socket.poll(RECEIVE_TIMEOUT_MS):
                    continue
                frames = await socket.recv_multipart()
                topic = frames[0].split(b":", 1)[0].decode(errors="replace")
                self.received[topic] = self.received.get(topic, 0) + 1
                log.debug("monerod announced %s", topic)
                self._on_change()
        except zmq.ZMQError as exc:
            # A malformed URL is refused by the settings; this is the rest (e.g. an
            # ipc:// path we may not open). The poll still syncs.
            log.error("cannot listen to monerod at %s: %s; syncing on the poll only", self.url, exc)
        finally:
            with contextlib.suppress(zmq.ZMQError):
                socket.close()
            context.term()
