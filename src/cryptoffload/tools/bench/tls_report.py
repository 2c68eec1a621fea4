"""Reports of `bench --tls`: terminal table, Markdown, CSV (JSON is the result as it is), and the
lines under them that say what the rows are and what the kernel did or why not."""

from __future__ import annotations

import csv
import io
from typing import Any

from rich.console import Console
from rich.table import Table

from cryptoffload.tools.bench.report import json_text, size_label
from cryptoffload.tools.bench.timing import NOISY_SPREAD

COLUMNS = (
    "version",
    "path",
    "write",
    "MiB/s",
    "spread",
    "user ms/MiB",
    "sys ms/MiB",
    "cpu spread",
    "user CPU ratio",
    "records send/recv",
    "tls_stat",
    "driver",
)
_RIGHT = {"MiB/s", "spread", "user ms/MiB", "sys ms/MiB", "cpu spread", "user CPU ratio"}


def write_label(row: dict[str, Any]) -> str:
    return size_label(row["block"]) if row["block"] is not None else "file"


def _spread(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:.1%}" + (" noisy" if value > NOISY_SPREAD else "")


def _ratio(row: dict[str, Any]) -> str:
    if row["user_cpu_ratio"] is None:
        return ""
    if row["path"] == "user-space":
        return "(base)"
    text = f"{row['user_cpu_ratio']:.2f}"
    if row["block"] is None:
        text += f" (vs {size_label(row['against']['block'])})"
    return text


def _short(place: str | None) -> str:
    return {"user-space": "user", None: "?"}.get(place, place or "?")


def tls_stat_text(stat: dict[str, int]) -> str:
    """The counters that moved, without their common ``Tls`` prefix: ``TxSw +3, RxSw +3``."""
    return ", ".join(f"{name.removeprefix('Tls')} +{moved}" for name, moved in stat.items())


def _driver(row: dict[str, Any]) -> str:
    d = row.get("driver")
    if not d:
        return ""
    return f"{d['driver']} ({'hardware' if d.get('hardware') else 'software'})"


def cells(row: dict[str, Any]) -> list[str]:
    """A row's cells, in :data:`COLUMNS` order."""
    head = [row["version"], row["path"], write_label(row)]
    if row["median"] is None:
        text = "not available (reason below)" if row.get("unavailable") else row["note"]
        return [*head, text] + [""] * (len(COLUMNS) - 4)
    cpu, records = row["cpu"], row["records"] or {}
    return [
        *head,
        f"{row['median']:,.1f}",
        _spread(row["spread"]),
        f"{cpu['user_ms_per_mib']:.2f}",
        f"{cpu['system_ms_per_mib']:.2f}",
        _spread(cpu["user_spread"]),
        _ratio(row),
        "/".join(_short(records.get(end)) for end in ("sender", "receiver")),
        tls_stat_text(row["tls_stat"]) or "-",
        _driver(row),
    ]


def _goal_lines(result: dict[str, Any]) -> list[str]:
    goal = result["settings"]["ratio_goal"]
    lines = []
    for row in result["rows"]:
        at = row["block"] or row["against"]["block"]
        if row["path"] in ("ktls-send", "ktls-sendfile") and at == 16384:
            if row["user_cpu_ratio"] is None:
                continue
            met = "met" if row["user_cpu_ratio"] <= goal else "not met"
            lines.append(
                f"{row['version']} {row['path']} at 16 KiB: user CPU {row['user_cpu_ratio']:.2f} "
                f"of user-space TLS's (goal <= {goal}: {met})"
            )
    return lines


def _unique(lines: list[str]) -> list[str]:
    return list(dict.fromkeys(lines))


def notes(result: dict[str, Any]) -> list[str]:
    """The lines under the table: what was run, what the columns mean, what the kernel did."""
    m, s, rows = result["machine"], result["settings"], result["rows"]
    facts = m.get("kernel_tls", {})
    lines = [
        f"{m['cpu_model']} ({m['cores']} cores, {m['arch']}), {m['kernel']}, "
        f"{facts.get('ssl_openssl', m['openssl'])}, Python {m['python']}",
        f"{s['trials']} trials per row, each one loopback connection of {size_label(s['transfer'])}"
        " with both ends in this process (CPU is the process's: both ends), median shown; each "
        f"row's first connection ({size_label(s['check_bytes'])}, not timed) is hashed at both "
        "ends: the bytes arrived intact",
        f"spread = (max-min)/median of a row's trials (MiB/s; cpu spread: user CPU per MiB); "
        f"over {NOISY_SPREAD:.0%} it is flagged noisy",
        "user CPU ratio: the row's user CPU per MiB over user-space TLS's at the same "
        f"version and write size (sendfile: {size_label(s['sendfile_against'])}, the records the "
        f"kernel fills); the goal for kTLS is <= {s['ratio_goal']} at 16 KiB",
        "records send/recv: who did the records of the data's direction, the sender's (client) "
        "and the receiver's (server): the kernel or user space (OpenSSL in this process)",
        *_goal_lines(result),
    ]
    paths = {r["path"] for r in rows}
    lines += _unique(
        [f"{r['path']}: not available: {r['unavailable']}" for r in rows if r.get("unavailable")]
    )
    lines += _unique(
        [
            f"{r['version']} {r['path']}: {end['half']}"
            for r in rows
            if r["median"] is not None
            for end in (r["client"], r["server"])
            if end and end.get("half")
        ]
    )
    if "ktls-sendfile" in paths:
        lines.append(
            "ktls-sendfile: this Python's ssl calls SSL_sendfile; the rows go through "
            "KernelTLSSocket.sendfile, which does what it does (os.sendfile on the socket)"
            if facts.get("ssl_sendfile")
            else "ktls-sendfile: this Python's ssl has no SSL_sendfile (its SSLSocket.sendfile "
            "reads the file into user space); the rows go through KernelTLSSocket.sendfile: "
            "os.sendfile on the socket when the kernel does the send side, what SSL_sendfile does"
        )
    if "asyncio" in paths:
        moved = any(r["tls_stat"] for r in rows if r["path"] == "asyncio")
        lines.append(
            "asyncio: OpenSSL fed from memory (ssl.SSLObject), never the kernel: kTLS needs "
            "OpenSSL to own the socket"
            + ("" if moved or not facts.get("tls_stat") else "; tls_stat did not move")
        )
    if not facts.get("tls_stat"):
        lines.append("no /proc/net/tls_stat: this kernel has no kTLS (or its tls module is not in)")
    return lines


def print_table(result: dict[str, Any], console: Console) -> None:
    """The rows as a terminal table (a section per version and write size), then the notes."""
    table = Table(title="cryptoffload bench --tls")
    for col in COLUMNS:
        table.add_column(col, justify="right" if col in _RIGHT else "left")
    previous = None
    for row in result["rows"]:
        key = (row["version"], row["block"])
        if previous is not None and key != previous:
            table.add_section()
        previous = key
        table.add_row(*cells(row), style="dim" if row["median"] is None else None)
    console.print(table)
    for line in notes(result):
        console.print(line, highlight=False, markup=False)


def markdown(result: dict[str, Any]) -> str:
    """The rows as a Markdown table, the notes as a list under it."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cells(row)) + " |" for row in result["rows"]]
    return "\n".join([*lines, "", *(f"- {line}" for line in notes(result))]) + "\n"


CSV_FIELDS = (
    "version",
    "path",
    "block",
    "unit",
    "median",
    "spread",
    "noisy",
    "user_ms_per_mib",
    "system_ms_per_mib",
    "user_spread",
    "user_cpu_ratio",
    "speedup",
    "sender",
    "receiver",
    "tls_stat",
    "driver",
    "hardware",
    "note",
    "trials",
)


def csv_text(result: dict[str, Any]) -> str:
    """One CSV line per row."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_FIELDS, extrasaction="ignore")
    writer.writeheader()
    for row in result["rows"]:
        flat = dict(row)
        flat.update(row["cpu"] or {})
        flat.update(row["records"] or {})
        flat["tls_stat"] = " ".join(f"{k}={v}" for k, v in row["tls_stat"].items())
        driver = row.get("driver") or {}
        flat["driver"], flat["hardware"] = driver.get("driver", ""), driver.get("hardware", "")
        flat["trials"] = " ".join(str(t) for t in row["trials"])
        writer.writerow(flat)
    return out.getvalue()


def render(result: dict[str, Any], fmt: str) -> str:
    """The report in ``fmt``: md, csv or json."""
    return {"md": markdown, "csv": csv_text, "json": json_text}[fmt](result)


def failure_lines(result: dict[str, Any]) -> list[str]:
    """One line per row that failed (for stderr: the exit status is then 1)."""
    return [
        f"--tls {r['version']} {r['path']} {write_label(r)}: {r['note']}"
        for r in result["rows"]
        if r.get("failed")
    ]
