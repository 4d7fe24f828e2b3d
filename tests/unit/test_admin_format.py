"""The dashboard's amount formatting (``web/admin/static/format.js``) in node's V8.

Every amount the dashboard shows goes through ``xmr()``: it must print exactly what
``domain.money.piconero_to_xmr`` prints for every amount up to 2^63-1, which a float
cannot (2^53). Amounts typed in the form go through ``parseXmr()`` and back to the
API through ``toJson()``; answers come in through ``parseJson()``, which must keep
integers beyond 2^53 exact, also where JSON.parse gives its reviver no source text
(browsers before 2023). Needs Debian's nodejs; fails (never skips) without it.
"""

from __future__ import annotations

import json
import select
import shutil
import subprocess
from collections.abc import Iterator
from importlib.resources import files
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xmrgate.domain.money import MAX_AMOUNT, piconero_to_xmr

FORMAT_JS = str(files("xmrgate.web.admin") / "static" / "format.js")
# The reviver's source text is behind this flag in node 20 and on by default in browsers
# since 2023; parseJson does not use it, and the test at the end runs without it.
NODE_FLAGS = ["--harmony-json-parse-with-source"]
EDGES = [0, 1, 10, 10**12 - 1, 10**12, 10**12 + 1, 2**53 - 1, 2**53 + 1, MAX_AMOUNT, 2**64 - 1]

# One node for the module: each line on its stdin is a case, answered by one line (a node
# started for each of the property test's 25 examples took 2.4 s of the module's 3).
SCRIPT = """
const f = require(process.argv[1]);
require("readline").createInterface({ input: process.stdin }).on("line", (line) => {
  const input = JSON.parse(line);
  const out = {
    xmr: input.amounts.map((a) => f.xmr(BigInt(a))),
    parsed: input.texts.map((t) => {
      try { return f.parseXmr(t).toString(); } catch (e) { return "ERR " + e.message; }
    }),
    json: input.json.map((t) => {
      const v = f.parseJson(t).amount;
      return typeof v === "bigint" ? v.toString() : "number " + v;
    }),
    sent: f.toJson({ amount: f.parseXmr(input.sent), description: "\\u0000tag 1", n: 5 }),
  };
  process.stdout.write(JSON.stringify(out) + "\\n");
});
"""


def node_path() -> str:
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.fail("node not found: install Debian's nodejs (make system-deps)")
    return node


class Node:
    """format.js in one node process, which answers each case (a line of JSON) with a
    line of JSON."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [node_path(), *NODE_FLAGS, "-e", SCRIPT, FORMAT_JS],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )

    def run(
        self, amounts: list[int], texts: list[str], json_texts: list[str], sent: str
    ) -> dict[str, Any]:
        payload = {
            "amounts": [str(a) for a in amounts],
            "texts": texts,
            "json": json_texts,
            "sent": sent,
        }
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(json.dumps(payload).encode() + b"\n")
        stdin.flush()
        # The 60 s a case had when it was a node of its own.
        ready, _, _ = select.select([stdout], [], [], 60)
        line = stdout.readline() if ready else b""
        if not line:
            self.process.kill()
            _, stderr = self.process.communicate()
            pytest.fail(f"node gave no answer: {stderr.decode()}")
        result: dict[str, Any] = json.loads(line)
        return result

    def close(self) -> None:
        _, stderr = self.process.communicate(b"", timeout=60)  # stdin closed: it ends
        assert self.process.returncode == 0, stderr.decode()


@pytest.fixture(scope="module")
def node() -> Iterator[Node]:
    found = Node()
    try:
        yield found
    finally:
        found.close()


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2**64 - 1), min_size=1, max_size=200))
def test_xmr_prints_what_piconero_to_xmr_prints(node: Node, amounts: list[int]) -> None:
    got = node.run(EDGES + amounts, [], [], "0")["xmr"]
    assert got == [piconero_to_xmr(a) for a in EDGES + amounts]


def test_parse_xmr_is_exact_and_refuses_what_is_not_an_amount(node: Node) -> None:
    texts = ["1", "0.5", ".5", "1,25", " 2.000000000001 ", "9223372.036854775807", "0"]
    bad = ["", ".", "-1", "1e3", "1.0000000000001", "abc", "1.2.3", "0x10"]
    got = node.run([], texts + bad, [], "0")["parsed"]
    assert got[: len(texts)] == [
        "1000000000000",
        "500000000000",
        "500000000000",
        "1250000000000",
        "2000000000001",
        str(MAX_AMOUNT),
        "0",
    ]
    assert all(g.startswith("ERR ") for g in got[len(texts) :]), got


def test_big_integers_survive_the_trip_through_json(node: Node) -> None:
    cases = [MAX_AMOUNT, 2**53 + 1, 10**18 + 7]
    out = node.run([], [], [json.dumps({"amount": c}) for c in cases], "9223372.036854775807")
    assert out["json"] == [str(c) for c in cases]
    sent = json.loads(out["sent"])
    assert sent == {"amount": MAX_AMOUNT, "description": "\x00tag 1", "n": 5}


# Browsers before 2023 (and node 20 without the flag) call the reviver without its third
# argument. JSON.parse is wrapped to drop it anyway, so the test holds on a node where the
# feature is on by default, and it checks that it is indeed gone before format.js loads.
NO_SOURCE_SCRIPT = """
const parse = JSON.parse;
JSON.parse = function (text, reviver) {
  if (typeof reviver !== "function") { return parse(text); }
  return parse(text, function (key, value) { return reviver.call(this, key, value); });
};
let context = "unset";
JSON.parse("1", function (key, value, ctx) { context = typeof ctx; return value; });
const f = require(process.argv[1]);
const texts = JSON.parse(require("fs").readFileSync(0, "utf8"));
const shown = texts.map((t) => {
  try { return f.xmr(f.parseJson(t).amount); } catch (e) { return "ERR " + e.message; }
});
process.stdout.write(JSON.stringify({ context: context, shown: shown }));
"""


def test_amounts_beyond_2_53_show_exactly_without_the_revivers_source_text() -> None:
    amounts = [2**64 - 1, 2**53 + 1, MAX_AMOUNT, 10**18 + 7, 2**53 - 1, 5]
    texts = [json.dumps({"amount": a, "note": '9007199254740993 \\" 1'}) for a in amounts]
    done = subprocess.run(
        [node_path(), "-e", NO_SOURCE_SCRIPT, FORMAT_JS],
        input=json.dumps(texts).encode(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    out = json.loads(done.stdout)
    assert out["context"] == "undefined"
    assert out["shown"] == [piconero_to_xmr(a) for a in amounts]
    assert out["shown"][0] == "18446744.073709551615"
