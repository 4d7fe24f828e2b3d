"""The quick key of the devnet's wallet-rpc certificates (``xmrgate.devnet.quick_certificate``).

``quick_rsa.c`` is compiled with the machine's real C compiler and preloaded into a real
Python process that asks OpenSSL's libcrypto for RSA keys as monero-wallet-rpc does
(``RSA_generate_key_ex``), through ctypes. ``tests/integration/test_devnet.py`` checks
that every devnet wallet-rpc runs with it and monerod does not.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from xmrgate.devnet import quick_certificate
from xmrgate.devnet.quick_certificate import (
    SWITCH,
    build,
    library_name,
    quick_rsa_library,
    wallet_environment,
)

SOURCE = resources.files("xmrgate.devnet").joinpath("quick_rsa.c").read_bytes()

#: Asks libcrypto for two RSA keys of argv[1] bits as monero does, and prints the bits of
#: each and whether the two moduli are the same.
TWO_KEYS = """
import ctypes, sys
crypto = ctypes.CDLL("libcrypto.so.3", mode=ctypes.RTLD_GLOBAL)
everything = ctypes.CDLL(None)  # preloaded libraries first, as the wallet's calls resolve
for name in ("RSA_new", "BN_new"):
    getattr(crypto, name).restype = ctypes.c_void_p
crypto.BN_set_word.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
keygen = everything.RSA_generate_key_ex
keygen.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
crypto.RSA_bits.argtypes = [ctypes.c_void_p]
crypto.RSA_get0_n.argtypes = [ctypes.c_void_p]
crypto.RSA_get0_n.restype = ctypes.c_void_p
crypto.BN_cmp.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
exponent = crypto.BN_new()
crypto.BN_set_word(exponent, 65537)
keys = []
for _ in range(2):
    key = crypto.RSA_new()
    assert keygen(key, int(sys.argv[1]), exponent, None) == 1
    keys.append(key)
same = crypto.BN_cmp(crypto.RSA_get0_n(keys[0]), crypto.RSA_get0_n(keys[1])) == 0
print(crypto.RSA_bits(keys[0]), crypto.RSA_bits(keys[1]), "same" if same else "different")
"""


def _two_keys(bits: int, preload: Path | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    if preload is not None:
        env["LD_PRELOAD"] = str(preload)
    done = subprocess.run(
        [sys.executable, "-c", TWO_KEYS, str(bits)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``quick_rsa.c`` compiled once for the module (about 0.4 CPU-s a compilation)."""
    return build(SOURCE, tmp_path_factory.mktemp("quick-rsa"))


def test_a_4096_bit_request_gets_the_process_s_one_2048_bit_key(library: Path) -> None:
    assert _two_keys(4096, library) == "2048 2048 same"


def test_without_it_each_request_gets_a_new_key_of_its_size() -> None:
    """The control: the same program without the library (1024 bits, to keep it short)."""
    assert _two_keys(1024, None) == "1024 1024 different"


def test_it_is_built_once_per_source(library: Path) -> None:
    made = library.stat().st_mtime_ns
    assert build(SOURCE, library.parent) == library and library.stat().st_mtime_ns == made
    assert [p.name for p in library.parent.iterdir()] == [library.name]  # no leftovers
    assert library.name == library_name(SOURCE) != library_name(SOURCE + b"/* changed */")


def test_the_wallet_environment_preloads_it_first(
    library: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "xmrgate").mkdir()
    shutil.copy2(library, tmp_path / "xmrgate" / library.name)  # built: found, not rebuilt
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("LD_PRELOAD", "/usr/lib/other.so")
    monkeypatch.delenv(SWITCH, raising=False)
    quick_rsa_library.cache_clear()
    try:
        env = wallet_environment()
        assert env is not None
        first, other = env["LD_PRELOAD"].split(" ")
        assert Path(first) == tmp_path / "xmrgate" / library.name
        assert other == "/usr/lib/other.so" and env["PATH"] == os.environ["PATH"]
    finally:
        quick_rsa_library.cache_clear()


def test_switched_off_the_wallet_inherits_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SWITCH, "0")
    quick_rsa_library.cache_clear()
    try:
        assert quick_rsa_library() is None and wallet_environment() is None
    finally:
        quick_rsa_library.cache_clear()


def test_without_a_compiler_the_wallets_make_full_keys_and_the_log_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.delenv(SWITCH, raising=False)
    quick_rsa_library.cache_clear()
    try:
        with caplog.at_level(logging.WARNING, logger=quick_certificate.__name__):
            assert wallet_environment() is None
        assert "no C compiler" in caplog.text and "RSA-4096" in caplog.text
    finally:
        quick_rsa_library.cache_clear()


def test_without_a_home_folder_the_wallets_make_full_keys(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """No ``XDG_CACHE_HOME`` and no home folder to put the library under."""

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv(SWITCH, raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    quick_rsa_library.cache_clear()
    try:
        with caplog.at_level(logging.WARNING, logger=quick_certificate.__name__):
            assert wallet_environment() is None
        assert "home directory" in caplog.text
    finally:
        quick_rsa_library.cache_clear()
