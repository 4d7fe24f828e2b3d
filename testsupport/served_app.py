"""An ASGI app (the real ``create_app`` over fakes, say) served on loopback for a browser.

uvicorn serves it on a free port of 127.0.0.1, on its own event loop in a thread, so a
test (and the browser it drives) talks to it over real HTTP while the test runs use
cases on the same loop as the app (where the app's fakes live) with :meth:`ServedApp.run`.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Coroutine
from types import TracebackType
from typing import Any, Self, TypeVar

import uvicorn

T = TypeVar("T")


class ServedApp:
    """``app`` served by uvicorn on a loopback port, on its own loop in a thread.

    Started on construction (failing the test if uvicorn is not up within
    ``start_timeout`` seconds); :meth:`close` stops it, as does leaving it as a context
    manager (``with Site() as site: yield site`` in a fixture). ``url`` is its base URL.
    """

    def __init__(self, app: Any, *, start_timeout: float = 20.0) -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_until_complete, args=(self.server.serve(sockets=[sock]),)
        )
        self.thread.start()
        deadline = time.monotonic() + start_timeout
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        assert self.server.started, "uvicorn did not start"

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 10) -> T:
        """Run ``coro`` on the server's loop (where the app's fakes live); its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        """Stop the server and its loop."""
        self.server.should_exit = True
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
