"""requirements.lock pins every dependency pyproject.toml names, at the version installed.

``make install`` installs with the lock as constraints, so the tests run on the locked
versions; ``make lock`` rewrites it. A dependency added to pyproject.toml without
``make lock`` would be installed at whatever release is newest that day: this fails.
"""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PIN = re.compile(r"^([A-Za-z0-9._-]+)==([^\s;]+)", re.MULTILINE)


def _name(requirement: str) -> str:
    """A requirement's project name, normalised (PEP 503)."""
    bare = re.split(r"[\[<>=!~;\s]", requirement, maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", bare).lower()


def _pins() -> dict[str, str]:
    text = (ROOT / "requirements.lock").read_text()
    return {_name(name): version for name, version in PIN.findall(text)}


def _direct() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [*project["dependencies"], *project["optional-dependencies"]["test"]]


def test_every_direct_dependency_is_pinned() -> None:
    pins = _pins()
    missing = [r for r in _direct() if _name(r) not in pins]
    assert not missing, f"not in requirements.lock (run make lock): {missing}"


def test_the_installed_versions_are_the_locked_ones() -> None:
    pins = _pins()
    drift = {
        name: (metadata.version(name), pins[name])
        for name in map(_name, _direct())
        if metadata.version(name) != pins[name]
    }
    assert not drift, f"installed vs locked (run make install): {drift}"
