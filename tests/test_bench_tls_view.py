"""The rows of `bench --tls` (tools/bench/tls_view.py): their order, their arithmetic (medians,
spreads and CPU per MiB over the trials, ratios to user-space TLS), and the rows that say why
there is no figure. Transfers here are made up: nothing is timed."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cryptoffload.ktls.connections import REASONS, Connection
from cryptoffload.ktls.loopback import Transfer
from cryptoffload.tools.bench import tls_view
from cryptoffload.tools.bench.tls_view import Plan

MIB = 1 << 20


def _conn(side: str, tx: bool, rx: bool, reason: str | None = None) -> Connection:
    return Connection(
        side, "TLSv1.2", "ECDHE-ECDSA-AES128-GCM-SHA256", "aes-128-gcm", tx, rx, reason=reason
    )


def _transfer(
    wall: float,
    user: float,
    system: float,
    *,
    size: int = 2 * MIB,
    kernel: bool = True,
    stat: dict[str, int] | None = None,
    intact: bool = True,
) -> Transfer:
    return Transfer(
        version="TLSv1.2",
        ktls=kernel,
        size=size,
        record=16384,
        sendfile=False,
        intact=intact,
        wall=wall,
        user=user,
        system=system,
        client=_conn("client", kernel, kernel, None if kernel else "no-kernel-tls"),
        server=_conn("server", kernel, False, None if kernel else "no-kernel-tls"),
        tls_stat=stat or {},
        driver={
            "algorithm": "gcm(aes)",
            "driver": "gcm-aes-caam",
            "module": "caamalg",
            "priority": 3000,
            "hardware": True,
        }
        if kernel
        else None,
        driver_users_added=2 if kernel else None,
    )


def test_rows_go_by_version_then_write_size_then_path_with_sendfile_last():
    rows = tls_view.plan(
        ["TLSv1.2", "TLSv1.3"], [1024, 16384], ["asyncio", "ktls-sendfile", "user-space"]
    )
    assert rows == [
        Plan("TLSv1.2", "user-space", 1024),
        Plan("TLSv1.2", "asyncio", 1024),
        Plan("TLSv1.2", "user-space", 16384),
        Plan("TLSv1.2", "asyncio", 16384),
        Plan("TLSv1.2", "ktls-sendfile", None),
        Plan("TLSv1.3", "user-space", 1024),
        Plan("TLSv1.3", "asyncio", 1024),
        Plan("TLSv1.3", "user-space", 16384),
        Plan("TLSv1.3", "asyncio", 16384),
        Plan("TLSv1.3", "ktls-sendfile", None),
    ]


def test_a_row_is_the_median_and_spread_of_its_trials_per_mib():
    done = [
        _transfer(0.5, 0.2, 0.04, stat={"TlsTxSw": 1, "TlsRxSw": 1}),
        _transfer(0.25, 0.1, 0.02, stat={"TlsTxSw": 1, "TlsRxSw": 1}),
        _transfer(1.0, 0.4, 0.08, stat={"TlsTxSw": 1, "TlsRxSw": 1}),
    ]
    probe = _transfer(0.1, 0.1, 0.1, size=MIB)
    done = [replace(t, driver=None, driver_users_added=None) for t in done]
    row = tls_view.measured_row(Plan("TLSv1.2", "ktls-send", 16384), probe, done)
    assert row["trials"] == [4.0, 8.0, 2.0]  # 2 MiB over 0.5, 0.25 and 1 s
    assert row["median"] == 4.0 and row["spread"] == 1.5 and row["noisy"] is True
    assert row["cpu"]["user_trials"] == [100.0, 50.0, 200.0]  # ms per MiB
    assert row["cpu"]["user_ms_per_mib"] == 100.0 and row["cpu"]["user_spread"] == 1.5
    assert row["cpu"]["system_ms_per_mib"] == 20.0
    assert row["tls_stat"] == {"TlsTxSw": 3, "TlsRxSw": 3}  # summed over the connections
    assert row["records"] == {"sender": "kernel", "receiver": "user-space"}
    assert row["driver"]["driver"] == "gcm-aes-caam" and row["driver_users_added"] == 2  # checked
    assert (row["algorithm"], row["operation"], row["engine"]) == (
        "tls1.2",
        "transfer",
        "ktls-send",
    )
    assert row["intact"] is True and row["unit"] == "MiB/s"


def _row(path: str, block: int | None, user_ms: float, mib_s: float) -> dict:
    row = tls_view.base_row(Plan("TLSv1.2", path, block))
    row["median"] = mib_s
    row["cpu"] = {"user_ms_per_mib": user_ms, "system_ms_per_mib": 1.0}
    return row


def test_ratios_set_each_row_against_user_space_at_its_version_and_size():
    rows = [
        _row("user-space", 1024, 400.0, 10.0),
        _row("ktls-send", 1024, 200.0, 15.0),
        _row("user-space", 16384, 100.0, 40.0),
        _row("ktls-send", 16384, 20.0, 50.0),
        _row("asyncio", 16384, 150.0, 30.0),
        _row("ktls-sendfile", None, 5.0, 80.0),
    ]
    tls_view.add_ratios(rows)
    assert [r["user_cpu_ratio"] for r in rows] == [1.0, 0.5, 1.0, 0.2, 1.5, 0.05]
    assert [r["speedup"] for r in rows] == [1.0, 1.5, 1.0, 1.25, 0.75, 2.0]
    assert rows[-1]["against"] == {"path": "user-space", "block": 16384}


def test_a_row_without_its_user_space_row_has_no_ratio():
    rows = [_row("user-space", 1024, 400.0, 10.0), _row("ktls-send", 4096, 50.0, 20.0)]
    unmeasured = tls_view.base_row(Plan("TLSv1.2", "ktls-send", 1024))
    tls_view.add_ratios([*rows, unmeasured])
    assert rows[1]["user_cpu_ratio"] is None and rows[1]["speedup"] is None
    assert unmeasured["user_cpu_ratio"] is None


class _Loopback:
    """Hands out made-up transfers, one per call, and notes what it was asked."""

    def __init__(self, *transfers: Transfer) -> None:
        self.transfers = list(transfers)
        self.calls: list[dict] = []

    def transfer(self, version: str, **kwargs) -> Transfer:
        self.calls.append({"version": version, **kwargs})
        return self.transfers.pop(0)


def test_a_ktls_row_the_kernel_did_not_take_says_the_kernels_reason():
    lb = _Loopback(_transfer(0.1, 0.1, 0.0, kernel=False, size=MIB))
    row = tls_view.measure(lb, Plan("TLSv1.2", "ktls-send", 4096), 4 * MIB, trials=3)
    assert row["median"] is None and row["trials"] == []
    assert row["unavailable"] == f"no-kernel-tls: {REASONS['no-kernel-tls']}"
    assert row["note"].startswith("not available: no-kernel-tls")
    assert len(lb.calls) == 1  # the check only: nothing timed
    assert lb.calls[0] == {
        "version": "TLSv1.2",
        "ktls": True,
        "size": MIB,
        "record": 4096,
        "sendfile": False,
        "check": True,
        "driver": True,
    }


def test_a_row_checks_its_bytes_first_then_times_its_trials():
    lb = _Loopback(*(_transfer(0.5, 0.2, 0.04) for _ in range(3)))
    row = tls_view.measure(lb, Plan("TLSv1.2", "ktls-sendfile", None), 4 * MIB, trials=2)
    assert [c["check"] for c in lb.calls] == [True, False, False]
    assert [c["driver"] for c in lb.calls] == [True, False, False]  # never read while timed
    assert [c["size"] for c in lb.calls] == [MIB, 4 * MIB, 4 * MIB]
    assert all(c["sendfile"] and c["ktls"] for c in lb.calls)
    assert row["median"] == 4.0 and len(row["trials"]) == 2


@pytest.mark.parametrize(
    ("transfers", "note"),
    [
        ([_transfer(0.5, 0.2, 0.0, intact=False)], "failed: the receiver's bytes differ"),
        (
            [_transfer(0.5, 0.2, 0.0), _transfer(0.5, 0.2, 0.0, intact=False)],
            "failed: the receiver got fewer bytes",
        ),
    ],
)
def test_a_row_whose_bytes_did_not_arrive_intact_fails(transfers, note):
    row = tls_view.measure(_Loopback(*transfers), Plan("TLSv1.2", "user-space", 1024), MIB, 1)
    assert row["failed"] is True and row["intact"] is False and row["median"] is None
    assert row["note"].startswith(note)


def test_a_row_whose_connection_raised_fails_with_the_error_and_the_run_goes_on():
    class Broken:
        def transfer(self, version, **kwargs):
            raise ConnectionResetError(104, "Connection reset by peer")

    row = tls_view.measure(Broken(), Plan("TLSv1.3", "user-space", 1024), MIB, 1)
    assert row["failed"] is True
    assert row["note"] == "failed: ConnectionResetError: [Errno 104] Connection reset by peer"
