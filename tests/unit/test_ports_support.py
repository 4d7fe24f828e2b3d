"""testsupport/ports.py: a restarted test gateway tells its own listening socket from
another process's on the same port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from testsupport.ports import holds_listener, listening_inodes, port_taken
from xmrgate.devnet import free_port

LISTEN_AND_WAIT = """
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
print("listening", flush=True)
sys.stdin.read()
"""


def test_the_listener_is_found_in_its_own_process_only() -> None:
    port = free_port()
    assert not port_taken(port) and listening_inodes(port) == set()
    child = subprocess.Popen(
        [sys.executable, "-c", LISTEN_AND_WAIT, str(port)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "listening\n"
        assert len(listening_inodes(port)) == 1
        assert holds_listener(child.pid, port)
        assert not holds_listener(os.getpid(), port)  # this process only connects
        with socket.create_connection(("127.0.0.1", port)):
            assert not holds_listener(os.getpid(), port)
        assert port_taken(port)
        assert not holds_listener(child.pid, free_port())
    finally:
        child.kill()
        child.wait()
    assert not port_taken(port) and not holds_listener(child.pid, port)
