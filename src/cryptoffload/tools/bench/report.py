"""Reports of a benchmark run: terminal table, Markdown, CSV, JSON; the sweep grid; TLS 1.3."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from rich.console import Console
from rich.table import Table

from cryptoffload.tools.bench.timing import NOISY_SPREAD

_COLUMNS = ("algorithm", "engine", "block", "result", "spread", "speedup")
_CPU_COLUMNS = ("real/user/sys s", "cpu", "reading")


def size_label(block: int | None) -> str:
    """A buffer size as people write it: 16 KiB, 1 MiB, 1400 B; "-" for no size."""
    if block is None:
        return "-"
    for unit, factor in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if block >= factor and block % factor == 0:
            return f"{block // factor} {unit}"
    return f"{block} B"


def result_text(row: dict[str, Any]) -> str:
    """The figure, or why there is none: a row that offloaded nothing never shows a speed.

    An engine that is not available says so; its reason, the same on every row, is printed
    once under the table (:func:`unavailable_lines`).
    """
    if row.get("unavailable") is not None:
        return "not available (reason below)"
    if row["median"] is None:
        return row["note"] or "-"
    text = f"{row['median']:,.2f} {row['unit']}"
    share = row.get("offload_share", 1.0)
    if row["engine"] != "software" and row.get("offloaded") and share < 0.999:
        text += f" ({share:.0%} offloaded)"
    return text


def spread_legend(trials: Any) -> str:
    """What the spread column shows: the figure the noisy flag is computed from."""
    return (
        f"spread = (max-min)/median of the {trials} trials of a row; "
        f"over {NOISY_SPREAD:.0%} it is flagged noisy"
    )


def _columns(report: dict[str, Any]) -> tuple[str, ...]:
    """The table's columns: no speedup column when only software rows have a figure."""
    cols = _COLUMNS if engine_measured(report) else _COLUMNS[:-1]
    return cols + (_CPU_COLUMNS if report["settings"].get("cpu") else ())


def _cells(row: dict[str, Any], with_speedup: bool = True) -> list[str]:
    spread = f"{row['spread']:.1%}" if row.get("spread") is not None else ""
    if row.get("noisy"):
        spread += " noisy"
    speedup = f"{row['speedup']:.2f}x" if row.get("speedup") else ""
    label = f"{row['algorithm']} {row['operation']}"
    cells = [label, row["engine"], size_label(row["block"]), result_text(row), spread]
    return [*cells, speedup] if with_speedup else cells


def software_only_lines(report: dict[str, Any]) -> list[str]:
    """When no engine row has a figure: which engines were looked for and why each is absent,
    and that the speedup column is left out (software against itself says nothing)."""
    if engine_measured(report):
        return []
    shown = {line.split(":", 1)[0] for line in unavailable_lines(report)}
    looked = report.get("machine", {}).get("engines_looked_for")
    lines = ["only software was measured: the speedup column is left out"]
    if looked is None:
        return lines
    absent = [e for e in looked if not e["available"] and e["name"] not in shown]
    if not looked:
        lines.append("no engine other than software was looked for")
    elif absent:
        lines.append(
            "engines looked for: "
            + ", ".join(e["name"] for e in looked)
            + ("; none available" if len(absent) == len(looked) else "")
        )
        lines += [f"{e['name']}: not available: {e['reason']}" for e in absent]
    return lines


def _cpu_cells(row: dict[str, Any]) -> list[str]:
    c = row.get("cpu")
    if not c:
        return ["", "", ""]
    share = f"{c['cpu_share']:.0%}" if c["cpu_share"] is not None else ""
    return [f"{c['wall']:.2f}/{c['user']:.2f}/{c['sys']:.2f}", share, c["reading"]]


def busy_machine_warning(report: dict[str, Any]) -> str | None:
    """A warning when software rows did not get a whole core: CPU readings are then unreliable."""
    shares = [
        r["cpu"]["cpu_share"]
        for r in report["rows"]
        if r["engine"] == "software" and r.get("cpu") and r["cpu"]["cpu_share"] is not None
    ]
    if shares and min(shares) < 0.8:
        return (
            f"software rows got as little as {min(shares):.0%} of a core: the machine is busy, "
            "so the CPU readings (and the figures) carry other work's noise"
        )
    return None


def print_table(report: dict[str, Any], console: Console) -> None:
    """The rows as a terminal table, software and engine rows side by side."""
    with_cpu = report["settings"].get("cpu")
    with_speedup = engine_measured(report)
    table = Table(title="cryptoffload bench", show_lines=False)
    for col in _columns(report):
        table.add_column(col, justify="right" if col in ("result", "speedup", "cpu") else "left")
    previous = None
    for row in report["rows"]:
        key = (row["algorithm"], row["operation"], row["block"])
        if previous is not None and key != previous:
            table.add_section()
        previous = key
        cells = _cells(row, with_speedup) + (_cpu_cells(row) if with_cpu else [])
        table.add_row(*cells, style="dim" if row["median"] is None else None)
    console.print(table)
    m, s = report["machine"], report["settings"]
    console.print(
        f"{m['cpu_model']} ({m['cores']} cores, {m['arch']}), {m['kernel']}, {m['openssl']}; "
        f"{s['trials']} trials x {s['time']} s per row, median shown; "
        f"harness {s['harness_ns_per_call']} ns per call",
        highlight=False,
    )
    console.print(spread_legend(s["trials"]), highlight=False)
    for line in unavailable_lines(report) + software_only_lines(report):
        console.print(line, highlight=False, markup=False)
    warning = busy_machine_warning(report) if with_cpu else None
    if warning:
        console.print(f"[yellow]note:[/] {warning}")


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + "."


def markdown(report: dict[str, Any]) -> str:
    """The rows as a Markdown table."""
    with_cpu = report["settings"].get("cpu")
    with_speedup = engine_measured(report)
    head = list(_columns(report))
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in report["rows"]:
        cells = _cells(row, with_speedup) + (_cpu_cells(row) if with_cpu else [])
        lines.append("| " + " | ".join(cells) + " |")
    m = report["machine"]
    lines += [
        "",
        f"Machine: {m['cpu_model']}, {m['kernel']}, {m['openssl']}, Python {m['python']}.",
        "",
        _sentence(spread_legend(report["settings"].get("trials", ""))),
        *(f"- {line}" for line in unavailable_lines(report) + software_only_lines(report)),
    ]
    return "\n".join(lines) + "\n"


def csv_text(report: dict[str, Any]) -> str:
    """One CSV line per row, with the machine-readable fields."""
    fields = [
        "algorithm",
        "operation",
        "engine",
        "block",
        "unit",
        "median",
        "spread",
        "noisy",
        "offloaded",
        "offload_share",
        "speedup",
        "note",
        "trials",
    ]
    if report["settings"].get("cpu"):
        fields += ["wall", "user", "sys", "cpu_share", "reading"]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=fields, extrasaction="ignore")
    writer.writeheader()
    for row in report["rows"]:
        flat = dict(row)
        flat["trials"] = " ".join(str(t) for t in row.get("trials", []))
        flat.update(row.get("cpu") or {})
        writer.writerow(flat)
    return out.getvalue()


def json_text(report: dict[str, Any]) -> str:
    """The whole report as JSON (machine, settings, every trial)."""
    return json.dumps(report, indent=2, sort_keys=False) + "\n"


def render(report: dict[str, Any], fmt: str) -> str:
    """The report in ``fmt``: md, csv or json."""
    renderers = {"md": markdown, "csv": csv_text, "json": json_text}
    return renderers[fmt](report)


def _sweep_grid(result: dict[str, Any]) -> tuple[list[int], list[tuple], dict[tuple, dict]]:
    sizes = result["settings"]["sizes"]
    keys: list[tuple] = []
    cells: dict[tuple, dict] = {}
    for row in result["rows"]:
        key = (row["algorithm"], row["operation"], row["engine"])
        if key not in keys:
            keys.append(key)
        cells[(*key, row["block"])] = row
    return sizes, keys, cells


def engine_measured(result: dict[str, Any]) -> bool:
    """Whether any engine other than software has a speed in ``result`` (so ratios exist)."""
    return any(r["engine"] != "software" and r["median"] is not None for r in result["rows"])


def unavailable_lines(result: dict[str, Any]) -> list[str]:
    """One line per engine that is not available, with its reason (its rows just say so)."""
    seen: dict[str, str] = {}
    for row in result["rows"]:
        if row.get("unavailable") is not None:
            seen.setdefault(row["engine"], row["unavailable"])
    return [f"{engine}: not available: {reason}" for engine, reason in seen.items()]


def _cell(row: dict[str, Any] | None) -> str:
    if row is None:
        return ""
    if row.get("unavailable") is not None:
        return "not available"
    if row["median"] is None:
        return row["note"] or "-"
    text = f"{row['median']:,.1f}"
    if row["engine"] != "software" and row.get("speedup"):
        text += f" ({row['speedup']:.2f}x)"
    return text


def _crossover_text(c: dict[str, Any]) -> str:
    return {
        "crosses": f"offload pays from ~{c['size']} B",
        "falls": f"offload pays below ~{c['size']} B only",
        "always": "offload pays at every size measured",
        "never": "software faster at every size measured",
    }.get(c["kind"], "no data")


def print_sweep(result: dict[str, Any], console: Console) -> None:
    """Throughput per size (MiB/s, engine/software ratio in brackets), then the crossovers."""
    sizes, keys, cells = _sweep_grid(result)
    ratios = "engine/software in brackets" if engine_measured(result) else "no engine measured"
    table = Table(title=f"cryptoffload sweep (MiB/s; {ratios})")
    table.add_column("algorithm")
    table.add_column("engine")
    for size in sizes:
        table.add_column(size_label(size), justify="right")
    for alg, op, engine in keys:
        table.add_row(
            f"{alg} {op}", engine, *(_cell(cells.get((alg, op, engine, s))) for s in sizes)
        )
    console.print(table)
    for line in unavailable_lines(result):
        console.print(line, highlight=False, markup=False)
    for c in result.get("crossovers", []):
        console.print(f"{c['algorithm']} {c['operation']} on {c['engine']}: {_crossover_text(c)}")


def sweep_markdown(result: dict[str, Any]) -> str:
    """The sweep grid and crossovers as Markdown."""
    sizes, keys, cells = _sweep_grid(result)
    lines = [
        "| algorithm | engine | " + " | ".join(size_label(s) for s in sizes) + " |",
        "|---|---|" + "---|" * len(sizes),
    ]
    for alg, op, engine in keys:
        lines.append(
            f"| {alg} {op} | {engine} | "
            + " | ".join(_cell(cells.get((alg, op, engine, s))) for s in sizes)
            + " |"
        )
    lines.append("")
    lines += [f"- {line}" for line in unavailable_lines(result)]
    for c in result.get("crossovers", []):
        lines.append(f"- {c['algorithm']} {c['operation']} on {c['engine']}: {_crossover_text(c)}")
    return "\n".join(lines) + "\n"


def print_tls13(result: dict[str, Any], console: Console) -> None:
    """Estimated TLS 1.3 server handshakes/s and record MiB/s per engine, then what they count."""
    table = Table(title="TLS 1.3 server view (estimated from measured pieces)")
    for col in (
        "engine",
        "handshakes/s ECDSA-P256",
        "handshakes/s RSA-2048",
        "records 1400 B MiB/s",
        "records 16 KiB MiB/s",
        "offloaded ops",
    ):
        table.add_column(col, justify="left" if col in ("engine", "offloaded ops") else "right")
    for e in result["engines"]:
        if e.get("unavailable") is not None:
            table.add_row(e["engine"], "not available", "", "", "", "", style="dim")
            continue
        hs, rec = e["handshakes_per_s"], e["records_mib_per_s"]
        offloaded = ", ".join(f"{k} x{v}" for k, v in e["offloaded_ops"].items()) or (
            "-" if e["engine"] == "software" else "none"
        )
        table.add_row(
            e["engine"],
            f"{hs['ecdhe-p256+ecdsa-p256']:,.1f}",
            f"{hs['ecdhe-p256+rsa-2048']:,.1f}",
            f"{rec['1400']:,.1f}",
            f"{rec['16384']:,.1f}",
            offloaded,
        )
    console.print(table)
    console.print(
        "handshake = ECDHE P-256 keygen + agree, one signature, "
        f"{result['settings']['key_schedule_hmacs']} HMAC-SHA256 (key schedule); server side, "
        "one core"
    )
    for e in result["engines"]:
        if e.get("unavailable") is not None:
            console.print(f"{e['engine']}: not available: {e['unavailable']}", markup=False)
