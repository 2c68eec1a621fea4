"""Reader for the RSA Laboratories PKCS #1 example files shipped in cryptography_vectors."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import cryptography_vectors

OAEP_VECTORS = "asymmetric/RSA/pkcs-1v2-1d2-vec/oaep-vect.txt"
PSS_VECTORS = "asymmetric/RSA/pkcs-1v2-1d2-vec/pss-vect.txt"
PKCS1V15_SIGN_VECTORS = "asymmetric/RSA/pkcs1v15sign-vectors.txt"
PKCS1V15_CRYPT_VECTORS = "asymmetric/RSA/pkcs1v15crypt-vectors.txt"


@dataclass(frozen=True)
class RSAKey:
    n: int
    e: int
    d: int
    p: int
    q: int
    dmp1: int
    dmq1: int
    iqmp: int

    @property
    def bits(self) -> int:
        return self.n.bit_length()

    @property
    def size(self) -> int:
        return (self.bits + 7) // 8


@dataclass(frozen=True)
class Example:
    """One example: ``randomness`` is the OAEP seed, PSS salt or v1.5 padding string (or None)."""

    name: str
    key: RSAKey
    message: bytes
    randomness: bytes | None
    result: bytes


_HEX_LINE = re.compile(r"^[0-9a-fA-F]{2}( [0-9a-fA-F]{2})*$")
_KEY_HEADER = re.compile(r"^Example (\d+): ")

# (section, label) -> field; the two "Exponent" labels differ only by the section they are in.
_KEY_FIELDS = {
    ("public", "Modulus:"): "n_public",
    ("public", "Exponent:"): "e_public",
    ("private", "Modulus:"): "n",
    ("private", "Public exponent:"): "e",
    ("private", "Exponent:"): "d",
    ("private", "Prime 1:"): "p",
    ("private", "Prime 2:"): "q",
    ("private", "Prime exponent 1:"): "dmp1",
    ("private", "Prime exponent 2:"): "dmq1",
    ("private", "Coefficient:"): "iqmp",
}
_EXAMPLE_FIELDS = {
    "Message:": "message",
    "Message to be signed:": "message",
    "Seed:": "randomness",
    "Salt:": "randomness",
    "Encryption:": "result",
    "Signature:": "result",
}


def _make_key(fields: dict[str, bytes]) -> RSAKey:
    ints = {name: int.from_bytes(value, "big") for name, value in fields.items()}
    if ints.pop("n_public") != ints["n"] or ints.pop("e_public") != ints["e"]:
        raise ValueError("public and private key sections disagree")
    return RSAKey(**ints)


def parse(lines: Iterable[str]) -> list[Example]:
    """Parse one of the files; examples are named ``<key>.<index>`` by their order in the file.

    Numbering by order rather than by the "Example x.y" headers because
    pkcs1v15crypt-vectors.txt omits the header of its first example.
    """
    examples: list[Example] = []
    per_key: dict[int, int] = {}
    key_no = 0
    key_fields: dict[str, bytes] = {}
    key: RSAKey | None = None
    section = ""
    example: dict[str, bytes] | None = None
    field: str | None = None
    target: dict[str, bytes] = {}

    def flush() -> None:
        if example is None:
            return
        if key is None or "message" not in example or "result" not in example:
            raise ValueError(f"incomplete example after {key_no}.{per_key.get(key_no, 0)}")
        per_key[key_no] = per_key.get(key_no, 0) + 1
        examples.append(
            Example(
                name=f"{key_no}.{per_key[key_no]}",
                key=key,
                message=example["message"],
                randomness=example.get("randomness"),
                result=example["result"],
            )
        )

    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if not line.startswith("#"):
            if field is not None and _HEX_LINE.match(line):
                target[field] = target.get(field, b"") + bytes.fromhex(line)
            continue
        label = line.lstrip("#").strip()
        if match := _KEY_HEADER.match(label):
            flush()
            example, key, key_fields, section = None, None, {}, ""
            key_no = int(match.group(1))
            field = None
        elif label in ("Public key", "Private key"):
            section = label.split()[0].lower()
            field = None
        elif (section, label) in _KEY_FIELDS and example is None:
            field, target = _KEY_FIELDS[section, label], key_fields
        elif label in _EXAMPLE_FIELDS:
            field = _EXAMPLE_FIELDS[label]
            if field == "message":
                flush()
                if key is None:
                    key = _make_key(key_fields)
                example = {}
            if example is None:
                raise ValueError(f"{label!r} outside an example")
            target = example
        else:
            field = None
    flush()
    return examples


def load(path: str) -> list[Example]:
    """Parse the file at ``path`` inside the cryptography_vectors package."""
    with cryptography_vectors.open_vector_file(path, "r") as f:
        return parse(f)
