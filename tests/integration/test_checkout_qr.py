"""The checkout QR code decodes (with zbar, a real QR reader) to exactly the payment URI."""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import pytest
import segno

from xmrgate.checkout.qr import payment_uri

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        shutil.which("zbarimg") is None,
        reason="zbarimg not installed (Debian package zbar-tools)",
    ),
]

ADDRESS = (
    "8AEsrzFAKbdNZUEhQWLD2xNw9kSf7gYATeuDbMGbkFGzbDUmPrdyvpifk"
    "kh4sNAp3L5vN2Bd4AAXDcb1oA3xm8DPL72ZBja"
)


def zbar_decode(png: bytes, tmp_path: Path) -> str:
    """What zbarimg reads from a PNG (raw text, no type prefix)."""
    path = tmp_path / "qr.png"
    path.write_bytes(png)
    out = subprocess.run(
        ["zbarimg", "--raw", "-q", "-Sbinary", str(path)],
        capture_output=True,
        check=True,
        timeout=30,
    )
    return out.stdout.decode("utf-8").rstrip("\n")


@pytest.mark.parametrize(
    ("amount", "description"),
    [
        (1_234_500_000_000, "Order #42"),
        (1, ""),
        (0, "tip jar"),
        (2**63 - 1, "</p><script>alert(1)</script> & ünïcødé €"),
        (10**12, "€" * 60),
    ],
)
def test_qr_decodes_to_payment_uri(amount: int, description: str, tmp_path: Path) -> None:
    """The code segno renders for the page carries the URI byte for byte."""
    uri = payment_uri(ADDRESS, amount, description)
    buf = io.BytesIO()
    segno.make(uri, error="m", micro=False).save(buf, kind="png", scale=4, border=4)
    assert zbar_decode(buf.getvalue(), tmp_path) == uri
