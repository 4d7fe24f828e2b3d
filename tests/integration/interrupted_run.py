"""Not collected by itself (no ``test_`` prefix): the pytest run that
``test_interrupted_run.py`` starts and stops half-way. Each test takes the process's
regtest network (the session fixture ``devnet``, started without blocks: nothing is paid)
and one more wallet-rpc, writes their PIDs and the chain's height to the file named by
``XMRGATE_INTERRUPTED_PIDS`` and waits to be stopped."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from xmrgate.devnet import Devnet

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("part", ["one", "two"])
def test_waits_to_be_stopped(devnet: Devnet, part: str) -> None:
    wallet = devnet.start_wallet_rpc(f"extra-{part}")
    assert wallet.pid in devnet.pids()
    record = {"test_process": os.getpid(), "pids": devnet.pids(), "height": devnet.height()}
    with Path(os.environ["XMRGATE_INTERRUPTED_PIDS"]).open("a") as out:
        out.write(json.dumps(record) + "\n")
    time.sleep(600)
