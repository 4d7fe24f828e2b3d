"""A loopback TCP proxy whose link can be cut or made to hang, for fault tests.

It forwards real traffic to a real server (PostgreSQL, wallet-rpc); ``cut()``
closes every connection and refuses new ones, ``blackhole()`` accepts
connections but forwards nothing (a hung backend), ``restore()`` goes back to
forwarding.

The proxy's port stays reserved for its whole life, also while it is cut: a
second socket bound to it with SO_REUSEPORT (never listening) keeps any other
socket, including the kernel's choice of a local port for an outgoing
connection, off it. So ``restore()`` always gets its port back, and a client
retrying against the cut proxy gets "connection refused", never a connection
to itself (TCP simultaneous open on loopback).
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading


def _socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    return sock


class TcpProxy:
    """Forward 127.0.0.1:<port> to ``target``."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.mode = "forward"
        self._listener: socket.socket | None = None
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._reservation = _socket()
        self._reservation.bind(("127.0.0.1", 0))
        self.port: int = self._reservation.getsockname()[1]
        self._open_listener()

    def _open_listener(self) -> None:
        listener = _socket()
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept_loop, args=(listener,), daemon=True).start()

    def _accept_loop(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            with self._lock:
                self._conns.append(client)
            if self.mode == "blackhole":
                continue  # hold it open, never answer
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns.append(upstream)
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        try:
            while self.mode == "forward":
                readable, _, _ = select.select([a, b], [], [], 1.0)
                if self.mode != "forward":
                    break
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    (b if sock is a else a).sendall(data)
        except (OSError, ValueError):
            # OSError: the peer or cut()/blackhole() closed a socket under us.
            # ValueError: select() on a socket already closed (fileno() == -1).
            pass
        finally:
            for sock in (a, b):
                with contextlib.suppress(OSError):
                    sock.close()

    def _drop_connections(self) -> None:
        with self._lock:
            conns, self._conns = self._conns, []
        for sock in conns:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()

    def cut(self) -> None:
        """Close every connection and refuse new ones (connection refused)."""
        self.mode = "cut"
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        self._drop_connections()

    def blackhole(self) -> None:
        """Accept connections but never answer (a hung backend)."""
        self.mode = "blackhole"
        self._drop_connections()
        if self._listener is None:
            self._open_listener()

    def restore(self) -> None:
        """Forward again."""
        self._drop_connections()
        self.mode = "forward"
        if self._listener is None:
            self._open_listener()

    def close(self) -> None:
        self.cut()
        self._reservation.close()
