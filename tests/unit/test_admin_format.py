"""The dashboard's amount formatting (``web/admin/static/format.js``) in node's V8.

Every amount the dashboard shows goes through ``xmr()``: it must print exactly what
``domain.money.piconero_to_xmr`` prints for every amount up to 2^63-1, which a float
cannot (2^53). Amounts typed in the form go through ``parseXmr()`` and back to the
API through ``toJson()``; answers come in through ``parseJson()``, which must keep
integers beyond 2^53 exact. Needs Debian's nodejs; fails (never skips) without it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from importlib.resources import files
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xmrgate.domain.money import MAX_AMOUNT, piconero_to_xmr

FORMAT_JS = str(files("xmrgate.web.admin") / "static" / "format.js")
# The reviver's source text (exact big integers) is behind this flag in node 20; Chromium
# has it on by default (the browser test checks it there).
NODE_FLAGS = ["--harmony-json-parse-with-source"]
EDGES = [0, 1, 10, 10**12 - 1, 10**12, 10**12 + 1, 2**53 - 1, 2**53 + 1, MAX_AMOUNT, 2**64 - 1]

SCRIPT = """
const f = require(process.argv[1]);
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
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
process.stdout.write(JSON.stringify(out));
"""


def run_node(
    amounts: list[int], texts: list[str], json_texts: list[str], sent: str
) -> dict[str, Any]:
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.fail("node not found: install Debian's nodejs (make system-deps)")
    payload = {
        "amounts": [str(a) for a in amounts],
        "texts": texts,
        "json": json_texts,
        "sent": sent,
    }
    done = subprocess.run(
        [node, *NODE_FLAGS, "-e", SCRIPT, FORMAT_JS],
        input=json.dumps(payload).encode(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2**64 - 1), min_size=1, max_size=200))
def test_xmr_prints_what_piconero_to_xmr_prints(amounts: list[int]) -> None:
    got = run_node(EDGES + amounts, [], [], "0")["xmr"]
    assert got == [piconero_to_xmr(a) for a in EDGES + amounts]


def test_parse_xmr_is_exact_and_refuses_what_is_not_an_amount() -> None:
    texts = ["1", "0.5", ".5", "1,25", " 2.000000000001 ", "9223372.036854775807", "0"]
    bad = ["", ".", "-1", "1e3", "1.0000000000001", "abc", "1.2.3", "0x10"]
    got = run_node([], texts + bad, [], "0")["parsed"]
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


def test_big_integers_survive_the_trip_through_json() -> None:
    cases = [MAX_AMOUNT, 2**53 + 1, 10**18 + 7]
    out = run_node([], [], [json.dumps({"amount": c}) for c in cases], "9223372.036854775807")
    assert out["json"] == [str(c) for c in cases]
    sent = json.loads(out["sent"])
    assert sent == {"amount": MAX_AMOUNT, "description": "\x00tag 1", "n": 5}
