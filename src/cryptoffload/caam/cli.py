"""The `cryptoffload caam` command: descriptor tools (one function per subcommand)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from cryptoffload.caam import disasm, workbench
from cryptoffload.caam.decoder import decode
from cryptoffload.caam.model.parts import PARTS

#: Bytes shown at each end of a long buffer on the terminal (``--full`` shows every byte).
ELIDE_KEEP = 32


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``caam`` and its subcommands on the main parser's subparsers."""
    parser = subparsers.add_parser("caam", help="NXP CAAM / QorIQ SEC descriptor tools")
    sub = parser.add_subparsers(dest="caam_command", required=True, metavar="SUBCOMMAND")
    _add_disasm(sub)
    _add_run(sub)
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
    p.add_argument(
        "--show-keys",
        action="store_true",
        help="print immediate key bytes (hidden by default: the output may end up in logs)",
    )
    p.set_defaults(func=cmd_disasm)


RUN_EPILOG = """\
buffers:
  --in NAME=hex:HEX     input bytes in hex (the hex: prefix is optional)
  --in NAME=@FILE       input bytes read from FILE
  --in NAME=text:TEXT   input bytes of TEXT in UTF-8
  --out NAME=SIZE       output buffer of SIZE bytes (decimal or 0x hex), zero before the job
  --out NAME=SIZE@FILE  the same, and its bytes are written to FILE after the job (whatever
                        the status)
  In the words, @NAME is the buffer's model address and @NAME+OFFSET an address inside it
  (OFFSET decimal or 0x hex); with --long-pointers @NAME stands for two words, high first.

The descriptor is written to the model's memory in the part's byte order and run through job
ring 0 as a driver runs it (after the RNG4 instantiate job unless --no-rng-instantiate).
Printed: the status word, every output buffer, and every input buffer the job changed, in hex.
A buffer over 64 bytes shows its first and last 32 bytes around "... (N bytes not shown) ...";
--full prints it whole, --json always has every byte. Input buffers are otherwise never printed.

exit status: 0 the job's status is 0; 1 the job returned an error status; 2 bad usage
(malformed words or buffers, unknown buffer name or part) or a part without the SEC block
(t2080-nosec: nothing runs).

example (AES-128-CBC encrypt, next IV written back to iv):
  cryptoffload caam run --in key=hex:000102030405060708090a0b0c0d0e0f \\
    --in iv=hex:00000000000000000000000000000000 --in msg=text:sixteen_bytes_.. \\
    --out ct=16 b080000c 02200010 @key 12200010 @iv 82100101 22120010 @msg \\
    60300010 @ct 52200010 @iv
"""


def _add_run(sub: Any) -> None:
    p = sub.add_parser(
        "run",
        help="run a descriptor on the model: status and outputs (a descriptor workbench)",
        description="Run a CAAM descriptor (hex words, @NAME for buffer addresses) on a fresh "
        "model of a part and print the status word and the output buffers.",
        epilog=RUN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "words",
        nargs="*",
        metavar="WORDS",
        help="hex words and @NAME[+OFFSET]; '-' or none (without --words-file): read stdin",
    )
    p.add_argument(
        "--words-file",
        metavar="FILE",
        help="read the words from FILE ('-': stdin); '#' starts a comment",
    )
    p.add_argument(
        "--part",
        default="t2080",
        metavar="PART",
        help=f"part of the model: {', '.join(PARTS)} (default t2080)",
    )
    p.add_argument(
        "--in",
        dest="inputs",
        action="append",
        default=[],
        metavar="NAME=DATA",
        help="an input buffer (repeatable): NAME=hex:HEX, NAME=@FILE or NAME=text:TEXT",
    )
    p.add_argument(
        "--out",
        dest="outputs",
        action="append",
        default=[],
        metavar="NAME=SIZE[@FILE]",
        help="an output buffer of SIZE bytes (repeatable); with @FILE also written to FILE",
    )
    p.add_argument(
        "--no-rng-instantiate",
        action="store_true",
        help="leave RNG4 at reset (RDSTA 0): RNG jobs and ECDSA sign then fail with CCB 0x54",
    )
    p.add_argument(
        "--long-pointers",
        action="store_true",
        help="enable MCFGR.LONG_PTR: pointers are 2 words (QorIQ parts only)",
    )
    p.add_argument(
        "--seed", metavar="TEXT", help="seed the model's RNG4 (repeatable random outputs)"
    )
    p.add_argument(
        "--disasm", action="store_true", help="also print the buffer addresses and disassembly"
    )
    p.add_argument(
        "--full",
        action="store_true",
        help=f"print long buffers whole (default: the first and last {ELIDE_KEEP} bytes)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output, every byte")
    p.set_defaults(func=cmd_run)


def _run_words(args: argparse.Namespace) -> str:
    if args.words_file is not None:
        if args.words:
            raise ValueError("give the words on the command line or with --words-file, not both")
        if args.words_file == "-":
            return sys.stdin.read()
        with open(args.words_file, encoding="utf-8") as f:
            return f.read()
    return _command_line_words(args.words)


def _command_line_words(words: list[str]) -> str:
    """The words given on the command line, or stdin when there are none or only '-'."""
    if not words or words == ["-"]:
        return sys.stdin.read()
    if "-" in words:
        raise ValueError("'-' (read stdin) cannot be mixed with words on the command line")
    return " ".join(words)


def _hex(data: bytes, full: bool) -> str:
    """``data`` in hex; over 2 * ELIDE_KEEP bytes only both ends, unless ``full``."""
    if full or len(data) <= 2 * ELIDE_KEEP:
        return data.hex()
    head, tail, hidden = data[:ELIDE_KEEP], data[-ELIDE_KEEP:], len(data) - 2 * ELIDE_KEEP
    return f"{head.hex()} ... ({hidden} bytes not shown) ... {tail.hex()}"


def _buffer_lines(
    result: workbench.WorkbenchResult, written: dict[str, str], full: bool
) -> list[str]:
    lines = []
    for name, data in result.outputs.items():
        saved = f", written to {written[name]}" if name in written else ""
        lines.append(f"output {name} ({len(data)} bytes{saved}): {_hex(data, full)}")
    for name, data in result.changed.items():
        lines.append(f"changed {name} ({len(data)} bytes): {_hex(data, full)}")
    return lines


def _disasm_lines(result: workbench.WorkbenchResult) -> list[str]:
    lines = [f"descriptor at 0x{result.descriptor_address:08x}, {len(result.words)} words"]
    for name, (addr, n, direction) in result.buffers.items():
        lines.append(f"buffer {name} at 0x{addr:08x}, {n} bytes, {direction}")
    lines += disasm.disassemble_text(
        result.words, long_pointers=result.long_pointers, byteorder=result.byteorder
    ).splitlines()
    return lines


def cmd_run(args: argparse.Namespace, console: Any = None) -> int:
    """``caam run``: run one descriptor on the model; exit 0 for status 0, 1 for an error status."""
    buffers = [workbench.parse_buffer(s, output=False) for s in args.inputs]
    buffers += [workbench.parse_buffer(s, output=True) for s in args.outputs]
    result = workbench.run_descriptor(
        args.part,
        _run_words(args),
        buffers,
        rng_instantiated=not args.no_rng_instantiate,
        long_pointers=args.long_pointers,
        seed=args.seed.encode() if args.seed is not None else None,
    )
    written = workbench.save_outputs(result, buffers)
    commands = decode(result.words, long_pointers=result.long_pointers, byteorder=result.byteorder)
    notes = disasm.notes(result.words, commands)
    if args.json:
        out = result.to_json() | {"notes": notes, "written": written}
        if args.disasm:
            out["disasm"] = disasm.to_json(commands)
        print(json.dumps(out, indent=2))
    else:
        shown = {**result.outputs, **result.changed}
        long = [name for name, data in shown.items() if len(data) > 2 * ELIDE_KEEP]
        if not args.full and set(long) - set(written):
            notes.append(
                f"buffers over {2 * ELIDE_KEEP} bytes show only both ends: --full prints them "
                "whole, --out NAME=SIZE@FILE saves one to a file"
            )
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
        lines = [f"status 0x{result.status:08x}: {result.status_text}"]
        lines += _buffer_lines(result, written, args.full)
        if args.disasm:
            lines += _disasm_lines(result)
        print("\n".join(lines))
    return 0 if result.ok else 1


def cmd_disasm(args: argparse.Namespace, console: Any = None) -> int:
    """``caam disasm``: print the decoded descriptor as text or JSON."""
    words = disasm.parse_words(_command_line_words(args.words))
    if args.json:
        commands = decode(words, long_pointers=args.long_pointers, byteorder=args.byteorder)
        print(json.dumps(disasm.to_json(commands, show_keys=args.show_keys), indent=2))
    else:
        sys.stdout.write(
            disasm.disassemble_text(
                words,
                long_pointers=args.long_pointers,
                byteorder=args.byteorder,
                show_keys=args.show_keys,
            )
        )
    return 0
