"""The documentation's generated parts: the CLI reference from the parsers, the Op contract table.

A page holds each between ``<!-- generated: NAME -->`` and ``<!-- end generated: NAME -->``.
``python docs/generated.py`` rewrites them; ``--check`` exits 1, naming the pages, where a page
differs from what the code gives now (tests/test_docs.py runs the same comparison).
"""

from __future__ import annotations

import argparse
import pathlib
import re
import sys
from collections.abc import Callable, Iterator

DOCS = pathlib.Path(__file__).parent


def _cell(text: str) -> str:
    """Text as one Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def _expanded_help(action: argparse.Action, prog: str) -> str:
    """The help text as argparse prints it (its ``%(default)s``-style fields filled in)."""
    text = action.help or ""
    if "%" in text:
        fields = {k: v for k, v in vars(action).items() if v is not argparse.SUPPRESS}
        fields["prog"] = prog
        if isinstance(fields.get("choices"), (list, tuple)):
            fields["choices"] = ", ".join(map(str, fields["choices"]))
        text = text % fields
    return text


def _argument(action: argparse.Action) -> str:
    """How the argument is written: its option strings and value, or its positional name."""
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    value = ""
    if action.nargs != 0:
        metavar = action.metavar
        if metavar is None:
            metavar = "{" + ",".join(map(str, action.choices)) + "}" if action.choices else None
        value = " " + (metavar if isinstance(metavar, str) else " ".join(metavar or ()))
        if value == " ":
            value = " " + action.dest.upper()
    return ", ".join(f"`{option}{value}`" for option in action.option_strings)


def _commands(
    parser: argparse.ArgumentParser, words: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], str, argparse.ArgumentParser]]:
    """Every subcommand under ``parser``, depth first, with the help its parent gives it."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield (*words, name), helps.get(name, ""), sub
                yield from _commands(sub, (*words, name))


def _options_table(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction):
            continue
        text = _expanded_help(action, parser.prog)
        if action.choices and action.option_strings and action.metavar is not None:
            text += f" (one of: {', '.join(map(str, action.choices))})"
        rows.append(f"| {_argument(action)} | {_cell(text)} |")
    if not rows:
        return []
    return ["| argument | what it does |", "|---|---|", *rows, ""]


def cli_reference() -> str:
    """Every command of ``cryptoffload`` with its arguments, as its argparse parsers have them."""
    from cryptoffload.tools.cli import build_parser

    parser = build_parser()
    out = [f"Top level: {_cell(parser.description or '')}", "", *_options_table(parser)]
    for words, summary, sub in _commands(parser, ()):
        out += [f"{'#' * (len(words) + 1)} `cryptoffload {' '.join(words)}`", ""]
        for text in dict.fromkeys(t for t in (summary, sub.description) if t):
            out += [_cell(text), ""]
        out += _options_table(sub)
    return "\n".join(out).rstrip("\n") + "\n"


def contract_table() -> str:
    """``ops.CONTRACT`` as a table: one row per family/kind."""
    from cryptoffload.core import ops

    def names(types: type | tuple[type, ...]) -> str:
        items = types if isinstance(types, tuple) else (types,)
        return ", ".join("`None`" if t is type(None) else f"`{t.__name__}`" for t in items) or "-"

    out = [
        "| family / kind | required | optional | result | returns | answers |",
        "|---|---|---|---|---|---|",
    ]
    for (family, kind), entry in ops.CONTRACT.items():
        required = ", ".join(entry.required) or "-"
        optional = ", ".join(entry.optional) or "-"
        out.append(
            f"| {family} / {kind} | {required} | {optional} | {_cell(entry.result)} "
            f"| {names(entry.returns)} | {names(entry.answers)} |"
        )
    out += ["", "| field | what it holds |", "|---|---|"]
    out += [f"| {name} | {_cell(text)} |" for name, text in ops.FIELDS.items()]
    return "\n".join(out) + "\n"


#: Each generated part: its name in the markers, its page, and what makes it.
PARTS: dict[str, tuple[str, Callable[[], str]]] = {
    "cli": ("reference/cli.md", cli_reference),
    "op-contract": ("reference/op-contract.md", contract_table),
}


def _region(name: str) -> re.Pattern[str]:
    start, end = (
        re.escape(f"<!-- generated: {name} -->"),
        re.escape(f"<!-- end generated: {name} -->"),
    )
    return re.compile(rf"({start}\n)(.*?)({end})", re.S)


def rendered(name: str) -> tuple[pathlib.Path, str, str]:
    """(page, its text now, its text with the part regenerated)."""
    page, make = PARTS[name]
    path = DOCS / page
    text = path.read_text()
    if not _region(name).search(text):
        raise ValueError(f"{page} has no '<!-- generated: {name} -->' ... end markers")
    new = _region(name).sub(lambda m: m.group(1) + "\n" + make() + "\n" + m.group(3), text)
    return path, text, new


def main(argv: list[str]) -> int:
    check = argv == ["--check"]
    if argv and not check:
        print("usage: python docs/generated.py [--check]", file=sys.stderr)
        return 2
    stale = []
    for name in PARTS:
        path, old, new = rendered(name)
        if old != new:
            stale.append(str(path.relative_to(DOCS.parent)))
            if not check:
                path.write_text(new)
    if check and stale:
        print(f"out of date (run python docs/generated.py): {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
