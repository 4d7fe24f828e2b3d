"""Which URLs the gateway may call back (or hand to a customer's browser): pure rules.

Three parts, all without I/O:

- ``parse_url``: THE parser of ``callback_url`` and ``return_url``. ``POST /receive``
  refuses what it refuses, and the delivering adapter builds its request from the
  ``Target`` it returns (never from the raw text), so a URL that was accepted is
  exactly the URL that is delivered.
- ``classify``: names why an IP address is internal (loopback, private, ...), or None
  for a public one.
- ``AllowEntry`` / ``parse_allow_list``: the ``--callback-allow`` entries that permit an
  otherwise refused internal destination, and ``refusal`` that puts it all together.

Numeric hosts are read the way browsers (WHATWG URL) and ``inet_aton`` read them:
``http://2130706433/``, ``http://0x7f.1/`` and ``http://0177.0.0.1/`` all mean
127.0.0.1 and are classified as such, not looked up as names.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_URL = 2048
_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")
# Everything a URL may not contain anywhere: C0 controls, space, DEL, C1 controls.
_FORBIDDEN = re.compile(r"[\x00-\x20\x7f-\x9f]")
_IPV4_NUMBER = re.compile(r"^(0[xX][0-9a-fA-F]*|[0-9]+)$")


class InvalidUrl(ValueError):
    """The text is not a URL the gateway can call; the message says why (no secrets)."""


@dataclass(frozen=True, slots=True)
class Target:
    """A parsed http(s) URL, as it will be requested.

    ``host`` is lower-case ASCII (IDNA for international names); ``ip`` is set when
    the host is an address literal (canonical form in ``host``, brackets for IPv6 in
    ``netloc`` only). ``request_target`` is the path and query, percent-encoded.
    """

    scheme: str
    host: str
    port: int
    request_target: str
    ip: IPAddress | None

    @property
    def netloc(self) -> str:
        """``host[:port]`` as the Host header carries it (port only when not the default)."""
        host = f"[{self.host}]" if isinstance(self.ip, ipaddress.IPv6Address) else self.host
        return host if self.port == DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"

    @property
    def redacted(self) -> str:
        """The URL without its query string (it may carry tokens), for logs."""
        path = self.request_target.split("?", 1)[0]
        return urlunsplit((self.scheme, self.netloc, path, "", ""))

    @property
    def allow_hint(self) -> str:
        """The ``--callback-allow`` entry that would permit this destination."""
        host = f"[{self.host}]" if isinstance(self.ip, ipaddress.IPv6Address) else self.host
        return f"{host}:{self.port}"


def parse_url(text: str) -> Target:
    """Parse a merchant-given http(s) URL or raise InvalidUrl.

    Refused: other schemes, a missing host, user:password@ (it would be sent as
    credentials, and ``http://a@b`` misleads readers), a port outside 1-65535, control
    characters or spaces anywhere (``\\n`` would split the request), backslashes in the
    authority, malformed numeric or IPv6 hosts, IPv6 zone ids, and URLs over 2048
    characters. The fragment is never sent.
    """
    if len(text) > MAX_URL:
        raise InvalidUrl(f"longer than {MAX_URL} characters")
    if _FORBIDDEN.search(text):
        raise InvalidUrl("contains a space or a control character")
    try:
        parts = urlsplit(text)
    except ValueError as exc:  # e.g. an unbalanced "[" in the host
        raise InvalidUrl(f"not a valid URL ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise InvalidUrl("must be an http:// or https:// URL")
    netloc = parts.netloc
    if "@" in netloc:
        raise InvalidUrl("must not contain a user name or password")
    if "\\" in netloc:
        raise InvalidUrl("has a backslash in its host")
    host_text, port = _split_host_port(netloc)
    if not host_text:
        raise InvalidUrl("has no host")
    host, ip = normalize_host(host_text)
    path = parts.path or "/"
    target = _percent_encode(path) + (f"?{_percent_encode(parts.query)}" if parts.query else "")
    if not target.startswith("/"):
        raise InvalidUrl("has a path that does not start with /")
    return Target(
        scheme=scheme,
        host=host,
        port=port if port is not None else DEFAULT_PORTS[scheme],
        request_target=target,
        ip=ip,
    )


def _split_host_port(netloc: str) -> tuple[str, int | None]:
    """``host[:port]`` or ``[v6][:port]`` into its parts (port None when absent)."""
    if netloc.startswith("["):
        end = netloc.find("]")
        if end < 0:
            raise InvalidUrl("has an unclosed [ in its host")
        host, rest = netloc[: end + 1], netloc[end + 1 :]
        if rest and not rest.startswith(":"):
            raise InvalidUrl("has text after the ] of its IPv6 host")
        port_text = rest[1:] if rest else None
    else:
        host, sep, port_text_or_empty = netloc.rpartition(":")
        if not sep:
            host, port_text = netloc, None
        else:
            port_text = port_text_or_empty
    if port_text is None or port_text == "":
        return host, None
    if not port_text.isascii() or not port_text.isdigit() or len(port_text) > 5:
        raise InvalidUrl("has a port that is not a number from 1 to 65535")
    port = int(port_text)
    if not 1 <= port <= 65535:
        raise InvalidUrl("has a port that is not a number from 1 to 65535")
    return host, port


def normalize_host(text: str) -> tuple[str, IPAddress | None]:
    """A host as written -> (canonical lower-case host, its IP if it is an address).

    ``[v6]`` is an IPv6 literal; a name whose last label is a number is an IPv4
    address in any of the numeric spellings (WHATWG URL rules); anything else must be a
    DNS name (IDNA-encoded when it is not ASCII).
    """
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1]
        if "%" in inner:
            raise InvalidUrl("has an IPv6 zone id in its host")
        try:
            v6 = ipaddress.IPv6Address(inner)
        except ValueError:
            raise InvalidUrl("has an invalid IPv6 address as its host") from None
        return v6.compressed, v6
    if "[" in text or "]" in text or ":" in text:
        raise InvalidUrl("has an invalid host")
    host = text.lower()
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise InvalidUrl("has an invalid international host name") from None
    if host.endswith(".") and len(host) > 1:
        host = host[:-1]  # "example.com." is example.com
    labels = host.split(".")
    if _IPV4_NUMBER.match(labels[-1]):
        v4 = _parse_ipv4(labels)
        return str(v4), v4
    if len(host) > 253 or not all(_LABEL.match(label) for label in labels):
        raise InvalidUrl("has an invalid host name")
    return host, None


def _parse_ipv4(labels: list[str]) -> ipaddress.IPv4Address:
    """WHATWG's IPv4 parser: 1-4 parts, each decimal, 0x-hex or 0-octal."""
    if len(labels) > 4:
        raise InvalidUrl("has an invalid IPv4 address as its host")
    numbers = []
    for label in labels:
        if not _IPV4_NUMBER.match(label):
            raise InvalidUrl("has an invalid IPv4 address as its host")
        try:
            if label[:2] in ("0x", "0X"):
                numbers.append(int(label[2:] or "0", 16))
            elif len(label) > 1 and label.startswith("0"):
                numbers.append(int(label[1:], 8))
            else:
                numbers.append(int(label, 10))
        except ValueError:  # "08": not octal
            raise InvalidUrl("has an invalid IPv4 address as its host") from None
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (5 - len(numbers)):
        raise InvalidUrl("has an invalid IPv4 address as its host")
    value = last
    for i, n in enumerate(head):
        value += n << (8 * (3 - i))
    return ipaddress.IPv4Address(value)


def _percent_encode(text: str) -> str:
    """Percent-encode what an HTTP request line cannot carry (non-ASCII); keep the rest."""
    if text.isascii():
        return text
    return "".join(c if c.isascii() else "".join(f"%{b:02X}" for b in c.encode()) for c in text)


# Internal destinations, by kind. Checked in order; the first match names the kind.
_V4_KINDS: list[tuple[str, str]] = [
    ("0.0.0.0/8", "unspecified"),
    ("127.0.0.0/8", "loopback"),
    ("10.0.0.0/8", "private"),
    ("172.16.0.0/12", "private"),
    ("192.168.0.0/16", "private"),
    ("100.64.0.0/10", "private (CGNAT)"),
    ("169.254.0.0/16", "link-local"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),  # includes 255.255.255.255, broadcast
    ("192.0.0.0/24", "reserved"),
    ("192.0.2.0/24", "reserved"),
    ("192.88.99.0/24", "reserved"),
    ("198.18.0.0/15", "reserved"),
    ("198.51.100.0/24", "reserved"),
    ("203.0.113.0/24", "reserved"),
]
_V6_KINDS: list[tuple[str, str]] = [
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("::ffff:0:0/96", "IPv4-mapped"),
    ("::/96", "IPv4-compatible"),
    ("64:ff9b:1::/48", "private"),
    ("100::/64", "reserved"),
    ("2001:db8::/32", "reserved"),
    ("fc00::/7", "unique-local"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local"),
    ("ff00::/8", "multicast"),
]
_V4_TABLE = [(ipaddress.IPv4Network(n), kind) for n, kind in _V4_KINDS]
_V6_TABLE = [(ipaddress.IPv6Network(n), kind) for n, kind in _V6_KINDS]
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_SIX_TO_FOUR = ipaddress.IPv6Network("2002::/16")


def classify(ip: IPAddress) -> str | None:
    """Why ``ip`` is internal ("loopback", "private", ...), or None for a public address.

    IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible (::a.b.c.d) addresses are refused
    as such, whatever they embed; NAT64 (64:ff9b::/96) and 6to4 (2002::/16) addresses
    are judged by the IPv4 address they embed. Anything else that is not globally
    routable (Teredo, documentation ranges, ...) is "reserved".
    """
    if isinstance(ip, ipaddress.IPv4Address):
        for v4_network, kind in _V4_TABLE:
            if ip in v4_network:
                return kind
    else:
        if ip.scope_id:
            ip = ipaddress.IPv6Address(str(ip).split("%", 1)[0])
        for v6_network, kind in _V6_TABLE:
            if ip in v6_network:
                return kind
        if ip in _NAT64:
            inner = classify(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
            return f"NAT64 of {inner}" if inner else None
        if ip in _SIX_TO_FOUR:
            inner = classify(ipaddress.IPv4Address((int(ip) >> 80) & 0xFFFFFFFF))
            return f"6to4 of {inner}" if inner else None
    return None if ip.is_global else "reserved"


@dataclass(frozen=True, slots=True)
class AllowEntry:
    """One ``--callback-allow`` entry: a host name, ``*.domain``, an address or a network.

    ``port`` None matches any port. A name entry permits every address the name
    resolves to; an address or network entry permits the addresses it contains,
    whatever name led there.
    """

    text: str
    name: str | None = None
    suffix: str | None = None  # "*.example.com" -> ".example.com"
    network: IPNetwork | None = None
    port: int | None = None

    def permits(self, target: Target, ip: IPAddress | None) -> bool:
        """Whether this entry permits connecting to ``ip`` for ``target``."""
        if self.port is not None and self.port != target.port:
            return False
        if self.name is not None:
            return target.ip is None and target.host == self.name
        if self.suffix is not None:
            return target.ip is None and target.host.endswith(self.suffix)
        if self.network is not None and ip is not None:
            return ip.version == self.network.version and ip in self.network
        return False


def parse_allow_entry(text: str) -> AllowEntry:
    """One entry: ``host``, ``host:port``, ``*.example.com[:port]``, ``10.0.0.0/8``,
    ``127.0.0.1[:port]``, ``::1``, ``[::1]:8000`` or ``fd00::/8``. Raises ValueError."""
    entry = text.strip()
    if not entry:
        raise ValueError("empty entry")
    if "/" in entry:
        try:
            return AllowEntry(text=entry, network=ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ValueError(f"{entry!r} is not a network (e.g. 10.0.0.0/8)") from None
    if entry.endswith(":"):
        raise ValueError(f"{entry!r} has an empty port")
    if entry.count(":") > 1 and not entry.startswith("["):
        entry = f"[{entry}]"  # a bare IPv6 address
    try:
        host_text, port = _split_host_port(entry)
        wildcard = host_text.startswith("*.")
        host, ip = normalize_host(host_text[2:] if wildcard else host_text)
    except InvalidUrl as exc:
        raise ValueError(f"{text.strip()!r} {exc}") from None
    if wildcard:
        if ip is not None:
            raise ValueError(f"{text.strip()!r}: a wildcard needs a domain name")
        return AllowEntry(text=text.strip(), suffix="." + host, port=port)
    if ip is not None:
        return AllowEntry(text=text.strip(), network=ipaddress.ip_network(str(ip)), port=port)
    return AllowEntry(text=text.strip(), name=host, port=port)


def parse_allow_list(text: str | None) -> tuple[AllowEntry, ...]:
    """Comma-separated entries (empty or None: no internal destination is permitted)."""
    return tuple(parse_allow_entry(part) for part in (text or "").split(",") if part.strip())


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a destination is refused: the kind of address and the flag that would permit it."""

    kind: str
    hint: str

    def message(self, field: str, target: Target, *, resolved: bool) -> str:
        """The 400 message for ``field``; it names the exact flag to use."""
        where = (
            f"is an internal address ({self.kind})"
            if not resolved
            else "resolves to an internal address (loopback, private, link-local, ...)"
        )
        return (
            f"{field}: host {target.host} {where}; the gateway does not call internal "
            f"addresses unless the operator permits it: start xmrgate with "
            f"--callback-allow {self.hint}"
        )


def refusal(
    target: Target, addresses: list[IPAddress], allow: tuple[AllowEntry, ...]
) -> Refusal | None:
    """None when every address may be used for ``target``; else why not.

    All of them must pass (a name that resolves to a public and a private address is
    refused): the connection goes to one of exactly these addresses.
    """
    for ip in addresses:
        kind = classify(ip)
        if kind is not None and not any(entry.permits(target, ip) for entry in allow):
            return Refusal(kind=kind, hint=target.allow_hint)
    return None
