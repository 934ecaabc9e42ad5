"""The client's HTTP/1.1 reply parser, fed the framings servers and proxies use, cut anywhere."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgym._connection import Endpoint, ProtocolError, _Exchange


def feed(raw: bytes, cuts: list[int] | None = None, eof: bool = False):
    exchange = _Exchange()
    points = sorted({c % (len(raw) + 1) for c in cuts or []} | {len(raw)})
    start, reply = 0, None
    for point in points:
        reply = exchange.receive(raw[start:point]) if point > start else reply
        start = point
        if reply is not None:
            break
    if reply is None and eof:
        reply = exchange.receive(b"")
    return reply, exchange


LENGTH = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"a\": [1]}\n"
CHUNKED = (b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
           b"4;ext=1\r\n{\"a\"\r\n7\r\n: [1]}\n\r\n0\r\nX-Trailer: yes\r\n\r\n")


@given(st.lists(st.integers(min_value=0, max_value=200), max_size=8))
def test_a_content_length_reply_parses_however_it_is_cut(cuts):
    reply, exchange = feed(LENGTH, cuts)
    assert reply.status == 200 and reply.body == b'{"a": [1]}\n'
    assert reply.headers["content-type"] == "application/json"
    assert exchange.next_cycle() is True


@given(st.lists(st.integers(min_value=0, max_value=200), max_size=8))
def test_a_chunked_reply_with_extensions_and_trailers_parses_however_it_is_cut(cuts):
    reply, exchange = feed(CHUNKED, cuts)
    assert reply.status == 201 and reply.body == b'{"a": [1]}\n'
    assert exchange.next_cycle() is True


def test_interim_replies_are_skipped_and_204_has_no_body():
    reply, _ = feed(b"HTTP/1.1 100 Continue\r\n\r\n" + LENGTH)
    assert reply.status == 200
    reply, exchange = feed(b"HTTP/1.1 204 No Content\r\n\r\n")
    assert reply.body == b"" and exchange.next_cycle()


def test_a_close_delimited_reply_ends_at_eof_and_closes_the_connection():
    raw = b"HTTP/1.0 200 OK\r\n\r\nall of it"
    reply, exchange = feed(raw)
    assert reply is None
    reply, exchange = feed(raw, eof=True)
    assert reply.body == b"all of it" and exchange.next_cycle() is False


@pytest.mark.parametrize("raw", [
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
    b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello",
])
def test_connection_close_and_http_1_0_are_not_reused(raw):
    reply, exchange = feed(raw)
    assert reply.body == b"hello" and exchange.next_cycle() is False


@pytest.mark.parametrize("raw", [
    b"",                                                      # nothing at all
    b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort",     # cut mid-body
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
])
def test_eof_before_the_reply_is_complete_is_a_protocol_error(raw):
    exchange = _Exchange()
    exchange.receive(raw) if raw else None
    with pytest.raises(ProtocolError):
        exchange.receive(b"")


@pytest.mark.parametrize("raw", [b"SSH-2.0-OpenSSH\r\n\r\n", b"HTTP/1.1 2xx OK\r\n\r\n",
                                 b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"])
def test_bytes_that_are_not_an_http_reply_are_a_protocol_error(raw):
    with pytest.raises(ProtocolError):
        _Exchange().receive(raw)


def test_requests_carry_host_length_and_the_base_path():
    endpoint = Endpoint.parse("http://example.test:8123/envs/")
    raw = _Exchange().request(endpoint, "POST", "/v1/sessions", b'{"x":1}', {"Authorization": "Bearer t"})
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /envs/v1/sessions HTTP/1.1"
    assert {"Host: example.test:8123", "Authorization: Bearer t", "Content-Length: 7"} <= set(lines)
    assert body == b'{"x":1}'
