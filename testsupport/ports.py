"""Who holds a loopback TCP port: a restarted test process must not take another
process's answers for its own.

A test gateway keeps its port across a stop and a start (:mod:`testsupport.gateway`).
Between the two, the kernel may give that port to another test process's
``free_port()`` (three test processes pick ports at once). The restarted gateway then
fails to bind, while the other one answers ``/health`` with 200 at the old URL; the
tests went on against a stranger (seen: a 401 from a gateway with API keys).
"""

from __future__ import annotations

import contextlib
import os
import socket
from pathlib import Path

_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's "st" column


def listening_inodes(port: int, host: str = "127.0.0.1") -> set[int]:
    """The socket inodes listening on ``host:port`` (IPv4), from ``/proc/net/tcp``."""
    packed = socket.inet_aton(host)
    # /proc/net/tcp writes the address as the host-order hex of the 32-bit word.
    want = f"{int.from_bytes(packed, 'little'):08X}:{port:04X}"
    found: set[int] = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if len(fields) > 9 and fields[1] == want and fields[3] == _LISTEN:
            found.add(int(fields[9]))
    return found


def holds_listener(pid: int, port: int, host: str = "127.0.0.1") -> bool:
    """Whether process ``pid`` has a socket listening on ``host:port`` among its files."""
    inodes = listening_inodes(port, host)
    if not inodes:
        return False
    fd_dir = Path(f"/proc/{pid}/fd")
    with contextlib.suppress(OSError):
        for fd in os.listdir(fd_dir):
            with contextlib.suppress(OSError):
                target = os.readlink(fd_dir / fd)
                if target.startswith("socket:[") and int(target[8:-1]) in inodes:
                    return True
    return False


def port_taken(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a listener could not bind ``host:port`` now (as uvicorn binds: with
    ``SO_REUSEADDR``, so our own old connections in TIME_WAIT do not count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False
