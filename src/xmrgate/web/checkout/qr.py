"""The payment URI and its QR code (inline SVG, rendered on the server with segno)."""

from __future__ import annotations

from urllib.parse import quote

from xmrgate.domain.money import piconero_to_xmr

# Wallets show tx_description as a note; a long one only makes the QR code dense and
# hard to scan, so the URI carries at most this many UTF-8 bytes of it (whole
# characters). The page itself always shows the full description.
MAX_URI_DESCRIPTION_BYTES = 100


def uri_description(description: str) -> str:
    """The description as the payment URI carries it: cut to whole characters."""
    raw = description.encode("utf-8")
    if len(raw) <= MAX_URI_DESCRIPTION_BYTES:
        return description
    return raw[:MAX_URI_DESCRIPTION_BYTES].decode("utf-8", errors="ignore")


def payment_uri(address: str, amount: int, description: str = "") -> str:
    """``monero:<address>?tx_amount=<XMR>&tx_description=<percent-encoded>``.

    ``tx_amount`` is left out for an any-amount request (``amount == 0``) and
    ``tx_description`` when the description is empty. Every character of the
    description outside ``A-Za-z0-9_.-~`` is percent-encoded (UTF-8), spaces as ``%20``.
    """
    params = []
    if amount > 0:
        params.append(f"tx_amount={piconero_to_xmr(amount)}")
    if description:
        params.append(f"tx_description={quote(uri_description(description), safe='')}")
    query = "&".join(params)
    return f"monero:{address}" + (f"?{query}" if query else "")


def qr_svg(data: str, title: str = "") -> str:
    """``data`` as a QR code: an ``<svg>`` element to inline into HTML.

    Sized by its viewBox only (CSS decides the size); error correction at least M;
    a quiet zone of 4 modules as the standard asks. Raises ``segno.DataOverflowError``
    for data no QR code can hold.
    """
    # Imported on the first QR code, not with the app: segno (about 1.5 MB resident)
    # serves only the customers' pages, which a gateway may never show.
    import segno

    code = segno.make(data, error="m", micro=False)
    svg: str = code.svg_inline(
        scale=1,
        border=4,
        omitsize=True,
        svgclass="qr",
        lineclass=None,
        dark="#000",
        light="#fff",
        title=title or None,
    )
    return svg
