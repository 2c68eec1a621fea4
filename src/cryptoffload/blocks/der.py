"""The few DER and PEM forms key files need: integers, sequences, OIDs, octet and bit strings."""

from __future__ import annotations

import base64
import binascii
import re

INTEGER, BIT_STRING, OCTET_STRING, OID, SEQUENCE = 0x02, 0x03, 0x04, 0x06, 0x30


class DerError(ValueError):
    """Input that is not the DER expected."""


def _length(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    body = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(body)]) + body


def tlv(tag: int, body: bytes) -> bytes:
    """One element: tag, length, contents."""
    return bytes([tag]) + _length(len(body)) + body


def integer(value: int) -> bytes:
    """A non-negative INTEGER."""
    if value < 0:
        raise DerError("negative integers are not used here")
    return tlv(INTEGER, value.to_bytes(value.bit_length() // 8 + 1, "big"))


def sequence(*items: bytes) -> bytes:
    """A SEQUENCE of encoded elements."""
    return tlv(SEQUENCE, b"".join(items))


def oid(dotted: str) -> bytes:
    """An OBJECT IDENTIFIER from its dotted form."""
    arcs = [int(a) for a in dotted.split(".")]
    out = bytearray([40 * arcs[0] + arcs[1]])
    for arc in arcs[2:]:
        chunk = [arc & 0x7F]
        arc >>= 7
        while arc:
            chunk.append(0x80 | (arc & 0x7F))
            arc >>= 7
        out += bytes(reversed(chunk))
    return tlv(OID, bytes(out))


def octet_string(data: bytes) -> bytes:
    """An OCTET STRING."""
    return tlv(OCTET_STRING, data)


def bit_string(data: bytes) -> bytes:
    """A BIT STRING of whole bytes."""
    return tlv(BIT_STRING, b"\x00" + data)


def read(data: bytes, expect: int | None = None) -> tuple[int, bytes, bytes]:
    """(tag, contents, rest) of the first element; DerError if malformed (or not ``expect``)."""
    if len(data) < 2:
        raise DerError("truncated DER element")
    tag, first = data[0], data[1]
    if first < 0x80:
        length, start = first, 2
    else:
        count = first & 0x7F
        if count == 0 or count > 4 or len(data) < 2 + count:
            raise DerError("bad DER length")
        length, start = int.from_bytes(data[2 : 2 + count], "big"), 2 + count
        if length < 0x80 or data[2] == 0:
            raise DerError("non-minimal DER length")
    if len(data) < start + length:
        raise DerError("truncated DER element")
    if expect is not None and tag != expect:
        raise DerError(f"expected DER tag 0x{expect:02x}, got 0x{tag:02x}")
    return tag, data[start : start + length], data[start + length :]


def items(body: bytes) -> list[tuple[int, bytes]]:
    """The (tag, contents) of every element in a SEQUENCE's contents."""
    found = []
    while body:
        tag, content, body = read(body)
        found.append((tag, content))
    return found


def read_integer(content: bytes) -> int:
    """A non-negative INTEGER's value from its contents."""
    if not content or content[0] & 0x80:
        raise DerError("expected a non-negative INTEGER")
    if len(content) > 1 and content[0] == 0 and not content[1] & 0x80:
        raise DerError("non-minimal INTEGER")
    return int.from_bytes(content, "big")


def read_oid(content: bytes) -> str:
    """The dotted form of an OBJECT IDENTIFIER's contents."""
    if not content:
        raise DerError("empty OBJECT IDENTIFIER")
    arcs, value = [], 0
    for byte in content:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            arcs.append(value)
            value = 0
    first = arcs[0]
    head = [min(first // 40, 2), first - 40 * min(first // 40, 2)]
    return ".".join(str(a) for a in head + arcs[1:])


_PEM = re.compile(rb"-----BEGIN ([A-Z0-9 .]+)-----\r?\n(.*?)-----END \1-----", re.DOTALL)


def pem_blocks(data: bytes) -> list[tuple[str, bytes]]:
    """(label, DER) of every PEM block in ``data`` whose body decodes; headers are kept out."""
    found = []
    for match in _PEM.finditer(data):
        body = match.group(2)
        if b":" in body:  # RFC 1421 headers (Proc-Type...): an encrypted legacy key
            found.append((match.group(1).decode(), b""))
            continue
        try:
            found.append((match.group(1).decode(), base64.b64decode(body, validate=False)))
        except (binascii.Error, ValueError):
            continue
    return found


def pem(label: str, der: bytes) -> bytes:
    """``der`` armoured as PEM, 64 characters a line."""
    text = base64.b64encode(der)
    lines = b"\n".join(text[i : i + 64] for i in range(0, len(text), 64))
    return (
        b"-----BEGIN "
        + label.encode()
        + b"-----\n"
        + lines
        + b"\n-----END "
        + label.encode()
        + b"-----\n"
    )
