"""The Monero payment method id and its spellings.

BTCPay ≥ 2.0 names Monero on-chain ``XMR-CHAIN`` and is lenient when it reads an id
(BTCPay's ``PaymentMethodId.TryParse``): surrounding blanks are trimmed, the id is split
on ``_`` and ``-`` with empty parts dropped, the crypto code matches case-insensitively,
and the payment type is one of its legacy names, also case-insensitive. So ``XMR``,
``xmr``, ``XMR_CHAIN`` (what WooCommerce sends), ``XMR-MoneroLike``, ``XMR_OnChain`` are
all ``XMR-CHAIN``. We serve that one method: a Lightning type, another coin, or three
parts is refused with the value that was sent.
"""

from __future__ import annotations

import re

from xmrgate.domain.greenfield.errors import FieldError

XMR_CHAIN = "XMR-CHAIN"
CRYPTO_CODE = "XMR"
# The second parts BTCPay reads as an on-chain type (its legacy names: BTCLike, OnChain,
# BitcoinLike, MoneroLike, ZcashLike), plus CHAIN itself, which is today's name. The
# comparison is case-insensitive, so they are kept lower-case.
CHAIN_TYPES = frozenset({"chain", "onchain", "btclike", "bitcoinlike", "monerolike", "zcashlike"})
_SEPARATORS = re.compile(r"[_-]")


def parse_payment_method(value: object, path: str = "paymentMethodId") -> str:
    """``value`` as the canonical id ``"XMR-CHAIN"``, or a ``FieldError`` at ``path``.

    The error carries the offending value (``FieldError.value``) and says which id we
    serve, so a shop's log line is enough to fix its settings.
    """
    if isinstance(value, str):
        parts = [p for p in _SEPARATORS.split(value.strip()) if p]
        known_type = len(parts) == 1 or (len(parts) == 2 and parts[1].lower() in CHAIN_TYPES)
        if parts and parts[0].upper() == CRYPTO_CODE and known_type:
            return XMR_CHAIN
    raise FieldError(
        path, f"Invalid payment method {value!r}: this gateway serves {XMR_CHAIN} only", value
    )


def parse_payment_methods(value: object, path: str = "checkout.paymentMethods") -> tuple[str, ...]:
    """``checkout.paymentMethods``: null or ``[]`` is every method the store has (BTCPay's
    meaning), so ``("XMR-CHAIN",)``; otherwise each item must parse (an error names
    ``path[i]``) and duplicates collapse (``["XMR", "XMR_CHAIN"]`` is one method).
    """
    if value is None:
        return (XMR_CHAIN,)
    if not isinstance(value, list):
        raise FieldError(path, f"{path} must be a list of payment method ids or null", value)
    for index, item in enumerate(value):
        parse_payment_method(item, f"{path}[{index}]")
    return (XMR_CHAIN,)
