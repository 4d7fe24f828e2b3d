"""POST /receive's URL fields: checked by the parser that delivers callbacks, and a bad
field's message reads as the field and the reason, without pydantic's prefix."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from xmrgate.config import Settings
from xmrgate.domain.callback_urls import InvalidUrl, parse_url
from xmrgate.runtime.app import build_app
from xmrgate.runtime.container import Services
from xmrgate.web.api.schemas import ReceiveRequest

# Each of these passes urllib's urlsplit (what the schema used before) but could never be
# delivered: the schema must refuse it with the delivery parser's own reason.
UNDELIVERABLE = [
    "http://127.0.0.1:99999/p",
    "http://user:password@shop.example/p",
    "http://shop.example/p\nX-Injected: 1",
    "http://shop.example\\evil/p",
]


def _reason(url: str) -> str:
    with pytest.raises(InvalidUrl) as refused:
        parse_url(url)
    return str(refused.value)


@pytest.mark.parametrize("field", ["callback_url", "return_url"])
@pytest.mark.parametrize("url", UNDELIVERABLE)
def test_schema_refuses_what_the_sender_could_not_deliver(field: str, url: str) -> None:
    with pytest.raises(ValidationError) as refused:
        ReceiveRequest.model_validate({"amount": 1, field: url})
    [error] = refused.value.errors()
    assert error["loc"] == (field,)
    assert _reason(url) in error["msg"]


@pytest.mark.parametrize("url", [None, ""])
def test_absent_or_empty_url_means_none(url: str | None) -> None:
    assert ReceiveRequest.model_validate({"amount": 1, "callback_url": url}).callback_url is None


@pytest.fixture
def client(tmp_path: Path) -> TestClient:
    settings = Settings(sqlite=str(tmp_path / "x.sqlite3"))
    return TestClient(build_app(settings, Services.build(settings)))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"amount": 1, "description": "a\x00b"}, "description: must not contain NUL characters"),
        (
            {"amount": 1, "callback_url": "http://127.0.0.1:99999/p"},
            "callback_url: has a port that is not a number from 1 to 65535",
        ),
    ],
)
def test_field_errors_read_without_pydantic_prefix(
    client: TestClient, body: dict[str, object], message: str
) -> None:
    answer = client.post("/receive", json=body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["message"] == message
