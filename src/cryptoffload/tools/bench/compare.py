"""Two saved bench runs side by side: loading them, row-by-row changes, the rows left over."""

from __future__ import annotations

import json
import math
from typing import Any

from rich.console import Console
from rich.table import Table

from cryptoffload.tools.bench import stats
from cryptoffload.tools.bench.report import size_label

#: What `compare` reads, for the messages that refuse anything else.
EXPECTED = (
    "the JSON that `cryptoffload bench --format json` or `--out` writes: an object with "
    '"rows", a list of objects with "algorithm", "operation", "engine", "unit" (text), '
    '"block" (bytes or null), "median" (a number or null) and "trials" (a list of numbers)'
)

_TEXT_FIELDS = ("algorithm", "operation", "engine", "unit")


def legend() -> str:
    """What the verdict column means: the test, its confidence, the trials it needs."""
    need = stats.trials_needed()
    return (
        f"Beyond noise: the two runs' trial rates differ at {stats.CONFIDENCE:.0%} confidence "
        f"(exact two-sided Mann-Whitney U test, p <= {1 - stats.CONFIDENCE:.2f}) and the change "
        f"is larger than either run's spread ((max-min)/median of its trials). The test needs "
        f"{need} or more trials in each run (bench --trials {need}); with fewer: too few trials "
        f"to tell."
    )


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    return "a list" if isinstance(value, list) else "an object"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _row_problem(i: int, row: Any) -> str | None:
    if not isinstance(row, dict):
        return f"rows[{i}] is {_json_type(row)}, not an object"
    for key in _TEXT_FIELDS:
        if not isinstance(row.get(key), str):
            return f"rows[{i}] has {key!r} {_json_type(row.get(key))}, not text"
    block = row.get("block")
    if block is not None and (not isinstance(block, int) or isinstance(block, bool)):
        return f"rows[{i}] has 'block' {_json_type(block)}, not bytes or null"
    median = row.get("median")
    if median is not None and not _is_number(median):
        return f"rows[{i}] has 'median' {_json_type(median)}, not a number or null"
    if median is not None and not _is_rate(median):
        return f"rows[{i}] has 'median' {median!r}, not a finite number 0 or above"
    trials = row.get("trials", [])
    if not isinstance(trials, list) or not all(_is_number(t) for t in trials):
        return f"rows[{i}] has 'trials' that is not a list of numbers"
    bad = next((t for t in trials if not _is_rate(t)), None)
    if bad is not None:
        return f"rows[{i}] has a trial of {bad!r}, not a finite number 0 or above"
    if median is not None and "trials" in row and not trials:
        return f"rows[{i}] has a median but an empty list of 'trials'"
    return None


def _is_rate(value: float) -> bool:
    """A rate a bench could have measured: finite, not negative (NaN is neither)."""
    return math.isfinite(value) and value >= 0


def load_run(path: str) -> dict[str, Any]:
    """A saved bench run from ``path``; ValueError naming the file and the shape expected."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not JSON (not UTF-8 text); expected {EXPECTED}") from None
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not JSON: {exc}; expected {EXPECTED}") from None
    if not isinstance(data, dict) or "rows" not in data:
        raise ValueError(f"{path} is not a saved bench run (no 'rows'); expected {EXPECTED}")
    rows = data["rows"]
    if not isinstance(rows, list):
        problem = f"'rows' is {_json_type(rows)}, not a list"
    else:
        problem = next((p for i, r in enumerate(rows) if (p := _row_problem(i, r))), None)
    if problem:
        raise ValueError(f"{path} is not a saved bench run ({problem}); expected {EXPECTED}")
    return data


def _key(row: dict[str, Any]) -> tuple:
    return (row["algorithm"], row["operation"], row["engine"], row["block"])


def _label(key: tuple) -> str:
    algorithm, operation, engine, block = key
    at = f" at {size_label(block)}" if block is not None else ""
    return f"{algorithm} {operation} on {engine}{at}"


def compare(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
    """Row-by-row change from run ``a`` to run ``b``, for rows measured in both.

    A change is beyond the noise when an exact two-sided Mann-Whitney U test on the two rows'
    trial rates rejects "one distribution" at :data:`stats.CONFIDENCE` and the change is larger
    than either row's spread (see :func:`stats.verdict`); with too few trials for the test the
    verdict is "too few trials" (and ``beyond_noise`` false).
    """
    old = {_key(r): r for r in a["rows"]}
    out = []
    for row in b["rows"]:
        before = old.get(_key(row))
        if before is None or not before.get("median") or not row.get("median"):
            continue
        ta, tb = before.get("trials") or [before["median"]], row.get("trials") or [row["median"]]
        found = stats.verdict(ta, tb)
        out.append(
            {
                "algorithm": row["algorithm"],
                "operation": row["operation"],
                "engine": row["engine"],
                "block": row["block"],
                "unit": row["unit"],
                "before": before["median"],
                "after": row["median"],
                "change": row["median"] / before["median"] - 1,
                "beyond_noise": found.text == "beyond noise",
                "verdict": found.text,
                "p_value": None if found.p_value is None else round(found.p_value, 4),
                "spread": round(found.spread, 4),
                "n_trials": [len(ta), len(tb)],
            }
        )
    return out


def unmatched(a: dict[str, Any], b: dict[str, Any]) -> dict[str, list[str]]:
    """Rows :func:`compare` leaves out: in one run only, or without a speed in either."""
    keys_a = {_key(r): r for r in a["rows"]}
    keys_b = {_key(r): r for r in b["rows"]}
    return {
        "only_before": [_label(k) for k in keys_a if k not in keys_b],
        "only_after": [_label(k) for k in keys_b if k not in keys_a],
        "unmeasured": [
            _label(k)
            for k, r in keys_b.items()
            if k in keys_a and not (keys_a[k].get("median") and r.get("median"))
        ],
    }


def leftover_lines(left: dict[str, list[str]], before: str, after: str) -> list[str]:
    """One line per kind of row left out of the comparison, naming the rows."""
    lines = []
    for key, what in (
        ("only_before", f"only in {before}"),
        ("only_after", f"only in {after}"),
        ("unmeasured", "without a speed in one of the runs"),
    ):
        if left[key]:
            lines.append(f"not compared, {what} ({len(left[key])}): " + "; ".join(left[key]))
    return lines


def nothing_in_common(a: dict[str, Any], b: dict[str, Any], before: str, after: str) -> str:
    """Why there is nothing to compare, for the error that stops ``compare``."""
    left = unmatched(a, b)
    text = (
        f"{before} and {after} have no rows in common measured in both (rows match on "
        f"algorithm, operation, engine and block size; {before} has {len(a['rows'])} rows, "
        f"{after} has {len(b['rows'])})"
    )
    lines = leftover_lines(left, before, after)
    return text + ("\n" + "\n".join(lines) if lines else "")


def _verdict_text(c: dict[str, Any]) -> str:
    if c["verdict"] == "too few trials":
        n1, n2 = c.get("n_trials") or ("?", "?")
        return f"too few trials to tell ({n1} vs {n2})"
    why = f" (p={c['p_value']:.3f}, spread {c['spread']:.1%})"
    return f"[bold]{c['verdict']}[/]{why}" if c["beyond_noise"] else f"{c['verdict']}{why}"


def print_comparison(
    changes: list[dict[str, Any]],
    console: Console,
    left: dict[str, list[str]] | None = None,
    names: tuple[str, str] = ("before", "after"),
) -> None:
    """The comparison as a terminal table, its legend, then the rows left out."""
    table = Table(title="cryptoffload compare")
    for col in ("algorithm", "operation", "engine", "block", "before", "after"):
        table.add_column(col, justify="right" if col in ("before", "after") else "left")
    table.add_column("change", justify="right")
    table.add_column("verdict")
    for c in changes:
        colour = "green" if c["change"] > 0 else "red"
        change = f"[{colour}]{c['change']:+.1%}[/]" if c["beyond_noise"] else f"{c['change']:+.1%}"
        table.add_row(
            c["algorithm"],
            c["operation"],
            c["engine"],
            size_label(c["block"]),
            f"{c['before']:,.2f} {c['unit']}",
            f"{c['after']:,.2f} {c['unit']}",
            change,
            _verdict_text(c),
        )
    console.print(table)
    console.print(legend(), highlight=False)
    for line in leftover_lines(left or unmatched({"rows": []}, {"rows": []}), *names):
        console.print(line, highlight=False, markup=False)
