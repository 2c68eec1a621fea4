"""The `cryptoffload caam` command: descriptor tools (one function per subcommand)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from cryptoffload.caam.desc import disasm, sgtable
from cryptoffload.caam.desc import encoding as E
from cryptoffload.caam.desc.decoder import decode
from cryptoffload.caam.model.parts import PARTS
from cryptoffload.caam.tools import workbench

#: A descriptor word's command field, bits 31:27.
CMD_MASK = 0xF800_0000
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

shared descriptor and S/G tables (what the Linux driver's descriptors use):
  --shared WORDS        a shared descriptor's words, in one argument (@NAME allowed), written
                        to a region of its own in the part's byte order; @shared in the job's
                        words is its address, for a job header with SHARED (0x1000) set
  --shared-file FILE    the same, read from FILE ('-': stdin); '#' starts a comment
  --sg NAME=BUF[+OFF][:LEN],BUF2[+OFF][:LEN]...
                        a sec4 S/G table over buffers or slices of them (OFF from 0, LEN to the
                        buffer's end by default): 16 bytes an entry (64-bit address, most
                        significant word first; length, FIN on the last entry; offset 0),
                        zeroed entries up to a multiple of 4 as the kernel pads; @NAME (or
                        @NAME+16 for entry 1) is its address, for a SEQ IN/OUT PTR with SGF
  --disasm also shows the tables' entries and disassembles the shared descriptor.

The descriptor is written to the model's memory in the part's byte order and run through job
ring 0 as a driver runs it (after the RNG4 instantiate job unless --no-rng-instantiate).
Printed: the status word, every output buffer, and every input buffer the job changed, in hex.
A buffer over 64 bytes shows its first and last 32 bytes around "... (N bytes not shown) ...";
--full prints it whole, --json always has every byte. Input buffers are otherwise never printed.

exit status: 0 the job's status is 0; 1 the job returned an error status; 2 bad usage
(malformed words, buffers or tables, unknown buffer name or part) or a part without the SEC
block (t2080-nosec: nothing runs).

example (AES-128-CBC encrypt, next IV written back to iv):
  cryptoffload caam run --in key=hex:000102030405060708090a0b0c0d0e0f \\
    --in iv=hex:00000000000000000000000000000000 --in msg=text:sixteen_bytes_.. \\
    --out ct=16 b080000c 02200010 @key 12200010 @iv 82100101 22120010 @msg \\
    60300010 @ct 52200010 @iv

example (the same as the Linux driver runs it: its cbc(aes) shared descriptor, key inline,
and a job descriptor pointing at it, with S/G tables [iv, msg] in and [ct, iv] out):
  cryptoffload caam run --in iv=hex:00000000000000000000000000000000 \\
    --in msg=text:sixteen_bytes_.. --out ct=16 --sg src=iv,msg --sg dst=ct,iv \\
    --shared "b880120e a1004006 02800010 00010203 04050607 08090a0b 0c0d0e0f \\
              1a200010 82100105 a8080b04 a8080a04 2b120000 69300000 5a200010" \\
    b08e1c08 @shared f1400000 @src 00000020 f9400000 @dst 00000020
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
    shared = p.add_mutually_exclusive_group()
    shared.add_argument(
        "--shared",
        metavar="WORDS",
        help="a shared descriptor's words (one argument, @NAME allowed); @shared is its address",
    )
    shared.add_argument(
        "--shared-file",
        metavar="FILE",
        help="read the shared descriptor's words from FILE ('-': stdin)",
    )
    p.add_argument(
        "--sg",
        dest="tables",
        action="append",
        default=[],
        metavar="NAME=BUF[+OFF][:LEN],...",
        help="a sec4 S/G table over buffers or slices of them (repeatable); @NAME is its address",
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
        "--disasm",
        action="store_true",
        help="also print the buffer and table addresses and the descriptors' disassembly",
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
            return _read_stdin()
        return _read_text(args.words_file, "--words-file")
    return _command_line_words(args.words)


def _read_stdin() -> str:
    """Standard input as text; input the locale cannot decode is a ValueError saying so."""
    try:
        return sys.stdin.read()
    except UnicodeDecodeError as exc:
        raise ValueError(f"standard input: not {exc.encoding} text (offset {exc.start})") from None


def _read_text(path: str, option: str) -> str:
    """The UTF-8 text of ``path``; a file that is not UTF-8 is a ValueError naming it."""
    with open(path, encoding="utf-8") as f:
        try:
            return f.read()
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"{option} {path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at "
                f"offset {exc.start})"
            ) from None


def _shared_words(args: argparse.Namespace) -> str | None:
    if args.shared is not None:
        return args.shared
    if args.shared_file is None:
        return None
    if args.shared_file == "-":
        if args.words_file == "-" or (args.words_file is None and args.words in ([], ["-"])):
            raise ValueError("the job's words and --shared-file cannot both come from stdin")
        return _read_stdin()
    return _read_text(args.shared_file, "--shared-file")


def _command_line_words(words: list[str]) -> str:
    """The words given on the command line, or stdin when there are none or only '-'."""
    if not words or words == ["-"]:
        return _read_stdin()
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
    for name, table in result.tables.items():
        count = len(table.image) // sgtable.ENTRY_SIZE
        lines.append(
            f"table {name} at 0x{table.address:08x}, {count} entries ({len(table.entries)} used), "
            f"{len(table.image)} bytes"
        )
        for n, (piece, entry) in enumerate(zip(table.slices, table.entries, strict=True)):
            fin = ", fin" if entry.final else ""
            at = f"0x{entry.address:08x}"
            where = piece.name + (f"+{piece.offset}" if piece.offset else "")
            lines.append(f"  entry {n}: {where}, {entry.length} bytes at {at}{fin}")
    lines += _disassembly(result.words, result)
    if result.shared_address is not None:
        lines.append(
            f"shared descriptor at 0x{result.shared_address:08x}, {len(result.shared_words)} words"
        )
        lines += _disassembly(result.shared_words, result)
    return lines


def _disassembly(words: tuple[int, ...], result: workbench.WorkbenchResult) -> list[str]:
    return disasm.disassemble_text(
        words, long_pointers=result.long_pointers, byteorder=result.byteorder
    ).splitlines()


def _shared_notes(result: workbench.WorkbenchResult) -> list[str]:
    """How the job header and the shared descriptor (``--shared``) fit together."""
    header = result.words[0]
    if header & CMD_MASK != E.CMD_DESC_HDR:
        return []
    if not header & E.HDR_SHARED:
        if result.shared_address is None:
            return []
        return ["--shared given, but the job header has SHARED (0x1000) clear: it is not run"]
    if result.shared_address is None:
        return ["the job header has SHARED set but no --shared descriptor was given"]
    out = []
    pointer = 0
    for word in result.words[1 : 3 if result.long_pointers else 2]:
        pointer = pointer << 32 | word
    if pointer != result.shared_address:
        out.append("the job header's pointer (the word after it) is not @shared")
    told = header >> E.HDR_START_SHIFT & E.HDR_START_MASK
    if told != len(result.shared_words):
        out.append(
            f"the job header gives the shared descriptor {told} words (bits 21:16); "
            f"--shared has {len(result.shared_words)}"
        )
    return out


def cmd_run(args: argparse.Namespace, console: Any = None) -> int:
    """``caam run``: run one descriptor on the model; exit 0 for status 0, 1 for an error status."""
    buffers = [workbench.parse_buffer(s, output=False) for s in args.inputs]
    buffers += [workbench.parse_buffer(s, output=True) for s in args.outputs]
    tables = [workbench.parse_table(s) for s in args.tables]
    shared = _shared_words(args)
    result = workbench.run_descriptor(
        args.part,
        _run_words(args),
        buffers,
        shared=shared,
        tables=tables,
        rng_instantiated=not args.no_rng_instantiate,
        long_pointers=args.long_pointers,
        seed=args.seed.encode() if args.seed is not None else None,
    )
    written = workbench.save_outputs(result, buffers)
    commands = decode(result.words, long_pointers=result.long_pointers, byteorder=result.byteorder)
    notes = disasm.notes(result.words, commands)
    shared_commands = None
    if result.shared_address is not None:
        shared_commands = decode(
            result.shared_words, long_pointers=result.long_pointers, byteorder=result.byteorder
        )
        notes += [
            f"shared descriptor: {n}" for n in disasm.notes(result.shared_words, shared_commands)
        ]
    notes += _shared_notes(result)
    if args.json:
        out = result.to_json() | {"notes": notes, "written": written}
        if args.disasm:
            out["disasm"] = disasm.to_json(commands)
            if shared_commands is not None:
                out["shared_disasm"] = disasm.to_json(shared_commands)
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
    text = _command_line_words(args.words)
    words = disasm.parse_words(text)
    for warning in disasm.word_warnings(text):
        print(f"cryptoffload caam disasm: warning: {warning}", file=sys.stderr)
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
