"""``GET /receive/:address``'s parameters, declared and read without FastAPI's solving.

The route reads them itself (``web/api/receive.py``: FastAPI's dependency solving was a
third of the hottest read's CPU), so they are documented here as FastAPI
would generate them (``tests/unit/test_status_params.py`` compares both), and ``?min``
and ``?max`` are validated by the same pydantic rules FastAPI applied to
``Annotated[int | None, Query(ge=0, le=2**31 - 1)]``: a bad value raises the same
``RequestValidationError``, which the app answers as before (400, JSON).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import Field, TypeAdapter, ValidationError

# A block height in ?min= / ?max= (PostgreSQL's integer column holds up to 2**31 - 1).
HEIGHT_LIMIT = 2**31 - 1
_HEIGHT: TypeAdapter[int | None] = TypeAdapter(Annotated[int | None, Field(ge=0, le=HEIGHT_LIMIT)])


def _height_parameter(name: str) -> dict[str, Any]:
    schema = {"type": "integer", "maximum": HEIGHT_LIMIT, "minimum": 0}
    return {
        "name": name,
        "in": "query",
        "required": False,
        "schema": {"anyOf": [schema, {"type": "null"}], "title": name.title()},
    }


STATUS_PARAMETERS: list[dict[str, Any]] = [
    {
        "name": "address",
        "in": "path",
        "required": True,
        "schema": {"type": "string", "title": "Address"},
    },
    _height_parameter("min"),
    _height_parameter("max"),
]


def height_bound(request: Request, name: str) -> int | None:
    """The query's ``name`` as a block height (its last value, as FastAPI takes it);
    None when absent; RequestValidationError when it is not one."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    try:
        return _HEIGHT.validate_python(raw)
    except ValidationError as exc:
        errors = [{**error, "loc": ("query", name)} for error in exc.errors()]
        raise RequestValidationError(errors) from None
