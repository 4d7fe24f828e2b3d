"""One send per answer: the head and body uvicorn writes separately leave together.

uvicorn's httptools protocol writes an answer's head when the app sends
``http.response.start`` and its body on ``http.response.body``: two ``send`` calls and
two TCP segments for every answer, with the socket's no-delay option on. On loopback
the sender's ``send`` also runs the receiver's TCP path, so on a 2-core machine these
writes were a third of the gateway's CPU under a GET load (py-spy), half of
them for heads of a hundred bytes.

``CoalescingTransport`` holds a write until the next one in the same turn of the event
loop and sends both in one call; a write that no other follows (a streamed body's
pause, a HEAD request's head) leaves at the end of that turn, so nothing waits for
more data that may never come. ``close`` sends what is held first; ``abort`` drops
it, as the socket's own abort drops its buffer.
"""

from __future__ import annotations

import asyncio
from typing import Any

from xmrgate.runtime.http_limits import BoundedHttpToolsProtocol


class CoalescingTransport(asyncio.Transport):
    """A transport that joins the writes of one event-loop turn into one."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Send ``data`` with what is held; hold it if nothing is."""
        if self._held:
            self._held.append(bytes(data))
            self.flush()
            return
        self._held.append(bytes(data))
        self._loop.call_soon(self.flush)

    def writelines(self, list_of_data: Any) -> None:
        """Every buffer of ``list_of_data`` in one write."""
        self.write(b"".join(list_of_data))

    def flush(self) -> None:
        """Send what is held now."""
        if not self._held:
            return
        data = self._held[0] if len(self._held) == 1 else b"".join(self._held)
        self._held = []
        if not self._transport.is_closing():
            self._transport.write(data)

    def close(self) -> None:
        """Send what is held, then close (the socket sends its buffer before closing)."""
        self.flush()
        self._transport.close()

    def abort(self) -> None:
        """Close at once, dropping what is held."""
        self._held = []
        self._transport.abort()

    def is_closing(self) -> bool:
        """True once the transport is closing or closed."""
        return self._transport.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        """The wrapped transport's socket, peer and local addresses, TLS context."""
        return self._transport.get_extra_info(name, default)

    def pause_reading(self) -> None:
        """Flow control of reading: the wrapped transport's."""
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        """Flow control of reading: the wrapped transport's."""
        self._transport.resume_reading()

    def is_reading(self) -> bool:
        """Whether the wrapped transport reads."""
        return self._transport.is_reading()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        """Hand the connection to another protocol (an upgrade)."""
        self.flush()
        self._transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        """The protocol the wrapped transport calls."""
        return self._transport.get_protocol()

    def get_write_buffer_size(self) -> int:
        """Bytes not yet sent: held here and buffered below."""
        return sum(map(len, self._held)) + self._transport.get_write_buffer_size()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        """Flow control of writing: the wrapped transport's limits."""
        self._transport.set_write_buffer_limits(high, low)

    def can_write_eof(self) -> bool:
        """Whether the wrapped transport can half-close."""
        return self._transport.can_write_eof()

    def write_eof(self) -> None:
        """Send what is held, then half-close."""
        self.flush()
        self._transport.write_eof()


class GatewayHttpProtocol(BoundedHttpToolsProtocol):
    """The gateway's HTTP/1.1 protocol: bounded heads (``http_limits``), one send per
    answer (``CoalescingTransport``)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Serve the connection through a coalescing wrapper of ``transport``."""
        super().connection_made(CoalescingTransport(transport, asyncio.get_running_loop()))
