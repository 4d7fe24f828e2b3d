"""The exchange-rate options (config_rates.py): defaults, environment names, and the
values refused at start-up."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from xmrgate.config_rates import RateSettings


def test_defaults() -> None:
    settings = RateSettings()
    assert settings.rate_source_names == ("coingecko", "kraken", "cryptocompare")
    assert settings.rate_source_bases == {}
    assert settings.rate_currency_list == ("USD", "EUR")
    assert (settings.rate_refresh, settings.rate_max_age, settings.rate_lock) == (60, 300, 900)
    assert (settings.rate_max_spread, settings.rate_min_sources) == (0.05, 1)
    assert (settings.rate_proxy, settings.rate_timeout) == (None, 10)


def test_environment_names_are_the_upper_case_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {
        "RATE_SOURCES": "Kraken, coingecko",
        "RATE_SOURCE_URL": "kraken=http://127.0.0.1:8001/,coingecko=https://mirror.example/cg",
        "RATE_CURRENCIES": "eur, jpy",
        "RATE_REFRESH": "30s",
        "RATE_MAX_AGE": "2m",
        "RATE_MAX_SPREAD": "2.5%",
        "RATE_MIN_SOURCES": "2",
        "RATE_LOCK": "10m",
        "RATE_PROXY": "socks5h://127.0.0.1:9050",
        "RATE_TIMEOUT": "5s",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings = RateSettings()
    assert settings.rate_source_names == ("kraken", "coingecko")
    assert settings.rate_source_bases == {
        "kraken": "http://127.0.0.1:8001",
        "coingecko": "https://mirror.example/cg",
    }
    assert settings.rate_currency_list == ("EUR", "JPY")
    assert (settings.rate_refresh, settings.rate_max_age, settings.rate_lock) == (30, 120, 600)
    assert settings.rate_max_spread == pytest.approx(0.025)
    assert settings.rate_min_sources == 2
    assert settings.rate_proxy == "socks5h://127.0.0.1:9050"
    assert settings.rate_timeout == 5


def test_no_currency_turns_fiat_prices_off() -> None:
    assert RateSettings(rate_currencies="").rate_currency_list == ()


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"rate_sources": "binance"}, "unknown rate source binance"),
        ({"rate_sources": ""}, "at least one source"),
        ({"rate_sources": "kraken,kraken"}, "named twice"),
        ({"rate_source_url": "kraken=ftp://mirror"}, "http(s) URL with a host"),
        ({"rate_source_url": "binance=http://mirror"}, "unknown rate source 'binance'"),
        ({"rate_source_url": "http://mirror"}, "NAME=URL"),
        ({"rate_currencies": "EUR,XYZ"}, "unknown currency XYZ"),
        ({"rate_currencies": "EURO"}, "3-letter"),
        ({"rate_currencies": "eur,EUR"}, "named twice"),
        ({"rate_max_spread": "0"}, "greater than 0"),
        ({"rate_max_spread": "150%"}, "less than or equal to 1"),
        ({"rate_max_spread": "five%"}, "invalid percentage"),
        ({"rate_min_sources": 0}, "greater than or equal to 1"),
        ({"rate_min_sources": 4}, "exceeds the number of --rate-sources"),
        ({"rate_sources": "kraken", "rate_min_sources": 2}, "exceeds the number"),
        ({"rate_max_age": "70s"}, "must exceed --rate-refresh plus --rate-timeout"),
        ({"rate_refresh": "0s"}, "greater than 0"),
        ({"rate_timeout": "-1"}, "invalid duration"),
        ({"rate_proxy": "socks4://127.0.0.1:9050"}, "socks5h://"),
        ({"rate_proxy": "127.0.0.1:9050"}, "socks5h://"),
        ({"rate_proxy": "http://host:port"}, "invalid proxy URL"),
    ],
)
def test_bad_values_are_refused(values: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        RateSettings(**values)  # type: ignore[arg-type]
