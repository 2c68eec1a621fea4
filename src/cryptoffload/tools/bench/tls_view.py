"""The TLS view of `bench --tls`: per TLS version, path and write size, loopback connections with
both ends in this process (one per trial): MiB/s, user and system CPU per MiB, set against
user-space TLS in the same run, and what the kernel did (whose records it took, its
``tls_stat``, the driver of the record cipher)."""

from __future__ import annotations

import _ssl
import datetime as _dt
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cryptoffload.ktls import kernel
from cryptoffload.ktls.connections import REASONS, Connection
from cryptoffload.ktls.loopback import Loopback, Transfer
from cryptoffload.tools.bench import machine, tls_asyncio
from cryptoffload.tools.bench.report import size_label
from cryptoffload.tools.bench.runner import Interrupted, Progress
from cryptoffload.tools.bench.timing import summarize
from cryptoffload.tools.bench.tls_options import MAX_RECORD, PATHS

#: Paths whose rows need the kernel to do the sender's records.
KERNEL_PATHS = ("ktls-send", "ktls-sendfile")
#: Each row's first connection, hashed at both ends (not timed): the bytes arrive intact.
CHECK_BYTES = 1 << 20
#: The issue's goal: kTLS user CPU per MiB at most this share of user-space TLS's, at 16 KiB.
RATIO_GOAL = 0.2
#: The user-space write size sendfile rows are set against: the kernel fills 16 KiB records.
SENDFILE_AGAINST = 16384


@dataclass(frozen=True)
class Plan:
    """One row to measure: ``block`` is the write size, None for the one sendfile call."""

    version: str
    path: str
    block: int | None


def plan(versions: Sequence[str], records: Sequence[int], paths: Sequence[str]) -> list[Plan]:
    """The rows of a run: by version, then write size (sendfile last), then path."""
    ordered = [p for p in PATHS if p in paths]
    out = []
    for version in versions:
        for block in records:
            out += [Plan(version, p, block) for p in ordered if p != "ktls-sendfile"]
        if "ktls-sendfile" in ordered:
            out.append(Plan(version, "ktls-sendfile", None))
    return out


def _connect(lb: Loopback, p: Plan, size: int, check: bool) -> Transfer:
    if p.path == "asyncio":
        return tls_asyncio.transfer(
            lb, p.version, size=size, record=p.block or MAX_RECORD, check=check
        )
    return lb.transfer(
        p.version,
        ktls=p.path != "user-space",
        size=size,
        record=p.block or MAX_RECORD,
        sendfile=p.path == "ktls-sendfile",
        check=check,
        driver=check,  # read on the checked connection: its /proc/crypto parse is not timed
    )


def base_row(p: Plan) -> dict[str, Any]:
    """A row's keys before it is measured; ``algorithm``, ``operation``, ``engine``, ``block``,
    ``unit``, ``median`` and ``trials`` are bench's row keys (so `compare` takes two runs)."""
    return {
        "algorithm": p.version.lower().replace("v", ""),
        "operation": "transfer",
        "engine": p.path,
        "block": p.block,
        "unit": "MiB/s",
        "median": None,
        "trials": [],
        "spread": None,
        "noisy": False,
        "speedup": None,
        "note": "",
        "version": p.version,
        "path": p.path,
        "cpu": None,
        "user_cpu_ratio": None,
        "against": {"path": "user-space", "block": p.block or SENDFILE_AGAINST},
        "intact": None,
        "records": None,
        "client": None,
        "server": None,
        "tls_stat": {},
        "driver": None,
        "driver_users_added": None,
    }


def _place(in_kernel: bool) -> str:
    return "kernel" if in_kernel else "user-space"


def _ends(row: dict[str, Any], client: Connection | None, server: Connection | None) -> None:
    row["client"] = client.as_dict() if client else None
    row["server"] = server.as_dict() if server else None
    if client is not None and server is not None:
        # the data goes from client to server: the sender's send side, the receiver's receive
        row["records"] = {"sender": _place(client.tx), "receiver": _place(server.rx)}


def unavailable_row(p: Plan, probe: Transfer) -> dict[str, Any]:
    """A kTLS row whose sender's records the kernel did not take: the kernel's reason."""
    row = base_row(p)
    reason = (probe.client.reason if probe.client else None) or "openssl"
    text = f"{reason}: {REASONS.get(reason, 'the kernel did not take the records')}"
    row.update(note=f"not available: {text}", unavailable=text)
    _ends(row, probe.client, probe.server)
    return row


def failed_row(p: Plan, why: str, intact: bool | None = None) -> dict[str, Any]:
    row = base_row(p)
    row.update(note=f"failed: {why}", failed=True, intact=intact)
    return row


def measured_row(p: Plan, probe: Transfer, done: Sequence[Transfer]) -> dict[str, Any]:
    """A row from its timed connections: medians and spreads over them, ``tls_stat`` summed
    over them, the ends as the last one saw them; the driver as the checked one saw it."""
    row = base_row(p)
    rates = [t.mib / t.wall if t.wall > 0 else 0.0 for t in done]
    user = [t.user * 1e3 / t.mib for t in done]
    system = [t.system * 1e3 / t.mib for t in done]
    median, spread, noisy = summarize(rates)
    user_median, user_spread, _ = summarize(user)
    system_median, system_spread, _ = summarize(system)
    stat: dict[str, int] = {}
    for t in done:
        for name, moved in t.tls_stat.items():
            stat[name] = stat.get(name, 0) + moved
    last = done[-1]
    row.update(
        median=round(median, 3),
        trials=[round(r, 3) for r in rates],
        spread=round(spread, 4),
        noisy=noisy,
        cpu={
            "user_ms_per_mib": round(user_median, 3),
            "system_ms_per_mib": round(system_median, 3),
            "user_spread": round(user_spread, 4),
            "system_spread": round(system_spread, 4),
            "user_trials": [round(u, 3) for u in user],
            "system_trials": [round(s, 3) for s in system],
            "wall_s": [round(t.wall, 4) for t in done],
        },
        intact=True,
        tls_stat=stat,
        driver=probe.driver,
        driver_users_added=probe.driver_users_added,
    )
    _ends(row, last.client, last.server)
    return row


def measure(
    lb: Loopback, p: Plan, transfer: int, trials: int, progress: Progress | None = None
) -> dict[str, Any]:
    """One row: a checked connection first (its bytes hashed at both ends; for a kTLS path,
    whether the kernel took the sender's records), then ``trials`` timed ones."""
    where = f"{p.version} {p.path} {size_label(p.block) if p.block else 'file'}"
    try:
        if progress is not None:
            progress(f"{where}: check")
        probe = _connect(lb, p, min(transfer, CHECK_BYTES), check=True)
        if p.path in KERNEL_PATHS and not (probe.client is not None and probe.client.tx):
            return unavailable_row(p, probe)
        if not probe.intact:
            return failed_row(p, "the receiver's bytes differ from the sender's", intact=False)
        done = []
        for i in range(trials):
            if progress is not None:
                progress(f"{where}: trial {i + 1}/{trials}")
            done.append(_connect(lb, p, transfer, check=False))
            if not done[-1].intact:
                return failed_row(p, f"the receiver got fewer bytes than {transfer}", False)
    except Exception as exc:  # a row that cannot run is reported, the run goes on
        return failed_row(p, f"{type(exc).__name__}: {exc}")
    return measured_row(p, probe, done)


def add_ratios(rows: list[dict[str, Any]]) -> None:
    """Each measured row against user-space TLS at its version and ``against`` write size:
    ``speedup`` (MiB/s over MiB/s) and ``user_cpu_ratio`` (user CPU per MiB over user-space's)."""
    base = {
        (r["version"], r["block"]): r
        for r in rows
        if r["path"] == "user-space" and r["median"] is not None
    }
    for row in rows:
        found = base.get((row["version"], row["against"]["block"]))
        if found is None or row["median"] is None:
            continue
        row["speedup"] = round(row["median"] / found["median"], 3) if found["median"] else None
        user = found["cpu"]["user_ms_per_mib"]
        row["user_cpu_ratio"] = round(row["cpu"]["user_ms_per_mib"] / user, 3) if user else None


def kernel_facts() -> dict[str, Any]:
    """What this machine offers TLS: the kernel's kTLS counters, ssl's OpenSSL, SSL_sendfile."""
    return {
        "tls_stat": kernel.tls_stat() is not None,
        "ssl_openssl": ssl.OPENSSL_VERSION,
        "ssl_sendfile": hasattr(_ssl._SSLSocket, "sendfile"),
    }


def run(
    versions: Sequence[str],
    records: Sequence[int],
    paths: Sequence[str],
    transfer: int,
    trials: int,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Every row of the view; Ctrl-C raises :class:`Interrupted` with the rows measured."""
    rows: list[dict[str, Any]] = []
    result = {
        "workload": "tls",
        "machine": {**machine.describe(), "kernel_tls": kernel_facts()},
        "settings": {
            "versions": list(versions),
            "records": list(records),
            "paths": [p for p in PATHS if p in paths],
            "transfer": transfer,
            "check_bytes": min(transfer, CHECK_BYTES),
            "trials": trials,
            "ratio_goal": RATIO_GOAL,
            "sendfile_against": SENDFILE_AGAINST,
            "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        },
        "rows": rows,
    }
    with Loopback() as lb:
        try:
            for p in plan(versions, records, paths):
                rows.append(measure(lb, p, transfer, trials, progress))
        except KeyboardInterrupt:
            add_ratios(rows)
            raise Interrupted(rows, result) from None
    add_ratios(rows)
    return result
