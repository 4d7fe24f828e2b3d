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
import shutil
import subprocess
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
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.fail("node not found: install Debian's nodejs (make system-deps)")
    amounts = [2**64 - 1, 2**53 + 1, MAX_AMOUNT, 10**18 + 7, 2**53 - 1, 5]
    texts = [json.dumps({"amount": a, "note": '9007199254740993 \\" 1'}) for a in amounts]
    done = subprocess.run(
        [node, "-e", NO_SOURCE_SCRIPT, FORMAT_JS],
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
