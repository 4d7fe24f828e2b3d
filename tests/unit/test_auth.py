"""API key parsing, hashing and lookup (pure: no server)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from xmrgate.domain.api_keys import SCOPES, find_key, parse_api_keys

KEY = "merchant-key-0123456789"


def test_plain_key_gets_all_scopes() -> None:
    """A key without scopes may do everything."""
    [key] = parse_api_keys(KEY)
    assert key.scopes == SCOPES
    assert find_key([key], KEY) is key


def test_scoped_keys_and_lookup() -> None:
    """Scopes after a colon, joined by '+'; lookup finds the right key, not a prefix."""
    keys = parse_api_keys(f"{KEY}:read other-key-abcdefghijk:receive+transfer")
    assert find_key(keys, KEY) is not None
    assert find_key(keys, KEY).scopes == {"read"}  # type: ignore[union-attr]
    assert find_key(keys, "other-key-abcdefghijk").scopes == {"receive", "transfer"}  # type: ignore[union-attr]
    assert find_key(keys, KEY[:-1]) is None
    assert find_key(keys, "") is None


def test_key_file_with_hashes_only(tmp_path: Path) -> None:
    """A key file can hold sha256 hashes instead of keys: the file does not give keys away."""
    digest = hashlib.sha256(KEY.encode()).hexdigest()
    path = tmp_path / "keys"
    path.write_text(f"# merchant keys\n\nsha256:{digest}:read\n")
    [key] = parse_api_keys(f"@{path}")
    assert KEY not in path.read_text()
    assert key.digest == bytes.fromhex(digest)
    assert key.scopes == {"read"}
    assert find_key([key], KEY) is key
    assert find_key([key], digest) is None


def test_keys_are_held_as_hashes() -> None:
    """The parsed key keeps only the digest and a short label, never the key itself."""
    [key] = parse_api_keys(KEY)
    assert KEY not in repr(key)
    assert key.digest == hashlib.sha256(KEY.encode()).digest()


@pytest.mark.parametrize(
    "spec",
    ["", "short", f"{KEY}:superuser", f"{KEY}:read:extra", "sha256:nothex", "sha256:abcd"],
    ids=["empty", "short", "unknown-scope", "two-colons", "bad-hash", "short-hash"],
)
def test_bad_specs_are_refused(spec: str) -> None:
    """Malformed keys, hashes and scopes raise ValueError."""
    with pytest.raises(ValueError):
        parse_api_keys(spec)


def test_keys_sharing_a_label_are_refused() -> None:
    """The label scopes Idempotency-Keys per caller: two keys with one label would share
    answers, so the same key twice, or a key and its own hash, is refused at start."""
    digest = hashlib.sha256(KEY.encode()).hexdigest()
    for spec in (f"{KEY}:read {KEY}:transfer", f"{KEY} sha256:{digest}:read"):
        with pytest.raises(ValueError, match="share the label"):
            parse_api_keys(spec)
    assert len(parse_api_keys(f"{KEY} other-key-abcdefghijk")) == 2


def test_two_keys_whose_labels_collide_are_refused() -> None:
    """Two distinct keys whose hashes begin with the same 8 hex digits (found by a
    birthday search, ~2^16 hashes) would scope their Idempotency-Keys alike."""
    seen: dict[str, str] = {}
    for n in range(2_000_000):
        token = f"collision-key-{n:09d}"
        prefix = hashlib.sha256(token.encode()).hexdigest()[:8]
        if prefix in seen:
            break
        seen[prefix] = token
    first, second = seen[prefix], token
    assert first != second
    with pytest.raises(ValueError, match="share the label"):
        parse_api_keys(f"{first}:read {second}:transfer")
