"""The `cryptoffload caam` command: descriptor tools (one function per subcommand)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from cryptoffload.caam import disasm
from cryptoffload.caam.desc import decode


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``caam`` and its subcommands on the main parser's subparsers."""
    parser = subparsers.add_parser("caam", help="NXP CAAM / QorIQ SEC descriptor tools")
    sub = parser.add_subparsers(dest="caam_command", required=True, metavar="SUBCOMMAND")
    _add_disasm(sub)
    return parser


def _add_disasm(sub: Any) -> None:
    p = sub.add_parser(
        "disasm",
        help="descriptor words in, one line per command out",
        description="Disassemble a CAAM descriptor given as hex words (header first).",
    )
    p.add_argument(
        "words",
        nargs="*",
        metavar="WORDS",
        help="hex words, whitespace or comma separated, 0x optional; '-' or none: read stdin",
    )
    p.add_argument(
        "--long-pointers", action="store_true", help="pointers are 2 words (64-bit addresses)"
    )
    p.add_argument(
        "--byteorder",
        choices=("big", "little"),
        default="big",
        help="byte order of the part, for immediate data (default big: QorIQ)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_disasm)


def _read_words(args: argparse.Namespace) -> list[int]:
    if not args.words or args.words == ["-"]:
        return disasm.parse_words(sys.stdin.read())
    if "-" in args.words:
        raise ValueError("'-' (read stdin) cannot be mixed with words on the command line")
    return disasm.parse_words(" ".join(args.words))


def cmd_disasm(args: argparse.Namespace, console: Any = None) -> int:
    """``caam disasm``: print the decoded descriptor as text or JSON."""
    words = _read_words(args)
    if args.json:
        commands = decode(words, long_pointers=args.long_pointers, byteorder=args.byteorder)
        print(json.dumps(disasm.to_json(commands), indent=2))
    else:
        sys.stdout.write(
            disasm.disassemble_text(
                words, long_pointers=args.long_pointers, byteorder=args.byteorder
            )
        )
    return 0
