"""The one ``MetaData`` every table of ``tables.py`` is registered in, and our column types.

Import tables (and ``metadata``) from ``tables.py``: importing it registers every table.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from sqlalchemy import MetaData, Text
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

from xmrgate.domain.fiat import Quote

log = logging.getLogger(__name__)

metadata = MetaData()


class QuoteText(TypeDecorator[Quote]):
    """A fiat price's quote (``domain/fiat.py``) stored as JSON text.

    Every query module gets the record's ``Quote`` without converting it itself.
    """

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: Quote | None, dialect: Dialect) -> str | None:
        """The quote as compact JSON, or NULL."""
        return None if value is None else json.dumps(value.to_json(), separators=(",", ":"))

    def process_result_value(self, value: Any, dialect: Dialect) -> Quote | None:
        """The stored quote; one edited by hand into something else reads as none (logged),
        so a request stays readable."""
        if value is None:
            return None
        try:
            return Quote.from_json(json.loads(value))
        except (ValueError, TypeError, AttributeError) as exc:
            log.error("payment request with an unreadable price %r: %s", value[:200], exc)
            return None
