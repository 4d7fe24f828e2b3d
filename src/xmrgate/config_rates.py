"""The exchange-rate options of the gateway (docs/pricing.md); ``config.Settings`` has them.

Each field is an option ``--rate-...`` and an environment variable ``RATE_...``, like
every other setting. Values are checked here, at start-up, so a typo in a currency or a
source URL stops the gateway instead of failing every fiat-priced request later.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import BeforeValidator, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from xmrgate.domain.durations import parse_duration
from xmrgate.domain.errors import InvalidInput
from xmrgate.domain.fiat import RATE_SOURCE_NAMES, parse_currency, parse_source_urls
from xmrgate.domain.playground_rate import PLAYGROUND_RATE_SOURCE

# config.Duration, repeated: config.py imports this module, so importing it from there
# would make a loop.
Duration = Annotated[float, BeforeValidator(parse_duration)]


def _parse_fraction(value: Any) -> Any:
    """``"5%"`` -> 0.05; anything else goes on to pydantic's float parsing."""
    if isinstance(value, str) and value.strip().endswith("%"):
        try:
            return float(value.strip()[:-1]) / 100
        except ValueError as exc:
            raise ValueError(f"invalid percentage {value!r}") from exc
    return value


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


class RateSettings(BaseSettings):
    """Where exchange rates come from, how often, and when they are trusted."""

    model_config = SettingsConfigDict(case_sensitive=False, extra="ignore", env_prefix="")

    rate_sources: str = Field(
        ",".join(RATE_SOURCE_NAMES),
        description=(
            f"Exchange-rate sources to ask, comma-separated: {', '.join(RATE_SOURCE_NAMES)}."
        ),
    )
    rate_source_url: str | None = Field(
        None,
        description=(
            "Replace a rate source's scheme and host (a mirror, a proxy, a test server): "
            "NAME=BASE, comma-separated (e.g. kraken=http://127.0.0.1:8001); the paths "
            "stay the provider's."
        ),
    )
    rate_currencies: str = Field(
        "USD,EUR",
        description=(
            "Currencies prices may be given in, comma-separated ISO 4217 codes; "
            "empty: fiat prices off and no rate is fetched."
        ),
    )
    rate_refresh: Duration = Field(
        60.0, gt=0, description="How often the rates are fetched (Go duration, e.g. 60s)."
    )
    rate_max_age: Duration = Field(
        300.0,
        gt=0,
        description=(
            "A source's answer counts this long; must exceed --rate-refresh plus --rate-timeout."
        ),
    )
    rate_max_spread: Annotated[float, BeforeValidator(_parse_fraction)] = Field(
        0.05,
        gt=0,
        le=1,
        description=(
            "An answer further than this from the median of the fresh ones is dropped "
            "(a fraction, 0.05, or a percentage, 5%)."
        ),
    )
    rate_min_sources: int = Field(
        1, ge=1, description="Fewest agreeing fresh answers a rate needs."
    )
    rate_lock: Duration = Field(
        900.0,
        gt=0,
        description="How long a fiat price's rate holds: the longest expiry of such a request.",
    )
    rate_proxy: str | None = Field(
        None,
        description=(
            "Proxy for the rate calls, e.g. socks5h://127.0.0.1:9050 (Tor) or http://proxy:3128."
        ),
    )
    rate_timeout: Duration = Field(
        10.0, gt=0, description="Time one rate call may take, connect to last byte."
    )

    @field_validator("rate_sources")
    @classmethod
    def _sources_known(cls, value: str) -> str:
        names = [name.lower() for name in _names(value)]
        if not names:
            raise ValueError(f"name at least one source ({', '.join(RATE_SOURCE_NAMES)})")
        # The fixed playground rate is accepted here for ``xmrgate dev``; ``xmrgate serve``
        # refuses it with a message saying why (it is not a market price).
        known = (*RATE_SOURCE_NAMES, PLAYGROUND_RATE_SOURCE)
        unknown = [name for name in names if name not in known]
        if unknown:
            raise ValueError(
                f"unknown rate source {', '.join(unknown)} (known: {', '.join(RATE_SOURCE_NAMES)})"
            )
        if len(set(names)) != len(names):
            raise ValueError("a rate source is named twice")
        return ",".join(names)

    @field_validator("rate_source_url")
    @classmethod
    def _source_urls(cls, value: str | None) -> str | None:
        if value is not None:
            parse_source_urls(value)  # raises ValueError with the reason
        return value

    @field_validator("rate_currencies")
    @classmethod
    def _currencies_known(cls, value: str) -> str:
        codes: list[str] = []
        for code in _names(value):
            try:
                codes.append(parse_currency(code))
            except InvalidInput as exc:  # a client's error there, a setting's here
                raise ValueError(f"{code!r}: {exc}") from exc
        if len(set(codes)) != len(codes):
            raise ValueError("a currency is named twice")
        return ",".join(codes)

    @field_validator("rate_proxy")
    @classmethod
    def _proxy_url(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                parts = urlsplit(value)
                _ = parts.port
            except ValueError as exc:
                raise ValueError(f"invalid proxy URL: {exc}") from exc
            if parts.scheme not in ("http", "https", "socks5", "socks5h") or not parts.hostname:
                raise ValueError(
                    "must be an http(s)://, socks5:// or socks5h:// URL with a host, "
                    "e.g. socks5h://127.0.0.1:9050"
                )
        return value

    @model_validator(mode="after")
    def _consistent(self) -> RateSettings:
        # An answer arrives at most refresh + timeout after the previous one; a shorter
        # max age would let every answer go stale between two refreshes.
        if self.rate_max_age <= self.rate_refresh + self.rate_timeout:
            raise ValueError("--rate-max-age must exceed --rate-refresh plus --rate-timeout")
        if self.rate_min_sources > len(self.rate_source_names):
            raise ValueError("--rate-min-sources exceeds the number of --rate-sources")
        return self

    @property
    def rate_source_names(self) -> tuple[str, ...]:
        """``--rate-sources`` as names, in order."""
        return tuple(_names(self.rate_sources))

    @property
    def rate_source_bases(self) -> dict[str, str]:
        """``--rate-source-url`` as source name -> base URL (only the sources it names;
        a source named there but not in ``--rate-sources`` is not asked)."""
        return {} if self.rate_source_url is None else parse_source_urls(self.rate_source_url)

    @property
    def rate_currency_list(self) -> tuple[str, ...]:
        """``--rate-currencies`` as upper-case codes, in order (empty: fiat prices off)."""
        return tuple(_names(self.rate_currencies))
