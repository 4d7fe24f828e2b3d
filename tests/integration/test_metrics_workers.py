"""Metrics under ``--workers 2`` (PostgreSQL): every scrape, whichever worker answers it,
counts the requests of both; the multiprocess directory is private and removed at exit."""

from __future__ import annotations

import stat
from pathlib import Path

import httpx
import pytest

from tests.integration.test_workers import worker_pids
from tests.unit.test_metrics import samples, value
from testsupport.gateway import close_gateway, start_gateway
from xmrgate.devnet import Devnet

pytestmark = pytest.mark.integration

REQUESTS = 60
SCRAPES = 8


def multiproc_dir(pid: int) -> Path | None:
    """The PROMETHEUS_MULTIPROC_DIR a worker process was started with."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    for entry in environ:
        name, _, value = entry.partition(b"=")
        if name == b"PROMETHEUS_MULTIPROC_DIR":
            return Path(value.decode())
    return None


def test_every_worker_reports_the_sum_and_the_directory_goes(
    devnet: Devnet, tmp_path: Path
) -> None:
    gateway = start_gateway(devnet, "postgresql", tmp_path / "gw", ["--workers", "2"])
    try:
        folders = {multiproc_dir(pid) for pid in worker_pids(gateway)} - {None}
        assert len(folders) == 1, f"the workers share one directory: {folders}"
        [folder] = folders
        assert folder is not None
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        # A new connection per request: the kernel hands them to both workers.
        for _ in range(REQUESTS):
            r = httpx.get(gateway.url + "/balance", headers={"Connection": "close"}, timeout=10)
            assert r.status_code == 200
        assert list(folder.glob("counter_*.db")), "the workers write their counters there"
        seen = []
        for _ in range(SCRAPES):
            text = httpx.get(gateway.url + "/metrics", headers={"Connection": "close"}).text
            found = samples(text)
            name = "xmrgate_http_requests_total"
            seen.append(value(found, name, route="/balance", method="GET", status="200"))
        assert seen == [REQUESTS] * SCRAPES
    finally:
        close_gateway(gateway)
    assert not folder.exists(), "the parent removes the multiprocess directory at exit"
