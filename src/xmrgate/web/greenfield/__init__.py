"""BTCPay Server's Greenfield API v1 as a second facade over the same use cases.

The routes live under ``/api/v1`` and answer in Greenfield's shapes (docs/greenfield.md):
its auth header (``token``/``Bearer``), its error bodies, 200 on every success.
They are left out of our OpenAPI schema: the MoneroPay contract the fuzzer holds us to
stays what it was. The pure translations (permissions, errors, payment method ids) are
``domain/greenfield``; this package is the HTTP side only.

- ``auth``: the ``Authorization`` header and the permissions a key holds;
- ``errors``: every failure on an ``/api/v1`` path, in Greenfield's bodies;
- ``access``: the ``require_permission`` dependency of store-scoped routes;
- ``store_data``: our store as Greenfield's ``StoreData`` and its payment methods;
- ``server``, ``stores``: the read routes; ``routes``: the routers ``create_app`` adds.
"""

from __future__ import annotations

PREFIX = "/api/v1"


def is_greenfield(path: str) -> bool:
    """Whether ``path`` is one of Greenfield's (``/api/v1`` or below it)."""
    return path == PREFIX or path.startswith(PREFIX + "/")
