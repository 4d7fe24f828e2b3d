"""``xmrgate status``: the running gateway at a glance, for an operator on SSH.

It asks the gateway's ``GET /status`` (the same figures as the dashboard's overview)
and prints one screen. The API key comes from ``XMRGATE_API_KEY`` (the key, or
``@FILE``) or ``--api-key-file``, never from the command line, where ``ps`` shows it
to every user of the machine. Exit status: 0 healthy, 1 answering but unhealthy,
2 no status (unreachable, refused key).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from xmrgate.domain.money import piconero_to_xmr

URL_ENV = "XMRGATE_URL"
KEY_ENV = "XMRGATE_API_KEY"
DEFAULT_URL = "http://127.0.0.1:5000"
HEALTHY, UNHEALTHY, NO_STATUS = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="xmrgate status",
        description="Summary of a running gateway (from its GET /status).",
        epilog=f"The API key (read scope) comes from {KEY_ENV} (the key or @FILE) or "
        "--api-key-file; it is never taken on the command line, where ps shows it.",
    )
    parser.add_argument(
        "--url", default=None, help=f"the gateway's base URL [{URL_ENV}] (default: {DEFAULT_URL})"
    )
    parser.add_argument(
        "--api-key-file",
        type=Path,
        default=None,
        help="file holding the API key (its first line; a 'KEY:scopes' entry works too)",
    )
    parser.add_argument("--json", action="store_true", help="print the JSON as it came")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to wait (10)")
    return parser


def read_key(file: Path | None, env: str | None) -> str | None:
    """The key from ``file`` or from the environment's value (``KEY`` or ``@FILE``).

    A line of an ``API_KEYS`` file (``KEY:read+receive``) gives its key; comments and
    blank lines are skipped.
    """
    if file is None and env and env.startswith("@"):
        file = Path(env[1:])
    if file is not None:
        try:
            lines = file.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise SystemExit(f"xmrgate status: cannot read {file}: {exc.strerror}") from None
        entries = [ln.strip() for ln in lines if ln.strip() and not ln.strip().startswith("#")]
        if not entries:
            raise SystemExit(f"xmrgate status: no key in {file}")
        return entries[0].split()[0].split(":")[0]
    return env.strip() if env else None


def fetch(url: str, key: str | None, timeout: float) -> dict[str, Any]:
    """GET /status; SystemExit(2) with the reason when there is no status to show."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        with httpx.Client(timeout=timeout, trust_env=False) as client:
            answer = client.get(url.rstrip("/") + "/status", headers=headers)
    except httpx.HTTPError as exc:
        print(f"xmrgate status: {url} did not answer: {type(exc).__name__}", file=sys.stderr)
        raise SystemExit(NO_STATUS) from None
    if answer.status_code != 200:
        try:
            message = str(answer.json().get("message", answer.text))
        except ValueError:
            message = answer.text[:200]
        hint = f" (set {KEY_ENV} or --api-key-file)" if answer.status_code == 401 else ""
        print(f"xmrgate status: HTTP {answer.status_code}: {message}{hint}", file=sys.stderr)
        raise SystemExit(NO_STATUS)
    body: dict[str, Any] = answer.json()
    return body


def _xmr(amount: int) -> str:
    return f"{piconero_to_xmr(amount)} XMR"


def _daemon_line(daemon: dict[str, Any]) -> str:
    """monerod's height and how far the wallet is behind it."""
    height = daemon.get("height")
    if height is None:
        return "height unknown (monerod did not answer)"
    behind = daemon.get("wallet_behind")
    if behind is None:
        return f"height {height}, the wallet's height is unknown"
    if behind == 0:
        return f"height {height}, the wallet is up to date"
    return f"height {height}, the wallet is {behind} blocks behind it"


def render(url: str, status: dict[str, Any]) -> str:
    """One screen of text from a ``GET /status`` body."""
    health = status["health"]
    healthy = health["status"] == 200
    lines = [f"xmrgate {status['version']} at {url}: {'healthy' if healthy else 'UNHEALTHY'}"]
    if health.get("message"):
        lines.append(f"  ! {health['message']}")
    for service, up in health["services"].items():
        lines.append(f"  {service:<14}{'up' if up else 'DOWN'}")
    wallet = status["wallet"]
    mode = wallet.get("mode") or "unknown"
    height = wallet.get("height")
    lines.append(f"  {'wallet':<14}{mode}, height {height if height is not None else 'unknown'}")
    sync = status["sync"]
    if sync["height"] is None:
        lines.append(f"  {'sync':<14}not synced yet")
    else:
        behind = sync.get("behind")
        lag = "?" if behind is None else str(behind)
        lines.append(f"  {'sync':<14}height {sync['height']}, {lag} blocks behind the wallet")
    # Only with --daemon-address: "behind the wallet" cannot tell a wallet stuck behind
    # the network, the daemon's height can.
    daemon = status.get("daemon")
    if daemon is not None:
        lines.append(f"  {'daemon':<14}{_daemon_line(daemon)}")
    balance = status["balance"]
    if balance is None:
        lines.append(f"  {'balance':<14}unknown")
    else:
        lines.append(
            f"  {'balance':<14}{_xmr(balance['total'])} total, {_xmr(balance['unlocked'])} unlocked"
        )
    callbacks = status["callbacks"]
    if callbacks is not None:
        lines.append(
            f"  {'callbacks':<14}{callbacks['pending']} pending, {callbacks['failed']} failed"
        )
    requests = status["payment_requests"]
    if requests is not None:
        counts = ", ".join(f"{n} {name}" for name, n in requests.items())
        lines.append(f"  {'requests':<14}{counts}")
    if status.get("address_pool") is not None:
        lines.append(f"  {'address pool':<14}{status['address_pool']} ready")
    lines.extend(f"  ! {problem}" for problem in status.get("problems", []))
    return "\n".join(lines)


def status_main(argv: Sequence[str]) -> None:
    """Entry of ``xmrgate status``; exits 0 healthy, 1 unhealthy, 2 without a status."""
    options = _parser().parse_args(list(argv))
    url = options.url or os.environ.get(URL_ENV) or DEFAULT_URL
    key = read_key(options.api_key_file, os.environ.get(KEY_ENV))
    body = fetch(url, key, options.timeout)
    print(json.dumps(body, indent=2) if options.json else render(url, body))
    raise SystemExit(HEALTHY if body["health"]["status"] == 200 else UNHEALTHY)
