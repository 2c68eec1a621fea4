"""`cryptoffload verify --tls`: proof that the kernel does the records of ``ssl``'s TLS with
kTLS, from the kernel's own figures, and what it costs the process in CPU.

For TLS 1.2 and 1.3, one loopback connection with kTLS asked for and one without, both checked
byte for byte (a SHA-256 of each end's stream): the kernel must hold each end's record state
(``TCP_ULP`` "tls", ``SOL_TLS`` TX, and RX where this OpenSSL hands it over), its ``tls_stat``
must count those ends, and the users of the ``/proc/crypto`` driver of the cipher must rise by
as many while the connection is open; without kTLS none of that moves (the negative control).
Then each is run again unchecked, for the process's user and system CPU per MiB.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Any

from cryptoffload.ktls import kernel
from cryptoffload.ktls.connections import REASONS, Connection
from cryptoffload.ktls.hook import _TLS13_RX
from cryptoffload.ktls.loopback import Loopback, Transfer

VERSIONS = ("TLSv1.2", "TLSv1.3")


def _ends(t: Transfer) -> list[Connection]:
    return [c for c in (t.client, t.server) if c is not None]


def expected_rx(version: str) -> bool:
    """Whether this OpenSSL hands the receive side of ``version`` to the kernel."""
    return version == "TLSv1.2" or _TLS13_RX


def check(version: str, with_ktls: Transfer, without: Transfer) -> list[str]:
    """What is wrong with the proof for ``version`` (nothing: the kernel did the records)."""
    problems = []
    if not with_ktls.intact or not without.intact:
        problems.append("the bytes received differ from the bytes sent")
    ends = _ends(with_ktls)
    if len(ends) != 2:
        return [*problems, "the connection did not finish on both ends"]
    for end in ends:
        if not end.tx:
            why = REASONS.get(end.reason or "", end.reason or "unknown")
            problems.append(f"the {end.side}'s send side is not in the kernel: {why}")
        if expected_rx(version) and not end.rx:
            problems.append(f"the {end.side}'s receive side is not in the kernel")
    directions = sum(end.tx + end.rx for end in ends)
    moved = with_ktls.tls_stat
    counted = sum(moved.get(k, 0) for k in ("TlsTxSw", "TlsRxSw", "TlsTxDevice", "TlsRxDevice"))
    if directions and counted < directions:
        problems.append(
            f"tls_stat counted {counted} kernel directions, the sockets hold {directions}"
        )
    if directions and (with_ktls.driver_users_added or 0) < directions:
        problems.append(
            f"the driver's users rose by {with_ktls.driver_users_added}, not by the "
            f"{directions} directions the kernel holds"
        )
    if any(end.in_kernel for end in _ends(without)) or without.tls_stat:
        problems.append("without kTLS asked for, the kernel still took records (control)")
    return problems


def run(size: int, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The proof and the CPU figures for each TLS version, as a report."""
    report: dict[str, Any] = {
        "openssl": ssl.OPENSSL_VERSION,
        "tls_module": kernel.tls_stat() is not None,
        "size": size,
        "versions": [],
    }
    with Loopback() as lb:
        for version in VERSIONS:
            if progress:
                progress(version)
            proof = {ktls: lb.transfer(version, ktls=ktls, size=size) for ktls in (True, False)}
            cpu = {
                ktls: lb.transfer(version, ktls=ktls, size=size, check=False, driver=False)
                for ktls in (True, False)
            }
            problems = check(version, proof[True], proof[False])
            report["versions"].append(_entry(version, proof, cpu, problems))
    report["passed"] = all(v["passed"] for v in report["versions"])
    report["tls_module"] = kernel.tls_stat() is not None
    return report


def _entry(
    version: str,
    proof: dict[bool, Transfer],
    cpu: dict[bool, Transfer],
    problems: list[str],
) -> dict[str, Any]:
    k, u = cpu[True], cpu[False]
    user_ratio = k.per_mib(k.user) / u.per_mib(u.user) if u.user > 0 else None
    return {
        "version": version,
        "suite": proof[True].client.suite if proof[True].client else None,
        "ends": [c.as_dict() for c in _ends(proof[True])],
        "receive_expected": expected_rx(version),
        "tls_stat": proof[True].tls_stat,
        "control_tls_stat": proof[False].tls_stat,
        "driver": proof[True].driver,
        "driver_users_added": proof[True].driver_users_added,
        "intact": proof[True].intact and proof[False].intact,
        "cpu_ms_per_mib": {
            "ktls": {"user": 1000 * k.per_mib(k.user), "system": 1000 * k.per_mib(k.system)},
            "user_space": {
                "user": 1000 * u.per_mib(u.user),
                "system": 1000 * u.per_mib(u.system),
            },
            "user_ratio": user_ratio,
        },
        "mib_per_s": {"ktls": k.mib / k.wall, "user_space": u.mib / u.wall},
        "problems": problems,
        "passed": not problems,
    }
