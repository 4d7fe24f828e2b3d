"""The pure SSRF rules: URL parsing, address classification, ``--callback-allow`` entries."""

from __future__ import annotations

import ipaddress

import pytest

from xmrgate.domain.callback_urls import (
    InvalidUrl,
    classify,
    parse_allow_entry,
    parse_allow_list,
    parse_url,
    refusal,
)

ip = ipaddress.ip_address


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.255.254", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("172.31.255.255", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "private (CGNAT)"),
        ("100.127.255.254", "private (CGNAT)"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("fc00::1", "unique-local"),
        ("fd12:3456::1", "unique-local"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("ff02::1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("0.1.2.3", "unspecified"),
        ("::", "unspecified"),
        ("::ffff:127.0.0.1", "IPv4-mapped"),
        ("::ffff:8.8.8.8", "IPv4-mapped"),
        ("::127.0.0.1", "IPv4-compatible"),
        ("255.255.255.255", "reserved"),
        ("240.0.0.1", "reserved"),
        ("192.0.2.1", "reserved"),
        ("198.18.0.1", "reserved"),
        ("2001:db8::1", "reserved"),
        ("fec0::1", "site-local"),
        ("64:ff9b::7f00:1", "NAT64 of loopback"),
        ("64:ff9b::a00:1", "NAT64 of private"),
        ("2002:7f00:1::1", "6to4 of loopback"),
        ("2001::1", "reserved"),  # Teredo
    ],
)
def test_internal_addresses_are_classified(address: str, kind: str) -> None:
    """Every private, loopback, link-local and other non-routable range is internal."""
    assert classify(ip(address)) == kind


@pytest.mark.parametrize(
    "address",
    [
        "8.8.8.8",
        "1.1.1.1",
        "93.184.216.34",
        "172.32.0.1",
        "100.128.0.1",
        "11.0.0.1",
        "2606:4700:4700::1111",
        "2a00:1450:4001::1",
        "64:ff9b::808:808",
        "2002:808:808::1",
    ],
)
def test_public_addresses_pass(address: str) -> None:
    """Globally routable addresses (also right next to private ranges) are not internal."""
    assert classify(ip(address)) is None


def test_scoped_ipv6_is_classified_without_its_zone() -> None:
    """A link-local address with a zone id (as getaddrinfo may return it) is link-local."""
    assert classify(ipaddress.IPv6Address("fe80::1%eth0")) == "link-local"


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://2130706433/", "127.0.0.1"),
        ("http://0x7f.1/", "127.0.0.1"),
        ("http://0x7F000001/", "127.0.0.1"),
        ("http://0177.0.0.1/", "127.0.0.1"),
        ("http://127.1/", "127.0.0.1"),
        ("http://127.0.1/", "127.0.0.1"),
        ("http://0/", "0.0.0.0"),
        ("http://017700000001/", "127.0.0.1"),
        ("http://10.0x10.1/", "10.16.0.1"),
        ("http://127.0.0.1./", "127.0.0.1"),
        ("http://[::ffff:127.0.0.1]/", "::ffff:7f00:1"),
        ("http://[0:0:0:0:0:0:0:1]/", "::1"),
    ],
)
def test_numeric_host_spellings_are_read_as_addresses(url: str, host: str) -> None:
    """Decimal, hex, octal and short IPv4 forms mean an address, not a name to look up."""
    target = parse_url(url)
    assert target.ip is not None and target.host == host
    assert classify(target.ip) is not None


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:99999/p",
        "http://127.0.0.1:0/p",
        "http://host:-1/",
        "http://host:8o/",
        "http://127.0.0.1/p\nHost: evil",
        "http://127.0.0.1/p\r\n",
        "http://exa mple.com/",
        "http://example.com/\x00",
        "http://example.com/\t",
        "http://user:pass@example.com/",
        "http://user@example.com/",
        "http://evil.com\\@127.0.0.1/",
        "ftp://example.com/",
        "file:///etc/passwd",
        "gopher://127.0.0.1:6379/_FLUSHALL",
        "javascript:alert(1)",
        "http:///path",
        "http://",
        "not a url",
        "http://[::1/",
        "http://[fe80::1%25eth0]/",
        "http://[::1]x/",
        "http://1.2.3.4.5/",
        "http://256.1.1.1/",
        "http://08.0.0.1/",
        "http://example.123/",
        "http://-bad-.com/",
        "http://a..b/",
        "http://" + "a" * 64 + ".com/",
        "http://example.com/" + "x" * 2048,
    ],
)
def test_invalid_urls_are_refused(url: str) -> None:
    """Bad ports, control characters, credentials, other schemes and odd hosts never parse."""
    with pytest.raises(InvalidUrl):
        parse_url(url)


def test_url_is_sent_as_parsed() -> None:
    """Scheme and host are normalised, the port defaulted, the query kept, the fragment dropped."""
    target = parse_url("HTTPS://Shop.Example.COM/hook/ä?order=42&t=x#frag")
    assert (target.scheme, target.host, target.port) == ("https", "shop.example.com", 443)
    assert target.request_target == "/hook/%C3%A4?order=42&t=x"
    assert target.netloc == "shop.example.com"
    assert target.redacted == "https://shop.example.com/hook/%C3%A4"
    assert parse_url("http://[::1]:8000").netloc == "[::1]:8000"
    assert parse_url("http://[::1]:8000").request_target == "/"
    assert parse_url("http://ex\u00e4mple.test:81/").host == "xn--exmple-cua.test"


@pytest.mark.parametrize(
    ("entry", "url", "address", "permitted"),
    [
        ("127.0.0.1", "http://127.0.0.1:8000/cb", "127.0.0.1", True),
        ("127.0.0.1", "http://localhost:8000/cb", "127.0.0.1", True),
        ("127.0.0.1:8000", "http://127.0.0.1:8000/cb", "127.0.0.1", True),
        ("127.0.0.1:8000", "http://127.0.0.1:8001/cb", "127.0.0.1", False),
        ("127.0.0.1:80", "http://127.0.0.1/cb", "127.0.0.1", True),
        ("127.0.0.1:80", "https://127.0.0.1/cb", "127.0.0.1", False),
        ("127.0.0.1", "http://127.0.0.2/cb", "127.0.0.2", False),
        ("localhost:8000", "http://localhost:8000/", "::1", True),
        ("localhost:8000", "http://localhost:8000/", "127.0.0.1", True),
        ("localhost", "http://127.0.0.1/", "127.0.0.1", False),
        ("shop.internal", "http://shop.internal/hook", "10.0.0.5", True),
        ("shop.internal", "http://evil.example/hook", "10.0.0.5", False),
        ("*.example.com", "https://shop.example.com/", "10.0.0.5", True),
        ("*.example.com", "https://a.b.example.com/", "10.0.0.5", True),
        ("*.example.com", "https://example.com/", "10.0.0.5", False),
        ("*.example.com", "https://shop.example.com.evil.test/", "10.0.0.5", False),
        ("*.example.com", "https://evilexample.com/", "10.0.0.5", False),
        ("*.example.com:8443", "https://shop.example.com/", "10.0.0.5", False),
        ("*.example.com:8443", "https://shop.example.com:8443/", "10.0.0.5", True),
        ("10.0.0.0/8", "http://10.9.8.7:1234/", "10.9.8.7", True),
        ("10.0.0.0/8", "http://shop.lan/", "10.9.8.7", True),
        ("10.0.0.0/8", "http://192.168.0.1/", "192.168.0.1", False),
        ("fd00::/8", "http://[fd00::5]/", "fd00::5", True),
        ("::1", "http://[::1]:9/", "::1", True),
        ("[::1]:8000", "http://[::1]:8000/", "::1", True),
        ("[::1]:8000", "http://[::1]:8001/", "::1", False),
        ("::1", "http://127.0.0.1/", "127.0.0.1", False),
        ("2130706433", "http://127.0.0.1/", "127.0.0.1", True),
    ],
)
def test_allow_entries(entry: str, url: str, address: str, permitted: bool) -> None:
    """host, host:port, *.domain, addresses and CIDR networks; a given port must match."""
    target = parse_url(url)
    assert parse_allow_entry(entry).permits(target, ip(address)) is permitted
    allow = parse_allow_list(entry)
    assert (refusal(target, [ip(address)], allow) is None) is permitted


@pytest.mark.parametrize(
    "entry", ["*", "*.127.0.0.1", "10.0.0.0/33", "host:99999", "host:", "a b", "http://x/"]
)
def test_bad_allow_entries_are_refused(entry: str) -> None:
    """A typo in --callback-allow fails at start-up rather than permitting something odd."""
    with pytest.raises(ValueError):
        parse_allow_entry(entry)


def test_refusal_names_the_flag_to_use() -> None:
    """The 400 message names the field and the exact --callback-allow entry."""
    target = parse_url("http://127.0.0.1:8000/hook?token=secret")
    refused = refusal(target, [ip("127.0.0.1")], ())
    assert refused is not None and refused.kind == "loopback"
    message = refused.message("callback_url", target, resolved=False)
    assert message.startswith("callback_url: ")
    assert "--callback-allow 127.0.0.1:8000" in message and "secret" not in message
    v6 = parse_url("http://[::1]:8000/")
    refused = refusal(v6, [ip("::1")], ())
    assert refused is not None and refused.hint == "[::1]:8000"
    named = parse_url("https://shop.lan/x")
    refused = refusal(named, [ip("93.184.216.34"), ip("10.0.0.1")], ())
    assert refused is not None
    message = refused.message("return_url", named, resolved=True)
    assert message.startswith("return_url: ") and "--callback-allow shop.lan:443" in message
    assert "10.0.0.1" not in message  # the internal address itself is not disclosed


def test_one_internal_address_among_public_ones_refuses_the_name() -> None:
    """A name resolving to a public and a private address is refused as a whole."""
    target = parse_url("https://rebind.example/")
    assert refusal(target, [ip("93.184.216.34")], ()) is None
    assert refusal(target, [ip("93.184.216.34"), ip("127.0.0.1")], ()) is not None
