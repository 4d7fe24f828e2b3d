"""Several worker processes (``--workers N``) without secrets in their environment.

uvicorn starts each worker as a fresh process that must rebuild the same Settings,
secrets included. An environment variable would show them to anyone who can read
``/proc/<pid>/environ`` of any worker for its whole life; instead the parent writes
them to a file only its user can read, in a private directory, and passes its path.
The file is removed when the parent exits.

Writing the file is not enough: uvicorn spawns the workers (multiprocessing's "spawn"
context, a fork and exec) with the parent's environment, so the variables the operator
set (``API_KEYS``, ``CALLBACK_SECRET``, ``RPC_PASSWORD``, ``POSTGRESQL`` with its
password, ...) would reach every worker all the same. Once the file is written, the
parent removes them from its own environment before uvicorn starts anything.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

from fastapi import FastAPI

from xmrgate.config import Settings

SETTINGS_FILE_ENV = "XMRGATE_SETTINGS_FILE"
# prometheus-client's multiprocess mode (also read in lower case): see adapters/metrics.py.
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def hand_settings_to_workers(settings: Settings) -> Path:
    """Write the settings to a private 0600 file, point the workers at it, and take the
    settings' variables out of the environment the workers will inherit."""
    folder = Path(tempfile.mkdtemp(prefix="xmrgate-"))  # mode 0700
    path = folder / "settings.json"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(settings.to_json())
    atexit.register(shutil.rmtree, folder, True)
    os.environ[SETTINGS_FILE_ENV] = str(path)
    # os.environ also unsets them in the C environment that the spawned workers get.
    for name in settings_variables(os.environ):
        del os.environ[name]
    return path


def settings_variables(names: Iterable[str]) -> list[str]:
    """The names among ``names`` that Settings reads (in any case, as it does).

    Every setting, not only the secret ones: the workers take all of them from the
    file, and a secret field added later cannot be forgotten in a list here.
    """
    fields = set(Settings.model_fields)
    return [name for name in names if name.lower() in fields]


def give_workers_a_metrics_dir() -> Path:
    """A private directory for prometheus-client's multiprocess files, removed at exit.

    Set in the environment before uvicorn starts the workers, so that prometheus-client
    chooses multiprocess mode when they import it; a scrape of any worker then adds up
    the counters of all of them. A directory the operator set is not used: files left by
    an earlier run would be counted again.
    """
    folder = Path(tempfile.mkdtemp(prefix="xmrgate-metrics-"))  # mode 0700
    atexit.register(shutil.rmtree, folder, True)
    os.environ.pop(MULTIPROC_ENV.lower(), None)
    os.environ[MULTIPROC_ENV] = str(folder)
    return folder


def app_from_settings_file() -> FastAPI:
    """App factory for uvicorn worker processes: settings come from the parent's file."""
    from xmrgate.runtime.app import build_app
    from xmrgate.runtime.logs import setup_logging

    settings = settings_from_file()
    setup_logging(settings.log_format)
    return build_app(settings)


def settings_from_file() -> Settings:
    """The parent's settings, secrets included, from the file its environment names."""
    path = Path(os.environ[SETTINGS_FILE_ENV])
    return Settings(**json.loads(path.read_text(encoding="utf-8")))
