"""The options of `bench --tls` (TLS versions, write sizes, paths, bytes per connection), their
choices and defaults, what each refuses, and the bench options that do not apply to the view.
Light on imports: the parser is built for every command."""

from __future__ import annotations

import argparse
from typing import Any

from cryptoffload.tools.engine_specs import comma_list

#: The paths a connection's bytes can take, in the order rows are shown: OpenSSL doing the
#: records here (kTLS not asked for); kTLS asked for, sendall; kTLS asked for, one sendfile;
#: asyncio streams (OpenSSL fed from memory).
PATHS = ("user-space", "ktls-send", "ktls-sendfile", "asyncio")
VERSIONS = ("TLSv1.2", "TLSv1.3")
RECORDS = (1024, 4096, 16384)
#: A TLS record carries at most this much data (RFC 8446 5.1, RFC 5246 6.2.1).
MAX_RECORD = 16384
#: Bytes per connection, by default.
TRANSFER = 16 << 20
#: Bytes per connection: at least one full record of the largest size, at most 1 GiB (the
#: sendfile rows write it to a temporary file).
MIN_TRANSFER = 64 << 10
MAX_TRANSFER = 1 << 30
_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
#: Options that only the TLS view takes (``args`` attribute, option).
TLS_ONLY = (
    ("versions", "--versions"),
    ("records", "--records"),
    ("paths", "--paths"),
    ("transfer", "--transfer"),
)


def add(p: argparse.ArgumentParser) -> None:
    """``--tls`` and its options on the bench parser."""
    p.add_argument(
        "--tls",
        action="store_true",
        help="TLS connections over loopback instead of rows: user-space TLS, kTLS with send and "
        "with sendfile, asyncio; MiB/s and user/system CPU per MiB",
    )
    p.add_argument(
        "--versions",
        type=versions,
        metavar="LIST",
        help="with --tls: TLS versions, 1.2,1.3 (default both)",
    )
    p.add_argument(
        "--records",
        type=records,
        metavar="LIST",
        help="with --tls: write sizes, one record each, 1 to 16k bytes (default 1k,4k,16k)",
    )
    p.add_argument(
        "--paths",
        type=paths,
        metavar="LIST",
        help=f"with --tls: {','.join(PATHS)} (default all)",
    )
    p.add_argument(
        "--transfer",
        type=transfer,
        metavar="SIZE",
        help=f"with --tls: bytes per connection, e.g. 4m (default "
        f"{TRANSFER >> 20}m, at least 64k, at most 1g)",
    )


def _items(text: str, what: str) -> list[str]:
    items = comma_list(text)
    if not items:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list of {what}, got {text!r}")
    twice = sorted({item for item in items if items.count(item) > 1})
    if twice:
        raise argparse.ArgumentTypeError(
            f"each once: {', '.join(twice)} given more than once in {text!r}"
        )
    return items


def size(text: str) -> int:
    """Bytes written as a number with an optional k, m or g (1024-based): 1400, 16k, 4m."""
    stripped = text.strip().lower()
    factor = _UNITS.get(stripped[-1:], 1)
    digits = stripped[:-1] if stripped[-1:] in _UNITS else stripped
    if not digits.lstrip("-").isdigit():
        raise argparse.ArgumentTypeError(
            f"expected a number of bytes, optionally with k, m or g (16k, 4m), got {text!r}"
        )
    return int(digits) * factor


def versions(text: str) -> list[str]:
    """TLS versions: 1.2, 1.3 (also tls1.2, TLSv1.3), as ``ssl`` names them."""
    known = {v.lower().removeprefix("tlsv"): v for v in VERSIONS}
    out = []
    for item in _items(text, "TLS versions (1.2, 1.3)"):
        key = item.lower().removeprefix("tlsv").removeprefix("tls")
        if key not in known:
            raise argparse.ArgumentTypeError(
                f"TLS version must be one of {', '.join(known)}, got {item!r}"
            )
        out.append(known[key])
    if len(set(out)) < len(out):
        raise argparse.ArgumentTypeError(f"each TLS version once, got {text!r}")
    return out


def records(text: str) -> list[int]:
    """Write sizes of 1 to 16384 bytes (a record carries at most 16 KiB), each once."""
    out = []
    for item in _items(text, "write sizes in bytes (or 1k, 16k...)"):
        value = size(item)
        if not 1 <= value <= MAX_RECORD:
            raise argparse.ArgumentTypeError(
                f"write size must be 1 to {MAX_RECORD} bytes (a TLS record carries at "
                f"most 16 KiB), got {item!r}"
            )
        out.append(value)
    if len(set(out)) < len(out):
        raise argparse.ArgumentTypeError(f"each write size once, got {text!r}")
    return out


def paths(text: str) -> list[str]:
    """Paths by name, each once."""
    out = _items(text, "paths")
    unknown = [p for p in out if p not in PATHS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"path must be one of {', '.join(PATHS)}, got {', '.join(map(repr, unknown))}"
        )
    return out


def transfer(text: str) -> int:
    """Bytes per connection, 64 KiB to 1 GiB."""
    value = size(text)
    if not MIN_TRANSFER <= value <= MAX_TRANSFER:
        raise argparse.ArgumentTypeError(
            f"bytes per connection must be 64k to 1g ({MIN_TRANSFER} to {MAX_TRANSFER}), "
            f"got {text!r}"
        )
    return value


def check(args: Any) -> None:
    """ValueError (exit status 2) for options that contradict ``--tls`` or need it."""
    if not args.tls:
        given = [option for attr, option in TLS_ONLY if getattr(args, attr) is not None]
        if given:
            raise ValueError(f"{', '.join(given)} applies to bench --tls only; add --tls")
        return
    given = [
        option
        for option, present in (
            ("--algs", args.algs is not None),
            ("--engines/--engine", args.engines is not None),
            ("--block", args.block is not None),
            ("--embedded", args.embedded),
            ("--variants", args.variants),
            ("--use-policy", args.use_policy),
            ("--workload", args.workload is not None),
            ("--time", getattr(args, "time_given", False)),
        )
        if present
    ]
    if given:
        raise ValueError(
            f"bench --tls measures TLS connections, not engine rows: {', '.join(given)} does not "
            "apply (a trial is one connection of --transfer bytes; the view takes --versions, "
            "--records, --paths, --transfer and --trials)"
        )
