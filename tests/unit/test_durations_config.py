"""Tests of Go-style duration parsing and of Settings built from the environment."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from xmrgate.config import Settings, postgres_async_url
from xmrgate.domain.durations import format_duration, parse_duration

# --------------------------------------------------------------------------- parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("5s", 5.0, id="seconds"),
        pytest.param("500ms", 0.5, id="milliseconds"),
        pytest.param("1m30s", 90.0, id="minutes-and-seconds"),
        pytest.param("72h", 72 * 3600.0, id="hours"),
        pytest.param("1h30m", 5400.0, id="hours-and-minutes"),
        pytest.param("1.5h", 5400.0, id="fractional-hours"),
        pytest.param("250us", 250e-6, id="microseconds"),
        pytest.param("250µs", 250e-6, id="microseconds-micro-sign"),
        pytest.param("100ns", 100e-9, id="nanoseconds"),
        pytest.param("1.5", 1.5, id="bare-number-is-seconds"),
        pytest.param("5", 5.0, id="bare-integer"),
        pytest.param("0", 0.0, id="zero"),
        pytest.param("0s", 0.0, id="zero-seconds"),
        pytest.param(" 5s ", 5.0, id="surrounding-whitespace"),
        pytest.param(3, 3.0, id="int"),
        pytest.param(2.5, 2.5, id="float"),
    ],
)
def test_parse_duration(text: str | float, seconds: float) -> None:
    """Go durations and bare numbers parse to seconds."""
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("   ", id="blank"),
        pytest.param("s", id="unit-only"),
        pytest.param("5x", id="unknown-unit"),
        pytest.param("5 s", id="space-inside"),
        pytest.param("1m30", id="trailing-number"),
        pytest.param("5s5", id="trailing-digit"),
        pytest.param("abc", id="word"),
        pytest.param("5S", id="upper-case-unit"),
        pytest.param("1d", id="days-not-go"),
        pytest.param("nan", id="nan"),
        pytest.param("inf", id="infinity"),
    ],
)
def test_parse_duration_rejects_garbage(text: str) -> None:
    """Anything that is neither a Go duration nor a plain number raises ValueError."""
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("-1", id="negative-bare"),
        pytest.param("-5s", id="negative-go"),
        pytest.param("-0.5", id="negative-fraction"),
        pytest.param(-1, id="negative-int"),
        pytest.param(-0.5, id="negative-float"),
    ],
)
def test_parse_duration_rejects_negative(value: str | float) -> None:
    """Negative durations raise ValueError."""
    with pytest.raises(ValueError):
        parse_duration(value)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        pytest.param(5.0, "5s", id="seconds"),
        pytest.param(90.0, "90s", id="not-whole-minutes"),
        pytest.param(120.0, "2m", id="minutes"),
        pytest.param(3600.0, "1h", id="hour"),
        pytest.param(72 * 3600.0, "72h", id="hours"),
        pytest.param(0.5, "0.5s", id="fraction"),
    ],
)
def test_format_duration_round_trips(seconds: float, text: str) -> None:
    """format_duration renders compactly and parses back to the same seconds."""
    assert format_duration(seconds) == text
    assert parse_duration(text) == pytest.approx(seconds)


# --------------------------------------------------------------------------- Settings


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings read only what each test sets: drop any inherited variable of ours."""
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
        monkeypatch.delenv(name, raising=False)


def test_settings_defaults() -> None:
    """Without environment, Settings use MoneroPay's defaults."""
    settings = Settings()
    assert settings.bind == "127.0.0.1:5000"
    assert (settings.bind_host, settings.bind_port) == ("127.0.0.1", 5000)
    assert settings.rpc_address == "http://127.0.0.1:18082/json_rpc"
    assert settings.poll_frequency == 5.0
    assert settings.zero_conf is False
    assert settings.transfer_priority == 0
    assert settings.postgresql is None
    assert settings.sqlite is None
    assert settings.database_kind == "sqlite"


@pytest.mark.parametrize(
    ("env", "value", "attribute", "expected"),
    [
        pytest.param("BIND", "0.0.0.0:8080", "bind", "0.0.0.0:8080", id="bind"),
        pytest.param(
            "RPC_ADDRESS",
            "https://wallet.example:28088/json_rpc",
            "rpc_address",
            "https://wallet.example:28088/json_rpc",
            id="rpc-address",
        ),
        pytest.param("POLL_FREQUENCY", "2s", "poll_frequency", 2.0, id="poll-frequency-go"),
        pytest.param("POLL_FREQUENCY", "250ms", "poll_frequency", 0.25, id="poll-frequency-ms"),
        pytest.param("POLL_FREQUENCY", "3", "poll_frequency", 3.0, id="poll-frequency-bare"),
        pytest.param("ZERO_CONF", "true", "zero_conf", True, id="zero-conf-true"),
        pytest.param("ZERO_CONF", "1", "zero_conf", True, id="zero-conf-1"),
        pytest.param("ZERO_CONF", "false", "zero_conf", False, id="zero-conf-false"),
        pytest.param("TRANSFER_PRIORITY", "elevated", "transfer_priority", 3, id="priority-name"),
        pytest.param("TRANSFER_PRIORITY", "Priority", "transfer_priority", 4, id="priority-case"),
        pytest.param("TRANSFER_PRIORITY", "2", "transfer_priority", 2, id="priority-number"),
        pytest.param(
            "POSTGRESQL",
            "postgresql://u:p@db:5432/pay",
            "postgresql",
            "postgresql://u:p@db:5432/pay",
            id="postgresql",
        ),
        pytest.param("SQLITE", "/var/lib/x.db", "sqlite", "/var/lib/x.db", id="sqlite"),
        pytest.param("CALLBACK_RETRY_FOR", "1h", "callback_retry_for", 3600.0, id="retry-for"),
        pytest.param("bind", "127.0.0.1:6000", "bind", "127.0.0.1:6000", id="lower-case-name"),
    ],
)
def test_settings_from_env(
    monkeypatch: pytest.MonkeyPatch, env: str, value: str, attribute: str, expected: object
) -> None:
    """Each option is read from its MoneroPay-style environment variable."""
    monkeypatch.setenv(env, value)
    assert getattr(Settings(), attribute) == expected


@pytest.mark.parametrize(
    ("bind", "host", "port"),
    [
        pytest.param("0.0.0.0:8080", "0.0.0.0", 8080, id="ipv4"),
        pytest.param("[::1]:5000", "::1", 5000, id="ipv6"),
        pytest.param(":5000", "0.0.0.0", 5000, id="port-only"),
        pytest.param("localhost:65535", "localhost", 65535, id="max-port"),
    ],
)
def test_bind_host_and_port(
    monkeypatch: pytest.MonkeyPatch, bind: str, host: str, port: int
) -> None:
    """BIND splits into host and port; an empty host means all interfaces."""
    monkeypatch.setenv("BIND", bind)
    settings = Settings()
    assert (settings.bind_host, settings.bind_port) == (host, port)


@pytest.mark.parametrize(
    ("env", "value"),
    [
        pytest.param("BIND", "localhost", id="bind-no-port"),
        pytest.param("BIND", "127.0.0.1", id="bind-ip-only"),
        pytest.param("BIND", "127.0.0.1:", id="bind-empty-port"),
        pytest.param("BIND", "127.0.0.1:0", id="bind-port-0"),
        pytest.param("BIND", "127.0.0.1:65536", id="bind-port-too-big"),
        pytest.param("BIND", "127.0.0.1:http", id="bind-port-name"),
        pytest.param("RPC_ADDRESS", "127.0.0.1:18082", id="rpc-no-scheme"),
        pytest.param("RPC_ADDRESS", "ftp://127.0.0.1/json_rpc", id="rpc-ftp"),
        pytest.param("RPC_ADDRESS", "http://", id="rpc-no-host"),
        pytest.param("RPC_ADDRESS", "json_rpc", id="rpc-path-only"),
        pytest.param("POLL_FREQUENCY", "fast", id="poll-not-duration"),
        pytest.param("POLL_FREQUENCY", "0s", id="poll-zero"),
        pytest.param("POLL_FREQUENCY", "-1s", id="poll-negative"),
        pytest.param("TRANSFER_PRIORITY", "urgent", id="priority-unknown-name"),
        pytest.param("TRANSFER_PRIORITY", "5", id="priority-too-high"),
        pytest.param("LOG_FORMAT", "xml", id="log-format"),
    ],
)
def test_invalid_settings_rejected(monkeypatch: pytest.MonkeyPatch, env: str, value: str) -> None:
    """Malformed options fail validation when Settings are built."""
    monkeypatch.setenv(env, value)
    with pytest.raises(ValidationError):
        Settings()


@pytest.mark.parametrize(
    ("postgresql", "url"),
    [
        pytest.param(
            "postgresql://u:p@db:5432/pay",
            "postgresql+asyncpg://u:p@db:5432/pay",
            id="plain",
        ),
        pytest.param(
            "postgres://u:p@db/pay",
            "postgresql+asyncpg://u:p@db/pay",
            id="postgres-scheme",
        ),
        pytest.param(
            "postgresql://u:p@db:5432/pay?sslmode=disable",
            "postgresql+asyncpg://u:p@db:5432/pay",
            id="sslmode-disable-dropped",
        ),
        pytest.param(
            "postgresql://u:p@db:5432/pay?sslmode=require",
            "postgresql+asyncpg://u:p@db:5432/pay?ssl=require",
            id="sslmode-require-to-ssl",
        ),
        pytest.param(
            "postgresql://u:p@db/pay?application_name=x&sslmode=verify-full",
            "postgresql+asyncpg://u:p@db/pay?application_name=x&ssl=verify-full",
            id="other-params-kept",
        ),
        pytest.param(
            "postgresql+asyncpg://u:p@db/pay",
            "postgresql+asyncpg://u:p@db/pay",
            id="already-asyncpg",
        ),
    ],
)
def test_database_url_postgresql(
    monkeypatch: pytest.MonkeyPatch, postgresql: str, url: str
) -> None:
    """POSTGRESQL becomes an asyncpg URL with libpq's sslmode translated."""
    monkeypatch.setenv("POSTGRESQL", postgresql)
    settings = Settings()
    assert settings.database_kind == "postgresql"
    assert settings.database_url() == url


def test_postgresql_wins_over_sqlite(monkeypatch: pytest.MonkeyPatch) -> None:
    """With both databases configured, PostgreSQL is used."""
    monkeypatch.setenv("POSTGRESQL", "postgresql://u:p@db/pay")
    monkeypatch.setenv("SQLITE", "/tmp/x.sqlite3")
    settings = Settings()
    assert settings.database_kind == "postgresql"
    assert settings.database_url() == "postgresql+asyncpg://u:p@db/pay"


def test_postgres_async_url_rejects_other_schemes() -> None:
    """A non-PostgreSQL URL is refused."""
    with pytest.raises(ValueError):
        postgres_async_url("mysql://u:p@db/pay")


@pytest.mark.parametrize(
    ("sqlite", "url"),
    [
        pytest.param(None, "sqlite+aiosqlite:///data/xmrgate.sqlite3", id="default"),
        pytest.param("/var/lib/xmrgate.db", "sqlite+aiosqlite:////var/lib/xmrgate.db", id="abs"),
        pytest.param("pay.sqlite3", "sqlite+aiosqlite:///pay.sqlite3", id="relative"),
    ],
)
def test_database_url_sqlite(monkeypatch: pytest.MonkeyPatch, sqlite: str | None, url: str) -> None:
    """SQLITE (default data/xmrgate.sqlite3) becomes an aiosqlite URL."""
    if sqlite is not None:
        monkeypatch.setenv("SQLITE", sqlite)
    settings = Settings()
    assert settings.database_kind == "sqlite"
    assert settings.database_url() == url
