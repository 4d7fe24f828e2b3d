"""The files of deploy/: systemd units verified by systemd-analyze, alert rules by promtool.

Both tools come from Debian (``systemd``, ``prometheus``: scripts/install-system-deps);
a missing tool fails these tests with the package to install, it never skips them.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from xmrgate.adapters.metrics import PrometheusMetrics
from xmrgate.core.overview import DaemonFacts, StoreFacts

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
PROMETHEUS = DEPLOY / "prometheus"
ALERTS = PROMETHEUS / "xmrgate-alerts.yml"
# The tests of the rules, and a scrape config that loads them.
ALERT_TESTS = PROMETHEUS / "xmrgate-alerts.test.yml"
SCRAPE_CONFIG = PROMETHEUS / "prometheus.yml"
# systemd-analyze's exposure score (0-100 here, 10 per point of its 0-10 scale): "OK" <= 2.0.
MAX_EXPOSURE = "20"


def tool(name: str, package: str) -> str:
    """The path of a tool, or a failure naming the Debian package that has it."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is missing: apt-get install {package} (scripts/install-system-deps)")
    return path


def unit_copy(tmp_path: Path, name: str, binary: str, real: str) -> Path:
    """The unit with its ExecStart binary replaced by one that exists on this machine
    (systemd-analyze refuses a unit whose program is missing)."""
    text = (DEPLOY / name).read_text()
    assert binary in text
    copy = tmp_path / name
    copy.write_text(text.replace(binary, real))
    return copy


def units(tmp_path: Path) -> list[Path]:
    xmrgate = Path(sys.executable).with_name("xmrgate")
    assert xmrgate.exists(), f"{xmrgate}: pip install -e . first"
    return [
        unit_copy(tmp_path, "xmrgate.service", "/opt/xmrgate/bin/xmrgate", str(xmrgate)),
        unit_copy(
            tmp_path,
            "monero-wallet-rpc.service",
            "/usr/bin/monero-wallet-rpc",
            tool("monero-wallet-rpc", "monero"),
        ),
    ]


def verify(analyze: str, unit: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [analyze, "verify", str(unit)], capture_output=True, text=True, timeout=60
    )


def test_systemd_units_verify_cleanly(tmp_path: Path) -> None:
    """No error and no warning (an unknown or misspelt option is only a warning)."""
    analyze = tool("systemd-analyze", "systemd")
    for unit in units(tmp_path):
        done = verify(analyze, unit)
        assert done.returncode == 0 and not done.stderr.strip(), f"{unit.name}: {done.stderr}"
    # The check itself can fail: a misspelt option is reported.
    broken = tmp_path / "broken.service"
    broken.write_text(units(tmp_path)[0].read_text().replace("ProtectSystem=", "ProtectSystm="))
    assert "Unknown key" in verify(analyze, broken).stderr


def test_systemd_units_are_sandboxed(tmp_path: Path) -> None:
    """Own user, read-only system, no new privileges, a state directory, restart on failure,
    and systemd's own exposure score "OK"."""
    analyze = tool("systemd-analyze", "systemd")
    for unit in units(tmp_path):
        text = unit.read_text()
        for line in [
            "ProtectSystem=strict",
            "NoNewPrivileges=yes",
            "Restart=on-failure",
            "PrivateTmp=yes",
            "CapabilityBoundingSet=\n",
        ]:
            assert line in text, f"{unit.name}: {line!r}"
        assert re.search(r"^User=(xmrgate|monero-wallet)$", text, re.M), unit.name
        assert re.search(r"^StateDirectory=\S+$", text, re.M), unit.name
        done = subprocess.run(
            [analyze, "security", "--offline=yes", f"--threshold={MAX_EXPOSURE}", str(unit)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        score = done.stdout.strip().splitlines()[-1]
        assert done.returncode == 0, f"{unit.name}: {score}"


def test_alert_rules_pass_promtool(tmp_path: Path) -> None:
    """The rules parse, their own tests (each alert fires on its series) pass, and the
    scrape config that loads them is valid."""
    promtool = tool("promtool", "prometheus")
    for args in (["check", "rules", str(ALERTS)], ["test", "rules", str(ALERT_TESTS)]):
        done = subprocess.run(
            [promtool, *args], capture_output=True, text=True, timeout=60, cwd=PROMETHEUS
        )
        assert done.returncode == 0, done.stdout + done.stderr
    key = tmp_path / "xmrgate-read-key"
    key.write_text("a-read-key-0123456789\n")
    config = tmp_path / "prometheus.yml"
    config.write_text(
        SCRAPE_CONFIG.read_text()
        .replace("/etc/prometheus/xmrgate-read-key", str(key))
        .replace("xmrgate-alerts.yml", str(ALERTS))
    )
    done = subprocess.run(
        [promtool, "check", "config", str(config)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr


def exported_names() -> set[str]:
    """Every series name xmrgate exports (histogram and counter suffixes included)."""
    facts = StoreFacts(1, 0, 0, {}, address_pool=5)
    # As with --daemon-address: the daemon's gauges exist only then.
    text = PrometheusMetrics().exposition(facts, DaemonFacts(height=7))[0].decode()
    names: set[str] = set()
    for family in text_string_to_metric_families(text):
        names.add(family.name)
        suffixes = {
            "counter": ["_total", "_created"],
            "histogram": ["_bucket", "_count", "_sum", "_created"],
        }.get(family.type, [])
        names.update(family.name + suffix for suffix in suffixes)
    return names


def test_alert_rules_name_metrics_that_exist() -> None:
    """A renamed metric would silence an alert for ever: every name in an expr is exported."""
    rules = yaml.safe_load(ALERTS.read_text())["groups"][0]["rules"]
    exported = exported_names()
    used = {name for rule in rules for name in re.findall(r"\bxmrgate_\w+", rule["expr"])}
    assert used, "the rules use xmrgate's metrics"
    assert used <= exported, f"not exported: {sorted(used - exported)}"
    assert "xmrgate_no_such_metric_total" not in exported
