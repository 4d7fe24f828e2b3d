"""Settings of the gateway: one object, built once by the entry point and passed down.

Every field is an option of ``xmrgate serve`` (``--kebab-name``) and an environment
variable (``UPPER_NAME``), the same names MoneroPay v2 uses where it has them, so a
MoneroPay deployment can switch by swapping the binary. The CLI flags are generated
from this model (``cli.py``), so the help text below is the documentation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import BeforeValidator, Field, SecretStr, field_validator
from pydantic_settings import SettingsConfigDict

from xmrgate.config_rates import RateSettings
from xmrgate.domain.callback_urls import AllowEntry, parse_allow_list
from xmrgate.domain.durations import parse_duration

Duration = Annotated[float, BeforeValidator(parse_duration)]

# monero-wallet-rpc's transfer priorities, by the names monero-wallet-cli uses.
PRIORITY_NAMES = {"default": 0, "unimportant": 1, "normal": 2, "elevated": 3, "priority": 4}

DEFAULT_SQLITE_PATH = Path("data") / "xmrgate.sqlite3"


def _parse_priority(value: Any) -> Any:
    if isinstance(value, str) and value.strip().lower() in PRIORITY_NAMES:
        return PRIORITY_NAMES[value.strip().lower()]
    return value


class Settings(RateSettings):
    """Configuration of one gateway process (the ``--rate-*`` options: ``config_rates.py``)."""

    model_config = SettingsConfigDict(case_sensitive=False, extra="ignore", env_prefix="")

    bind: str = Field("127.0.0.1:5000", description="Address and port to serve the HTTP API on.")
    rpc_address: str = Field(
        "http://127.0.0.1:18082/json_rpc", description="URL of monero-wallet-rpc's JSON-RPC."
    )
    rpc_username: str | None = Field(None, description="Username for wallet-rpc (HTTP digest).")
    rpc_password: SecretStr | None = Field(
        None, description="Password for wallet-rpc (HTTP digest)."
    )
    postgresql: str | None = Field(
        None, description="PostgreSQL URL (postgresql://user:pass@host:5432/db)."
    )
    sqlite: str | None = Field(
        None,
        description=f"SQLite file. With neither database given: {DEFAULT_SQLITE_PATH}.",
    )
    poll_frequency: Duration = Field(
        5.0, gt=0, description="How often the wallet is synced (Go duration, e.g. 5s)."
    )
    zero_conf: bool = Field(
        False, description="Send callbacks for transfers seen in the pool (0 confirmations)."
    )
    daemon_address: str | None = Field(
        None,
        description=(
            "monerod's RPC (http://host:port), optional: the daemon is asked every second "
            "(or every poll, when shorter) whether a block or pool transaction arrived, and "
            "the wallet is refreshed only then (and at least once a minute)."
        ),
    )
    daemon_zmq: str | None = Field(
        None,
        description=(
            "monerod's ZeroMQ publisher (its --zmq-pub, e.g. tcp://127.0.0.1:18083), "
            "optional: a sync starts as soon as a block or pool transaction is announced; "
            "the poll stays as the safety net."
        ),
    )
    log_format: Literal["pretty", "json"] = Field("pretty", description="pretty or json.")
    transfer_priority: Annotated[int, BeforeValidator(_parse_priority)] = Field(
        0,
        ge=0,
        le=4,
        description="Priority of payouts: 0-4 or default|unimportant|normal|elevated|priority.",
    )
    callback_secret: SecretStr | None = Field(
        None, description="Sign callbacks with HMAC-SHA256 (X-Xmrgate-Signature)."
    )
    callback_timeout: Duration = Field(
        10.0,
        gt=0,
        description=(
            "Total time one callback try may take: DNS, connect, TLS, request and answer "
            "(an event's claim lasts 30 s longer)."
        ),
    )
    callback_retry_base: Duration = Field(
        5.0, gt=0, description="First retry delay of a failed callback; doubles each try."
    )
    callback_retry_max_interval: Duration = Field(
        3600.0, gt=0, description="Longest gap between two tries of a callback."
    )
    callback_retry_for: Duration = Field(
        72 * 3600.0, gt=0, description="Give up on a callback (mark failed) after this long."
    )
    callback_concurrency: int = Field(
        16, ge=1, le=1000, description="Callbacks delivered at the same time, at most."
    )
    reorg_margin: int = Field(
        10, ge=0, le=1000, description="Blocks below the last synced height rescanned each tick."
    )
    wallet_timeout: Duration = Field(
        30.0, gt=0, description="Timeout of ordinary wallet-rpc calls."
    )
    transfer_timeout: Duration = Field(
        120.0, gt=0, description="Timeout of the wallet-rpc call that sends a payout."
    )
    public_url: str | None = Field(
        None,
        description=(
            "Public base URL of the gateway, path prefix included (https://shop.example/xmr "
            "behind a proxy): every link and redirect it hands out starts with it."
        ),
    )
    checkout: bool = Field(True, description="Serve the hosted checkout page under /pay/.")
    refund_auto_send: bool = Field(
        False,
        description=(
            "Send a refund as soon as the customer claims it (full wallet), instead of "
            "waiting for POST /refunds/{id}/send or the dashboard's button."
        ),
    )
    metrics: bool = Field(
        True, description="Serve Prometheus metrics at /metrics (read scope with API keys)."
    )
    admin: bool = Field(
        True, description="Serve the merchant dashboard at /admin (its data needs API keys)."
    )
    # Sized for bursts: 200 requests in a row come from the pool, at the
    # database's speed; past it the wallet's create_address rate (~120-160/s) bounds them.
    address_pool_size: int = Field(
        250,
        ge=0,
        le=10_000,
        description="Subaddresses kept ready for POST /receive (0: ask the wallet each time).",
    )
    address_pool_low_water: int = Field(
        150, ge=0, description="Refill the address pool when it holds this many or fewer."
    )
    idempotency_ttl: Duration = Field(
        24 * 3600.0, gt=0, description="How long Idempotency-Key answers are kept."
    )
    idempotency_lease: Duration = Field(
        10.0,
        ge=1.0,
        le=600.0,
        description=(
            "How long a running Idempotency-Key stays claimed without its process renewing "
            "it (every third of this); after that another process answers or takes it over."
        ),
    )
    lookahead_check_interval: Duration = Field(
        60.0,
        gt=0,
        le=86400.0,
        description=(
            "Seconds between two full checks that every store account's subaddress table "
            "reaches the highest index handed out (also at start and after each reopen)."
        ),
    )
    retention: Duration = Field(
        90 * 24 * 3600.0,
        gt=0,
        description="Delete delivered/failed callback events older than this (hourly).",
    )
    link_prune_after: Duration = Field(
        7 * 24 * 3600.0,
        gt=0,
        description=(
            "Delete requests made by payment links that expired this long ago with nothing "
            "ever received (hourly). A payment to one after that is in the wallet only."
        ),
    )
    api_keys: SecretStr | None = Field(
        None,
        description=(
            "Require bearer API keys: 'KEY[:scope+scope] ...' (scopes read, receive, "
            "transfer, refund, pos, admin; none = all) or '@FILE' with one key or "
            "sha256:<hex>[:scopes] per line."
        ),
        json_schema_extra={"flag": "api-key"},
    )
    allow_public_unauthenticated: bool = Field(
        False, description="Allow binding a non-loopback address without API keys."
    )
    callback_allow: str | None = Field(
        None,
        description=(
            "Internal destinations that callback and return URLs may use anyway "
            "(loopback, private, link-local ... addresses are refused otherwise): "
            "comma-separated host, host:port, *.example.com, [::1]:8000 or a CIDR "
            "such as 10.0.0.0/8; a port, when given, must match."
        ),
    )
    workers: int = Field(
        1,
        ge=1,
        le=64,
        description="Gateway processes (PostgreSQL only); they share sync and callbacks safely.",
    )
    max_body_bytes: int = Field(
        65536, ge=1024, le=10 * 1024 * 1024, description="Largest request body accepted."
    )

    @field_validator("rpc_address")
    @classmethod
    def _http_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("must be an http(s) URL")
        return value

    @field_validator("public_url")
    @classmethod
    def _public_base(cls, value: str | None) -> str | None:
        # Every link handed out starts with it: a query, fragment or missing scheme would
        # break them all, so it is refused at start rather than served.
        if not value or not value.strip():
            return None
        try:
            parts = urlsplit(value.strip())
            _ = parts.port  # a port that is not a number raises ValueError
        except ValueError as exc:
            raise ValueError(f"invalid URL: {exc}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http(s) URL with a host, e.g. https://shop.example/xmr")
        if parts.query or parts.fragment or parts.username is not None:
            raise ValueError("must not carry a query, fragment or credentials")
        return value.strip().rstrip("/")

    @field_validator("daemon_address")
    @classmethod
    def _daemon_url(cls, value: str | None) -> str | None:
        if value is not None:
            parts = urlsplit(value)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError("must be an http(s) URL, e.g. http://127.0.0.1:18081")
        return value

    @field_validator("daemon_zmq")
    @classmethod
    def _zmq_url(cls, value: str | None) -> str | None:
        if value is not None:
            scheme, sep, rest = value.partition("://")
            if not sep or scheme not in ("tcp", "ipc") or not rest:
                raise ValueError("must be tcp://host:port or ipc://path, as monerod's --zmq-pub")
        return value

    @field_validator("api_keys")
    @classmethod
    def _api_keys_parse(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            from xmrgate.domain.api_keys import parse_api_keys

            try:
                parse_api_keys(value.get_secret_value())
            except OSError as exc:
                raise ValueError(f"cannot read the API key file: {exc.strerror}") from None
        return value

    @field_validator("callback_allow")
    @classmethod
    def _callback_allow_parse(cls, value: str | None) -> str | None:
        parse_allow_list(value)  # raises ValueError naming the bad entry
        return value

    @field_validator("bind")
    @classmethod
    def _host_port(cls, value: str) -> str:
        _host, sep, port = value.rpartition(":")
        if not sep or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError("must be host:port, e.g. 127.0.0.1:5000")
        return value

    @property
    def callback_allow_entries(self) -> tuple[AllowEntry, ...]:
        """The parsed ``--callback-allow`` entries (empty: no internal destination)."""
        return parse_allow_list(self.callback_allow)

    @property
    def bind_is_loopback(self) -> bool:
        """True when the gateway listens on a loopback address only."""
        host = self.bind_host
        return host == "localhost" or host.startswith("127.") or host == "::1"

    @property
    def bind_host(self) -> str:
        """Host part of ``bind`` (brackets of an IPv6 literal removed)."""
        return self.bind.rpartition(":")[0].strip("[]") or "0.0.0.0"

    @property
    def bind_port(self) -> int:
        """Port part of ``bind``."""
        return int(self.bind.rpartition(":")[2])

    @property
    def database_kind(self) -> Literal["postgresql", "sqlite"]:
        """Which database backs the store; the health report names it."""
        return "postgresql" if self.postgresql else "sqlite"

    def to_json(self) -> str:
        """All settings as JSON, secrets included (worker processes read it from a 0600 file)."""
        values = {
            k: (v.get_secret_value() if isinstance(v, SecretStr) else v)
            for k, v in self.model_dump().items()
        }
        return json.dumps(values)

    def database_url(self) -> str:
        """SQLAlchemy async URL for the configured database."""
        if self.postgresql:
            return postgres_async_url(self.postgresql)
        path = Path(self.sqlite) if self.sqlite else DEFAULT_SQLITE_PATH
        return f"sqlite+aiosqlite:///{path}"


def postgres_async_url(url: str) -> str:
    """Turn a libpq-style URL (as MoneroPay takes it) into an asyncpg SQLAlchemy URL.

    ``sslmode`` is libpq's spelling; asyncpg calls it ``ssl``. ``sslmode=disable`` is
    asyncpg's default and is dropped.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql", "postgresql+asyncpg"):
        raise ValueError("POSTGRESQL must be a postgresql:// URL")
    query = []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key == "sslmode":
            if value != "disable":
                query.append(("ssl", value))
        else:
            query.append((key, value))
    return urlunsplit(("postgresql+asyncpg", parts.netloc, parts.path, urlencode(query), ""))
