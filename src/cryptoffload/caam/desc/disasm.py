"""Descriptor disassembly: decoded commands as one line each, or as JSON objects for tools."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cryptoffload.caam.desc import encoding as E
from cryptoffload.caam.desc.decoder import Command, decode

#: Code fields shown together with the name that explains them: ``type=MSG(0x12)``.
_NAMED = {
    "type": "type_name",
    "alg": "alg_name",
    "aai": "aai_name",
    "reg": "reg_name",
    "function": "function_name",
    "state": "state_name",
    "protid": "prot_name",
    "test": "test_name",
    "src0": "src0_name",
    "src1": "src1_name",
    "dest": "dest_name",
    "src": "src_name",
}
_HEX = {
    "pointer", "unknown_bits", "protinfo", "reg", "type", "alg", "aai", "function", "protid",
    "src0", "src1", "dest", "src", "src0_imm", "src1_imm",
}  # fmt: skip
_LABELS = {"cls": "class", "protid": "protocol"}


def carries_key(command: Command) -> bool:
    """Whether the command's immediate data is key material (KEY, or a LOAD into a key register)."""
    name, fields = command.name, command.fields
    if name in ("KEY", "SEQ_KEY"):
        return fields.get("data") is not None
    return name in ("LOAD", "SEQ_LOAD") and fields.get("reg_name") == "key" and fields.get("data")


def _hidden(command: Command) -> Command:
    """The command with its key bytes replaced by a note of their length, words masked alike."""
    fields = dict(command.fields)
    fields["data"] = f"<{len(command.fields['data'])} key bytes hidden: --show-keys>"
    words = command.words[:1] + (None,) * (len(command.words) - 1)
    return Command(command.index, command.name, words, fields)  # type: ignore[arg-type]


def _value(key: str, value: Any) -> str:
    if isinstance(value, (bytes, bytearray)):
        return value.hex() if value else "(empty)"
    if isinstance(value, tuple):
        return "|".join(str(v) for v in value) if value else "-"
    if isinstance(value, int) and key in _HEX:
        return f"0x{value:08x}" if key == "pointer" else f"0x{value:x}"
    if isinstance(value, str) and key == "reason":
        return f'"{value}"'
    return str(value)


def _fields_text(fields: dict[str, Any]) -> str:
    flags = [k for k, v in fields.items() if v is True]
    parts = []
    shown_names = set(_NAMED.values())
    for key, value in fields.items():
        if value is None or isinstance(value, bool) or key in shown_names:
            continue
        label = _LABELS.get(key, key)
        if key in _NAMED and _NAMED[key] in fields:
            parts.append(f"{label}={fields[_NAMED[key]]}({_value(key, value)})")
        elif key == "condition":
            names = fields.get("condition_names") or ()
            parts.append(f"condition=0x{value:02x}" + (f"({'|'.join(names)})" if names else ""))
        elif key != "condition_names":
            parts.append(f"{label}={_value(key, value)}")
    return " ".join(parts + flags)


def _pdb_text(fields: dict[str, Any]) -> str:
    head = f"protocol={fields['protocol'] or '-'}"
    if fields["layout"] is None:
        words = " ".join(f"0x{w:08x}" for w in fields["words"])
        return f"{head} layout=unrecognised words={words}"
    named = " ".join(
        f"{k}={v}" if k.endswith("_len") else f"{k}=0x{v:08x}" for k, v in fields["fields"].items()
    )
    return f"{head} layout={fields['layout']} {named}"


def format_command(command: Command, *, show_keys: bool = False) -> str:
    """One line: word index, first word, command name, every field named (key bytes hidden
    unless ``show_keys``)."""
    if not show_keys and carries_key(command):
        command = _hidden(command)
    text = _pdb_text(command.fields) if command.name == "PDB" else _fields_text(command.fields)
    if command.name == "UNKNOWN":
        text += " words=" + " ".join(f"0x{w:08x}" for w in command.words)
    first = f"{command.words[0]:08x}" if command.words else "-" * 8
    return f"{command.index:>3}  {first}  {command.name:<14} {text}".rstrip()


def notes(words: Sequence[int], commands: Sequence[Command]) -> list[str]:
    """Remarks about the input as a whole: no header, words missing or left over."""
    out = []
    if not commands:
        return ["no words"]
    if commands[0].name not in ("HEADER", "SHARED_HEADER"):
        out.append("the first word is not a header: decoded as a sequence of commands")
        return out
    length = commands[0].fields.get("length", 0)
    if length > len(words):
        out.append(f"the header says {length} words, only {len(words)} given")
    elif len(words) > length:
        out.append(f"{len(words) - length} word(s) after the header's length not decoded")
    return out


def disassemble_text(
    words: Sequence[int],
    *,
    long_pointers: bool = False,
    byteorder: str = "big",
    show_keys: bool = False,
) -> str:
    """The disassembly as text, one line per command, then notes starting with ``;``."""
    commands = decode(words, long_pointers=long_pointers, byteorder=byteorder)
    lines = [format_command(c, show_keys=show_keys) for c in commands]
    lines += [f"; {n}" for n in notes(words, commands)]
    return "\n".join(lines) + "\n"


def _jsonable(key: str, value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if key == "words":
        return [None if w is None else f"0x{w:08x}" for w in value]
    if isinstance(value, dict):
        return {k: _jsonable(k, v) for k, v in value.items()}
    if isinstance(value, tuple):
        return list(value)
    return value


def to_json(commands: Sequence[Command], *, show_keys: bool = False) -> list[dict[str, Any]]:
    """Commands as JSON-ready objects: index, name, words as hex strings, fields (bytes as hex).

    Key bytes (and the words that hold them, as null) are hidden unless ``show_keys``.
    """
    if not show_keys:
        commands = [_hidden(c) if carries_key(c) else c for c in commands]
    return [
        {
            "index": c.index,
            "name": c.name,
            "words": _jsonable("words", c.words),
            "fields": _jsonable("fields", c.fields),
        }
        for c in commands
    ]


def _tokens(text: str) -> list[str]:
    tokens = []
    for line in text.splitlines():
        tokens += line.split("#", 1)[0].replace(",", " ").split()
    return tokens


def word_warnings(text: str) -> list[str]:
    """One warning per word of ``text`` that is not exactly 8 hex digits (``0x`` aside): a digit
    dropped or added is read as a number, zero-padded, and decodes as some other command."""
    out = []
    for i, token in enumerate(_tokens(text)):
        digits = token[2:] if token.lower().startswith("0x") else token
        if len(digits) == 8:
            continue
        try:
            value = int(digits, 16)
        except ValueError:
            continue  # parse_words refuses it
        out.append(
            f"word {i} ({token!r}) has {len(digits)} hex digit(s), not 8: read as 0x{value:08x}"
        )
    return out


def parse_words(text: str) -> list[int]:
    """Hex words separated by whitespace or commas, ``0x`` optional; ``#`` starts a comment."""
    tokens = _tokens(text)
    words = []
    for i, token in enumerate(tokens):
        digits = token[2:] if token.lower().startswith("0x") else token
        try:
            if not digits or digits.startswith(("+", "-", "_")):
                raise ValueError
            value = int(digits, 16)
        except ValueError:
            raise ValueError(f"word {i} ({token!r}) is not a hex number") from None
        if value > E.WORD_MASK:
            raise ValueError(f"word {i} ({token!r}) does not fit 32 bits")
        words.append(value)
    if not words:
        raise ValueError("no descriptor words given")
    return words
