"""Fuzzing the live gateway: schemathesis over its own /openapi.json, then hostile requests.

Every operation the running gateway publishes in ``/openapi.json`` is driven by
schemathesis's Hypothesis strategies, with data that fits the schema
(positive), data that does not (negative), and, for routes with an
``{address}`` parameter, a real payment request's address. Then hand-written
requests that a schema-driven generator never sends: malformed JSON, huge
numbers, deep nesting, NUL bytes and lone surrogates, wrong content types,
long path segments, odd methods and headers. The HTML checkout routes (not in
the schema) get generated addresses too.

The rules, for every answer: never a 5xx (the wallet and the database are up,
so 502/503/504 are failures too); every non-2xx answer of the JSON API is
``application/json`` shaped ``{"status": <the HTTP status>, "code"?: int,
"message": "<non-empty>"}``. Generation is derandomized with no example
database, so a run is repeatable. See docs/fuzzing.md.
"""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import quote

import httpx
import hypothesis
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import negative_data_rejection

from testsupport.gateway import Gateway, count_rows

pytestmark = pytest.mark.integration

MAX_EXAMPLES = 50
"""Generated requests per operation and mode (schemathesis may stop earlier on tiny schemas)."""

SETTINGS = hypothesis.settings(
    max_examples=MAX_EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.explicit, Phase.generate, Phase.target, Phase.shrink],
    suppress_health_check=list(HealthCheck),
    print_blob=False,
)

ERROR_KEYS = {"status", "code", "message"}


def error_problems(status: int, content_type: str, content: bytes) -> list[str]:
    """What is wrong with one answer: a 5xx, or a non-2xx that is not the JSON error shape."""
    if status >= 500:
        return [f"server error {status}"]
    if 200 <= status < 300:
        return []
    problems = []
    if content_type.split(";")[0].strip() != "application/json":
        problems.append(f"error Content-Type is {content_type!r}, not application/json")
    try:
        body = json.loads(content)
    except ValueError:
        return [*problems, "error body is not JSON"]
    if not isinstance(body, dict):
        return [*problems, "error body is not a JSON object"]
    if set(body) - ERROR_KEYS:
        problems.append(f"error body has unknown keys {sorted(set(body) - ERROR_KEYS)}")
    if type(body.get("status")) is not int or body["status"] != status:
        problems.append(f"error body status {body.get('status')!r} is not the HTTP status {status}")
    if not isinstance(body.get("message"), str) or not body["message"].strip():
        problems.append(f"error body message {body.get('message')!r} is not a non-empty string")
    if "code" in body and type(body["code"]) is not int:
        problems.append(f"error body code {body['code']!r} is not an integer")
    return problems


NOISE_HEADERS = (
    "User-Agent",
    "Accept-Encoding",
    "Accept",
    "Connection",
    "X-Schemathesis-TestCaseId",
)


def describe(method: str, url: str, headers: Any, body: bytes | str | None, answer: str) -> str:
    """One request and its answer, exactly enough to replay it."""
    shown = dict(headers or {})
    for name in NOISE_HEADERS:
        shown.pop(name, None)
    raw = body.encode() if isinstance(body, str) else (body or b"")
    text = repr(raw[:600]) + (f"... ({len(raw)} bytes)" if len(raw) > 600 else "")
    return f"{method} {url}\n  headers: {shown}\n  body: {text}\n  answer: {answer[:600]}"


def check_httpx(response: httpx.Response) -> None:
    """Assert the JSON API rules on an httpx answer."""
    problems = error_problems(
        response.status_code, response.headers.get("content-type", ""), response.content
    )
    request = response.request
    assert not problems, (
        "; ".join(problems)
        + "\n"
        + describe(
            request.method,
            str(request.url),
            request.headers,
            request.content,
            f"{response.status_code} {response.headers.get('content-type')} {response.text}",
        )
    )


# --- schemathesis over /openapi.json ---------------------------------------------------


@pytest.fixture(scope="module")
def api_schema(gateway: Gateway) -> Any:
    """The gateway's own OpenAPI document, loaded over HTTP."""
    schema = schemathesis.openapi.from_url(gateway.url + "/openapi.json")
    schema.config.update(base_url=gateway.url, request_timeout=30)
    return schema


def fuzz_operation(operation: Any, strategy: Any, negative: bool) -> tuple[int, str | None]:
    """Run one operation's generated cases; return (requests sent, failure report or None)."""
    sent = 0

    @SETTINGS
    @hypothesis.given(case=strategy)
    def run(case: Any) -> None:
        nonlocal sent
        sent += 1
        response = case.call(timeout=30)
        content_type = (response.headers.get("content-type") or [""])[0]
        problems = error_problems(response.status_code, content_type, response.content)
        if 200 <= response.status_code < 300 and not content_type.startswith("application/json"):
            problems.append(f"2xx Content-Type is {content_type!r}")
        request = response.request
        assert not problems, (
            "; ".join(problems)
            + "\n"
            + describe(
                str(request.method),
                str(request.url),
                request.headers,
                request.body,
                f"{response.status_code} {content_type} {response.content.decode(errors='ignore')}",
            )
        )
        # Data that violates the schema must be refused with a 4xx, never accepted.
        case.validate_response(response, checks=[negative_data_rejection])

    try:
        run()
    except Unsatisfiable as exc:
        if negative:
            # Only string path parameters: there is no schema-violating value to send.
            return sent, None
        return sent, f"{operation.label}: no valid request could be generated ({exc})"
    except Exception as exc:
        found = exc.exceptions if isinstance(exc, BaseExceptionGroup) else [exc]
        return sent, "\n".join(f"{operation.label}: {e}" for e in found)
    return sent, None


@pytest.mark.parametrize("mode", ["positive", "negative", "known-address"])
def test_openapi_operations(gateway: Gateway, api_schema: Any, mode: str) -> None:
    """Every published operation, MAX_EXAMPLES generated requests each: no 5xx, JSON errors."""
    failures = []
    counts = {}
    started = time.monotonic()
    for result in api_schema.get_all_operations():
        operation = result.ok()
        kwargs: dict[str, Any] = {}
        if mode == "known-address":
            if "{address}" not in operation.path:
                continue
            # A fresh request per operation: DELETE must not take it from the others.
            kwargs["path_parameters"] = {"address": gateway.receive(1)["address"]}
        generation = GenerationMode.NEGATIVE if mode == "negative" else GenerationMode.POSITIVE
        strategy = operation.as_strategy(generation_mode=generation, **kwargs)
        sent, failure = fuzz_operation(operation, strategy, negative=mode == "negative")
        counts[operation.label] = sent
        if failure:
            failures.append(failure)
        elif sent == 0 and mode != "negative":
            failures.append(f"{operation.label}: not a single request was sent")
    elapsed = time.monotonic() - started
    print(f"\n{gateway.backend} {mode}: {sum(counts.values())} requests in {elapsed:.1f}s {counts}")
    assert counts, "the schema lists no operations"
    assert not failures, "\n\n".join(failures)


def test_openapi_lists_the_api(api_schema: Any) -> None:
    """The fuzzed schema is the real API (the checkout HTML routes are hidden from it)."""
    labels = {result.ok().label for result in api_schema.get_all_operations()}
    for label in (
        "POST /receive",
        "GET /receive/{address}",
        "DELETE /receive/{address}",
        "GET /receive",
        "GET /events",
        "POST /transfer",
        "GET /transfer/{tx_hash}",
        "GET /balance",
        "GET /health",
    ):
        assert label in labels
    assert "GET /pay/{address}" not in labels


# --- hand-written hostile requests -----------------------------------------------------

JSON = {"content-type": "application/json"}
MULTIPART = "multipart/form-data; boundary=x"
LONG = "8" * 8000
DEEP = b'{"amount": ' + b"[" * 20000 + b"]" * 20000 + b"}"
MANY_KEYS = ("{" + ",".join(f'"k{i}": {i}' for i in range(5000)) + ',"amount": 1}').encode()

# (id, body bytes, extra headers); content-type is application/json unless a header says otherwise.
RECEIVE_BODIES: list[tuple[str, bytes, dict[str, str]]] = [
    ("empty", b"", {}),
    ("empty-no-content-type", b"", {"content-type": ""}),
    ("whitespace", b" \n\t ", {}),
    ("null", b"null", {}),
    ("true", b"true", {}),
    ("number", b"1", {}),
    ("string", b'"amount"', {}),
    ("array-of-object", b'[{"amount": 1}]', {}),
    ("truncated", b'{"amount": 1', {}),
    ("trailing-garbage", b'{"amount": 1} {"amount": 2}', {}),
    ("single-quotes", b"{'amount': 1}", {}),
    ("nan", b'{"amount": NaN}', {}),
    ("infinity", b'{"amount": Infinity}', {}),
    ("minus-infinity", b'{"amount": -Infinity}', {}),
    ("float-overflow", b'{"amount": 1e999}', {}),
    ("exponent-int", b'{"amount": 1e3}', {}),
    ("max-plus-one", b'{"amount": 9223372036854775808}', {}),
    ("uint64-max", b'{"amount": 18446744073709551615}', {}),
    ("int-min", b'{"amount": -9223372036854775808}', {}),
    ("5000-digits", b'{"amount": 1' + b"0" * 5000 + b"}", {}),
    ("deep-nesting", DEEP, {}),
    ("nested-junk", b'{"amount": {"$gt": 0, "a": [[[{"b": null}]]]}}', {}),
    ("amount-array", b'{"amount": [1]}', {}),
    ("amount-null", b'{"amount": null}', {}),
    ("description-object", b'{"amount": 1, "description": {"x": 1}}', {}),
    ("many-keys", MANY_KEYS, {}),
    ("duplicate-keys-bad-last", b'{"amount": 1, "amount": -1}', {}),
    ("duplicate-keys-good-last", b'{"amount": -1, "amount": 1}', {}),
    ("nul-in-key", b'{"amount": 1, "a\\u0000b": 1}', {}),
    ("nul-in-description", b'{"amount": 1, "description": "a\\u0000b"}', {}),
    ("raw-control-chars", b'{"amount": 1, "description": "a\x01\x1fb"}', {}),
    ("lone-high-surrogate", b'{"amount": 1, "description": "\\ud800"}', {}),
    ("lone-low-surrogate", b'{"amount": 1, "description": "x\\udfffy"}', {}),
    ("surrogate-pair", b'{"amount": 1, "description": "\\ud83d\\ude00"}', {}),
    ("rtl-zero-width-emoji", '{"amount": 1, "description": "\u202e\u200b💸é̀"}'.encode(), {}),
    ("1024-four-byte-chars", ('{"amount": 1, "description": "' + "😀" * 1024 + '"}').encode(), {}),
    ("invalid-utf8", b'{"amount": 1, "description": "\xff\xfe\xc3"}', {}),
    ("overlong-utf8", b'{"amount": 1, "description": "\xc0\xaf"}', {}),
    ("utf8-bom", b'\xef\xbb\xbf{"amount": 1}', {}),
    ("utf16", '{"amount": 1}'.encode("utf-16"), {}),
    ("nul-in-callback-url", b'{"amount": 1, "callback_url": "http://a\\u0000b/"}', {}),
    (
        "unicode-callback-host",
        '{"amount": 1, "callback_url": "http://ex\u00e4mple.test/"}'.encode(),
        {},
    ),
    ("bad-ipv6-callback", b'{"amount": 1, "callback_url": "http://[::1/"}', {}),
    ("bad-port-callback", b'{"amount": 1, "callback_url": "http://a:99999/"}', {}),
    ("text-plain", b'{"amount": 1}', {"content-type": "text/plain"}),
    ("form-urlencoded", b"amount=1", {"content-type": "application/x-www-form-urlencoded"}),
    (
        "multipart",
        b"--x\r\n\r\n1\r\n--x--\r\n",
        {"content-type": MULTIPART},
    ),
    ("xml", b"<amount>1</amount>", {"content-type": "application/xml"}),
    ("json-utf16-charset", b'{"amount": 1}', {"content-type": "application/json; charset=utf-16"}),
    ("junk-content-type", b'{"amount": 1}', {"content-type": "application/json;;=;x"}),
    ("idempotency-key-255", b'{"amount": 1}', {"idempotency-key": "k" * 255}),
    ("idempotency-key-256", b'{"amount": 1}', {"idempotency-key": "k" * 256}),
    ("idempotency-key-empty", b'{"amount": 1}', {"idempotency-key": ""}),
    ("oversized-body", b'{"amount": 1, "description": "' + b"x" * 70000 + b'"}', {}),
]


@pytest.mark.parametrize(
    ("body", "headers"),
    [(body, headers) for _, body, headers in RECEIVE_BODIES],
    ids=[name for name, _, _ in RECEIVE_BODIES],
)
def test_hostile_receive_bodies(gateway: Gateway, body: bytes, headers: dict[str, str]) -> None:
    """POST /receive with bodies no schema generator sends: never 5xx, errors in JSON shape."""
    send_headers = {**JSON, **headers}
    if send_headers["content-type"] == "":
        del send_headers["content-type"]
    before = count_rows(gateway, "payment_requests")
    r = gateway.post("/receive", content=body, headers=send_headers)
    check_httpx(r)
    created = count_rows(gateway, "payment_requests") - before
    assert created == (1 if r.status_code == 200 else 0), r.text
    if r.status_code == 200:
        # What was stored is what was sent: read it back through both JSON routes.
        answer = r.json()
        status = gateway.get(f"/receive/{answer['address']}")
        check_httpx(status)
        assert status.json()["description"] == answer["description"]


TRANSFER_BODIES: list[tuple[str, Any]] = [
    ("destinations-object", {"destinations": {"amount": 1, "address": "8a"}}),
    ("destinations-string", {"destinations": "8a"}),
    ("destination-null", {"destinations": [None]}),
    ("sum-overflows", {"destinations": [{"amount": 2**63 - 1, "address": "8a"}] * 2}),
    ("amount-uint64-max", {"destinations": [{"amount": 2**64 - 1, "address": "8a"}]}),
    ("address-nul", {"destinations": [{"amount": 1, "address": "8\u0000a"}]}),
    ("address-surrogate", {"destinations": [{"amount": 1, "address": "\ud800"}]}),
    ("address-unicode", {"destinations": [{"amount": 1, "address": "\uff18" * 95}]}),
    ("address-256", {"destinations": [{"amount": 1, "address": "8" * 256}]}),
    ("address-257", {"destinations": [{"amount": 1, "address": "8" * 257}]}),
    ("address-json-injection", {"destinations": [{"amount": 1, "address": '8", "x": "'}]}),
    ("sixteen-long", {"destinations": [{"amount": 1, "address": "4" * 256}] * 16}),
]


@pytest.mark.parametrize(
    "body", [body for _, body in TRANSFER_BODIES], ids=[name for name, _ in TRANSFER_BODIES]
)
def test_hostile_transfer_bodies(gateway: Gateway, body: Any) -> None:
    """POST /transfer with junk destinations: a 4xx JSON error, nothing journaled."""
    before = count_rows(gateway, "payouts")
    content = json.dumps(body).encode()  # ensure_ascii keeps lone surrogates as \\ud800
    r = gateway.post("/transfer", content=content, headers=JSON)
    check_httpx(r)
    assert 400 <= r.status_code < 500, r.text
    assert count_rows(gateway, "payouts") == before


# Path segments, sent percent-encoded except where the raw form is the point.
SEGMENTS: list[tuple[str, str]] = [
    ("nul", "%00"),
    ("nul-inside", "8a%00b"),
    ("long", LONG),
    ("encoded-slash", "a%2Fb"),
    ("dot-dot", "..%2F..%2Fetc%2Fpasswd"),
    ("percent-junk", "%zz%"),
    ("invalid-utf8", "%FF%FE"),
    ("overlong-utf8", "%C0%AF"),
    ("lone-surrogate", "%ED%A0%80"),
    ("emoji", quote("💸", safe="")),
    ("rtl", quote("\u202eabc", safe="")),
    ("sql", quote("' OR 1=1 --", safe="")),
    ("like-wildcards", "%25_%25"),
    ("spaces", "%20%20"),
    ("crlf", "%0D%0Aset-cookie:x"),
]

PATH_TEMPLATES = [
    "/receive/{}",
    "/receive/{}/callbacks",
    "/receive/{}/callbacks/1/retry",
    "/receive/{known}/callbacks/{}/retry",
    "/transfer/{}",
    "/pay/{}/status.json",
    "/pay/{}/qr.svg",
]


@pytest.mark.parametrize(("name", "segment"), SEGMENTS, ids=[name for name, _ in SEGMENTS])
def test_hostile_path_segments(gateway: Gateway, name: str, segment: str) -> None:
    """NUL bytes, long and undecodable segments in every JSON path: never 5xx, JSON errors."""
    known = gateway.receive(1)["address"]
    failures = []
    for template in PATH_TEMPLATES:
        path = template.replace("{known}", known).format(segment)
        requests = [("POST" if path.endswith("/retry") else "GET", path)]
        if template == "/receive/{}":
            requests += [("DELETE", path), ("GET", path + "?min=1&max=2")]
        for method, target in requests:
            try:
                check_httpx(gateway.client.request(method, gateway.url + target))
            except AssertionError as exc:
                failures.append(str(exc))
    assert not failures, "\n\n".join(failures)
    assert gateway.get(f"/receive/{known}").status_code == 200, name


QUERIES: list[tuple[str, str]] = [
    ("huge", "min=99999999999999999999999999"),
    ("above-int32", "max=2147483648"),
    ("nan", "min=NaN"),
    ("infinity", "max=Infinity"),
    ("exponent", "min=1e3"),
    ("empty", "min=&max="),
    ("nul", "min=%00"),
    ("repeated", "min=1&min=2&max=3&max=4"),
    ("minus-zero", "min=-0"),
    ("plus-sign", "min=+1"),
    ("unicode-digits", "min=" + quote("١٢٣")),
    ("long", "min=" + "9" * 4000),
    ("brackets", "min[]=1&max[x]=2"),
]


@pytest.mark.parametrize("query", [q for _, q in QUERIES], ids=[name for name, _ in QUERIES])
def test_hostile_query_strings(gateway: Gateway, query: str) -> None:
    """GET /receive/:address?min=&max= with odd numbers: never 5xx, JSON errors."""
    address = gateway.receive(1)["address"]
    check_httpx(gateway.get(f"/receive/{address}?{query}"))


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("PUT", "/receive"),
        ("PATCH", "/transfer"),
        ("DELETE", "/balance"),
        ("POST", "/health"),
        ("OPTIONS", "/receive"),
        ("TRACE", "/transfer"),
        ("DELETE", "/events"),
        ("GET", "/transfer"),
        ("PROPFIND", "/balance"),
        ("GET", "/nope/" + LONG),
        ("GET", "/receive/a/b/c/d"),
        ("GET", "//receive"),
    ],
)
def test_wrong_methods_and_routes(gateway: Gateway, method: str, path: str) -> None:
    """Methods and paths the API does not have: a 404/405 in the JSON error shape."""
    r = gateway.client.request(method, gateway.url + path)
    check_httpx(r)
    assert 400 <= r.status_code < 500


def test_idempotency_key_with_latin1_bytes(gateway: Gateway) -> None:
    """A non-ASCII Idempotency-Key (HTTP headers are bytes, read as Latin-1) is a key too."""
    headers: dict[str, Any] = {**JSON, "idempotency-key": b"caf\xe9-\xff"}
    first = gateway.post("/receive", content=b'{"amount": 5}', headers=headers)
    check_httpx(first)
    assert first.status_code == 200, first.text
    again = gateway.post("/receive", content=b'{"amount": 5}', headers=headers)
    check_httpx(again)
    assert again.status_code == 200 and again.json() == first.json()
    assert again.headers["idempotent-replayed"] == "true"
    other = gateway.post("/receive", content=b'{"amount": 6}', headers=headers)
    check_httpx(other)
    assert other.status_code == 422, other.text


def test_chunked_body_without_length(gateway: Gateway) -> None:
    """A streamed (chunked) body over the size limit is refused with a 4xx JSON error."""

    def chunks() -> Any:
        yield b'{"amount": 1, "description": "'
        for _ in range(20):
            yield b"x" * 8192
        yield b'"}'

    r = gateway.post("/receive", content=chunks(), headers=JSON)
    check_httpx(r)
    assert 400 <= r.status_code < 500


# --- the HTML checkout routes (not in the schema) ---------------------------------------


def check_checkout_answer(response: httpx.Response) -> None:
    """No 5xx; a missing page is HTML (customers see it) or, off the route, a JSON error."""
    where = describe(
        response.request.method,
        str(response.request.url),
        {},
        b"",
        f"{response.status_code} {response.headers.get('content-type')} {response.text[:300]}",
    )
    assert response.status_code < 500, where
    if response.status_code == 200:
        return
    assert response.status_code in (400, 404, 405), where
    if not response.headers.get("content-type", "").startswith("text/html"):
        check_httpx(response)


@SETTINGS
@hypothesis.given(address=st.text(max_size=200))
def run_checkout_fuzz(client: httpx.Client, base: str, address: str) -> None:
    segment = quote(address, safe="")
    for suffix in ("", "/qr.svg"):
        check_checkout_answer(client.get(f"{base}/pay/{segment}{suffix}"))


def test_checkout_html_routes_fuzzed(gateway: Gateway) -> None:
    """/pay/:address and its QR with generated addresses: never 5xx; the real one renders."""
    run_checkout_fuzz(gateway.client, gateway.url)
    for name, segment in SEGMENTS:
        for suffix in ("", "/qr.svg"):
            r = gateway.get(f"/pay/{segment}{suffix}")
            assert r.status_code < 500, f"{name}: {r.status_code} {r.text[:300]}"
    address = gateway.receive(12345, description="<script>alert(1)</script>")["address"]
    page = gateway.get(f"/pay/{address}")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "<script>alert(1)</script>" not in page.text
    qr = gateway.get(f"/pay/{address}/qr.svg")
    assert qr.status_code == 200 and qr.headers["content-type"].startswith("image/svg+xml")
