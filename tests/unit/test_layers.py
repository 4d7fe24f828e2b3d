"""The layers of docs/architecture.md, read from the code's own imports.

Every ``import xmrgate...`` / ``from xmrgate... import`` in ``src/xmrgate`` (also the ones
under ``TYPE_CHECKING``: a loop of types is still a loop) is an edge; the tests hold
those edges to the table of the architecture page: which folder may import which, and
no loop between folders, between sub-folders, or between files. The benchmarks
(``bench/``) and the test helpers (``testsupport/``) hold no loop between their files
either, and no module of ``src``, ``bench`` or ``testsupport`` is longer than 400 lines.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "xmrgate"
# The helpers beside the product: the benchmarks and the tests' support (tests/ itself is
# not held to these rules).
BESIDE = {"bench": ROOT / "bench", "testsupport": ROOT / "testsupport"}
# The project's rule: a module has one job, and at most this many lines (docs/architecture.md).
MAX_LINES = 400

# The architecture's rule: a top-level part of the package may import only these.
# "" is the package root (``xmrgate/__init__.py``: the version).
ALLOWED: dict[str, set[str]] = {
    "domain": {"domain", ""},
    "core": {"core", "domain", ""},
    "adapters": {"adapters", "core", "domain", ""},
    "config": {"domain", "config_rates", ""},
    # The --rate-* options, a part of the settings in a module of their own.
    "config_rates": {"domain", ""},
    "web": {"web", "core", "domain", "config", ""},
    "devnet": {"devnet", "domain", ""},
    "runtime": {"runtime", "web", "core", "adapters", "devnet", "domain", "config", ""},
    "__main__": {"runtime"},
    "": {""},
}


def _module_name(path: Path, base: Path = SRC.parent) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path, module: str, roots: tuple[str, ...] = ("xmrgate",)) -> set[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names = [f"{base}.{alias.name}" for alias in node.names]
            found.update(n for n in [base, *names] if n.startswith(roots))
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith(roots))
    return found


def _graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (``from x import name`` counts when
    ``name`` is a module, else the edge goes to ``x``). A new graph each time (the
    sources are parsed once per test process)."""
    return {module: set(targets) for module, targets in _scanned().items()}


@functools.cache
def _scanned() -> dict[str, frozenset[str]]:
    files = {_module_name(p): p for p in SRC.rglob("*.py")}
    graph: dict[str, frozenset[str]] = {}
    for module, path in files.items():
        targets = {t for t in _imports(path, module) if t in files}
        graph[module] = frozenset(targets - {module})
    return graph


def _part(module: str, depth: int) -> str:
    """The layer of ``module`` (depth 1: domain, core, config, ...; "" for the package
    root) or its folder (depth 2: web.api, web.checkout, adapters.store, ...; a file
    that lies beside sub-folders is its own unit)."""
    parts = module.split(".")[1:]
    if depth == 1:
        return parts[0] if parts else ""
    folder = module if module in _PACKAGES else module.rpartition(".")[0]
    if any(p.startswith(folder + ".") for p in _PACKAGES):
        # A file beside sub-folders (web/app.py composing web/api, web/checkout, ...;
        # the root's config.py) stands for itself: the folder is not one unit then.
        return ".".join(parts)
    return folder.partition(".")[2]


_PACKAGES = {".".join(p.relative_to(SRC.parent).parts[:-1]) for p in SRC.rglob("__init__.py")}


def _cycle(graph: Mapping[str, Iterable[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a list of nodes, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def _folded(graph: Mapping[str, set[str]], depth: int) -> dict[str, set[str]]:
    folded: dict[str, set[str]] = {}
    for module, targets in graph.items():
        src = _part(module, depth)
        folded.setdefault(src, set()).update(
            dst for t in targets if (dst := _part(t, depth)) != src
        )
    return folded


def test_every_part_imports_only_what_the_architecture_allows() -> None:
    """domain is pure, core needs only domain, web never reaches adapters or runtime."""
    wrong = sorted(
        f"{module} -> {target}"
        for module, targets in _graph().items()
        for target in targets
        if _part(target, 1) not in ALLOWED[_part(module, 1)]
    )
    assert wrong == [], "imports against the layers of docs/architecture.md:\n" + "\n".join(wrong)


@pytest.mark.parametrize("depth", [1, 2, 3], ids=["layers", "folders", "files"])
def test_no_import_loop(depth: int) -> None:
    """No loop between layers, between folders (web/api <-> web/checkout, say), or
    between files."""
    graph = _graph() if depth == 3 else _folded(_graph(), depth)
    assert _cycle(graph) is None, f"import loop: {' -> '.join(_cycle(graph) or [])}"


@functools.cache
def _beside_graph() -> dict[str, frozenset[str]]:
    """Module -> the modules of ``bench`` and ``testsupport`` it imports (edges into
    ``xmrgate`` cannot close a loop: the product never imports these)."""
    files = {_module_name(p, ROOT): p for folder in BESIDE.values() for p in folder.rglob("*.py")}
    graph: dict[str, frozenset[str]] = {}
    for module, path in files.items():
        targets = {t for t in _imports(path, module, tuple(BESIDE)) if t in files}
        graph[module] = frozenset(targets - {module})
    return graph


def test_no_import_loop_beside_the_product() -> None:
    """No loop between the files of ``bench`` (``__main__`` <-> ``stores`` once was one),
    of ``testsupport``, or through both."""
    graph = _beside_graph()
    assert {m.split(".")[0] for m in graph} == set(BESIDE), "the scan missed a folder"
    assert "bench.common" in graph["bench.stores"], "the scan sees no bench import"
    assert _cycle(graph) is None, f"import loop: {' -> '.join(_cycle(graph) or [])}"


def _too_long(folders: Iterable[Path]) -> list[str]:
    found = []
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > MAX_LINES:
                found.append(f"{path.relative_to(folder.parent)}: {lines} lines")
    return found


def test_no_module_is_longer_than_the_rule() -> None:
    """Every module of the product, the benchmarks and the test helpers has at most
    ``MAX_LINES`` lines: a longer one does more than one job and is split by job."""
    assert _too_long([SRC, *BESIDE.values()]) == [], (
        f"modules over {MAX_LINES} lines (split them by job):\n"
        + "\n".join(_too_long([SRC, *BESIDE.values()]))
    )


def test_the_length_check_sees_a_long_module(tmp_path: Path) -> None:
    """The length rule is not blind: a module of ``MAX_LINES + 1`` lines is named, one of
    ``MAX_LINES`` passes."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "long.py").write_text("x = 1\n" * (MAX_LINES + 1), encoding="utf-8")
    (tmp_path / "pkg" / "fits.py").write_text("x = 1\n" * MAX_LINES, encoding="utf-8")
    assert _too_long([tmp_path / "pkg"]) == [f"pkg/long.py: {MAX_LINES + 1} lines"]


def test_the_checks_see_a_loop_and_a_forbidden_import() -> None:
    """The helpers are not blind: a made-up loop and a made-up domain -> web import."""
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
    folded = _folded({"xmrgate.web.api.x": {"xmrgate.web.checkout.y"}}, 2)
    assert folded == {"web.api": {"web.checkout"}}
    assert _part("xmrgate.web.api", 2) == "web.api"  # a package's __init__ is its folder
    assert _part("xmrgate.config", 1) == _part("xmrgate.config", 2) == "config"
    assert "web" not in ALLOWED["domain"]
    graph = _graph()
    assert len(graph) > 50, "the scan found too few modules to mean anything"
    assert "xmrgate.core.ports" in graph["xmrgate.core.payouts"] or any(
        t.startswith("xmrgate.domain") for t in graph["xmrgate.core.payouts"]
    )
