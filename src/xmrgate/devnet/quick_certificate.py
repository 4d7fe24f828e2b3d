"""A quick key for the certificate every devnet wallet-rpc makes and never uses.

monero-wallet-rpc 0.18 makes a new self-signed RSA-4096 certificate for its message
system's HTTP client (MMS, over Bitmessage) each time it creates or opens a wallet: 1-3 s
of CPU in OpenSSL's prime search per wallet (``create_wallet`` 1.8-2.6 CPU-s,
``open_wallet`` 1.2-1.9 measured), whatever ``--daemon-ssl`` and ``--rpc-ssl`` say; no
option turns it off. The regtest network never talks to Bitmessage, and the test suite
creates and opens wallets a few hundred times.

``quick_rsa.c``, compiled once per machine into the user's cache folder and preloaded
(``LD_PRELOAD``) into the devnet's wallet-rpc processes only, makes the first such key of
a process 2048 bits and hands a copy of it to every later request. monerod, the
gateway and any wallet-rpc outside the devnet never load it.

Without a C compiler (``cc``) the wallets make their keys as usual, only slower; the
reason is logged once. ``XMRGATE_DEVNET_QUICK_CERTIFICATE=0`` turns it off.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

log = logging.getLogger(__name__)

#: The switch: "0" leaves the wallets' certificates as monero makes them.
SWITCH = "XMRGATE_DEVNET_QUICK_CERTIFICATE"
SOURCE_NAME = "quick_rsa.c"


def cache_folder() -> Path:
    """Where the compiled library is kept: ``$XDG_CACHE_HOME/xmrgate`` (default
    ``~/.cache/xmrgate``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "xmrgate"


def library_name(source: bytes) -> str:
    """The file name of ``source`` compiled: a changed source is compiled anew."""
    return f"quick_rsa-{hashlib.sha256(source).hexdigest()[:16]}.so"


def build(source: bytes, folder: Path) -> Path:
    """Compile ``source`` into ``folder/<library_name>`` unless it is there already; the
    library's path. Raises ``OSError`` or ``CalledProcessError``."""
    target = folder / library_name(source)
    if target.exists():
        return target
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise OSError("no C compiler (cc) on PATH (Debian: apt-get install gcc libc6-dev)")
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as work:
        source_path = Path(work) / SOURCE_NAME
        source_path.write_bytes(source)
        built = Path(work) / target.name
        command = [compiler, "-shared", "-fPIC", "-O2", "-o", str(built), str(source_path)]
        subprocess.run(
            [*command, "-ldl", "-lpthread"],
            check=True,
            capture_output=True,
            timeout=120,
        )
        # Test processes build it at the same time: each renames a whole file into place.
        os.replace(built, target)
    return target


@functools.cache
def quick_rsa_library() -> Path | None:
    """The compiled ``quick_rsa.c`` (built on first use), or ``None`` when it is switched
    off or cannot be built (the reason is logged)."""
    if os.environ.get(SWITCH) == "0":
        return None
    source = resources.files("xmrgate.devnet").joinpath(SOURCE_NAME).read_bytes()
    try:
        return build(source, cache_folder())
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:  # RuntimeError: no home
        detail = getattr(exc, "stderr", b"") or b""
        log.warning(
            "wallets make their full RSA-4096 certificates (slower): %s %s",
            exc,
            detail.decode(errors="replace").strip(),
        )
        return None


def wallet_environment() -> dict[str, str] | None:
    """The environment of a devnet wallet-rpc: this process's, with the quick key's
    library preloaded first; ``None`` (inherit as is) when there is no library."""
    library = quick_rsa_library()
    if library is None:
        return None
    env = dict(os.environ)
    env["LD_PRELOAD"] = " ".join(filter(None, [str(library), env.get("LD_PRELOAD", "")]))
    return env
