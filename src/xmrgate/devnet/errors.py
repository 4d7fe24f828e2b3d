"""The one exception of the devnet package."""

from __future__ import annotations


class DevnetError(Exception):
    """Raised for any devnet failure: process start, RPC error object, bad state.

    ``code`` is the JSON-RPC error code when the failure came from an error
    object (``None`` for transport errors and process failures).
    """

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
