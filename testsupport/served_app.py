"""An ASGI app (the real ``create_app`` over fakes, say) served on loopback for a browser.

uvicorn serves it on a free port of 127.0.0.1, on its own event loop in a thread, so a
test (and the browser it drives) talks to it over real HTTP while the test runs use
cases on the same loop as the app (where the app's fakes live) with :meth:`ServedApp.run`.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Coroutine
from types import TracebackType
from typing import Any, Self, TypeVar

import uvicorn

T = TypeVar("T")


class PromptServer(uvicorn.Server):
    """uvicorn's server, stopped as soon as it is asked to.

    uvicorn's own looks at ``should_exit`` every 0.1 s, then sleeps 0.1 s more before it
    waits, in steps of 0.1 s, for its connections to end: 0.15-0.2 s to stop, for each
    of the hundred or so tests that serve an app to a browser. This one waits on
    :attr:`stop` (which :meth:`ServedApp.close` sets), and stops as uvicorn does (no new
    connections, idle ones closed, the responses being sent finished) in 5 ms steps.
    """

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.stop = asyncio.Event()
        # Set once its startup ended (``started`` says how): the test thread waits on it
        # rather than looking at ``started`` every 20 ms (20 ms for each of the hundred
        # apps served, where the startup takes 0.5 ms: the median of 20 on this host).
        self.startup_ended = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            await super().startup(sockets)
        finally:
            self.startup_ended.set()

    async def main_loop(self) -> None:
        # on_tick(0) as uvicorn's loop calls it every tenth: the Date header, once a second.
        while not await self.on_tick(0):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), 1.0)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        # uvicorn tells of neither a connection's end nor a task's but by these sets.
        while self.server_state.connections or self.server_state.tasks:  # noqa: ASYNC110
            await asyncio.sleep(0.005)
        for server in self.servers:
            await server.wait_closed()


class ServedApp:
    """``app`` served by uvicorn on a loopback port, on its own loop in a thread.

    Started on construction (failing the test if uvicorn is not up within
    ``start_timeout`` seconds); :meth:`close` stops it, as does leaving it as a context
    manager (``with Site() as site: yield site`` in a fixture). ``url`` is its base URL.
    """

    def __init__(self, app: Any, *, start_timeout: float = 20.0) -> None:
        # IPPROTO_TCP named, not 0: asyncio sets TCP_NODELAY only on the connections of a
        # socket whose proto says TCP. Without it each response (its headers, then its
        # body) waited for the browser's delayed ACK: 40 ms per request, 0.7 ms with it.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self.server = PromptServer(uvicorn.Config(app, log_level="warning", lifespan="off"))
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_until_complete, args=(self.server.serve(sockets=[sock]),)
        )
        self.thread.start()
        self.server.startup_ended.wait(start_timeout)
        assert self.server.started, "uvicorn did not start"

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 10) -> T:
        """Run ``coro`` on the server's loop (where the app's fakes live); its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        """Stop the server and its loop."""
        self.server.should_exit = True
        self.loop.call_soon_threadsafe(self.server.stop.set)
        self.thread.join(10)
        self.loop.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
