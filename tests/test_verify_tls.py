"""`verify --tls`: what makes the proof fail, its exit status and JSON where the kernel has no
kTLS (this machine), and its usage errors (the proof itself runs in the rig:
tests/test_ktls_guest.py)."""

from __future__ import annotations

import json

import pytest
from cli_calls import refused, run_cli

from cryptoffload.ktls import kernel
from cryptoffload.ktls.connections import Connection
from cryptoffload.ktls.loopback import Transfer
from cryptoffload.tools.verify_tls import check


def _end(side: str, tx: bool, rx: bool, reason: str | None = None) -> Connection:
    return Connection(side, "TLSv1.2", "ECDHE-RSA-AES128-GCM-SHA256", "aes-128-gcm", tx, rx, reason)


def _transfer(ktls: bool, ends: tuple[Connection, Connection], **kw: object) -> Transfer:
    fields = {
        "version": "TLSv1.2",
        "ktls": ktls,
        "size": 1 << 20,
        "record": 16384,
        "sendfile": False,
        "intact": True,
        "wall": 0.1,
        "user": 0.01,
        "system": 0.01,
        "client": ends[0],
        "server": ends[1],
        "tls_stat": {"TlsTxSw": 2, "TlsRxSw": 2} if ktls else {},
        "driver": {"driver": "generic-gcm-aesni"} if ktls else None,
        "driver_users_added": 4 if ktls else None,
    }
    fields.update(kw)
    return Transfer(**fields)  # type: ignore[arg-type]


IN_KERNEL = (_end("client", True, True), _end("server", True, True))
HERE = (_end("client", False, False, "openssl"), _end("server", False, False, "openssl"))


def test_a_connection_whose_records_the_kernel_did_is_proven():
    assert check("TLSv1.2", _transfer(True, IN_KERNEL), _transfer(False, HERE)) == []


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"intact": False}, "the bytes received differ"),
        ({"tls_stat": {"TlsTxSw": 2}}, "tls_stat counted 2 kernel directions, the sockets hold 4"),
        ({"driver_users_added": 1}, "the driver's users rose by 1"),
    ],
)
def test_each_missing_piece_of_evidence_fails_the_proof(change, words):
    problems = check("TLSv1.2", _transfer(True, IN_KERNEL, **change), _transfer(False, HERE))
    assert any(words in p for p in problems), problems


def test_a_send_side_left_in_user_space_fails_with_its_reason():
    ends = (_end("client", False, False, "no-kernel-tls"), _end("server", True, True))
    problems = check("TLSv1.2", _transfer(True, ends), _transfer(False, HERE))
    assert "the client's send side is not in the kernel: the kernel takes no TLS" in problems[0]


def test_the_control_fails_when_records_go_to_the_kernel_without_ktls_asked_for():
    problems = check("TLSv1.2", _transfer(True, IN_KERNEL), _transfer(False, IN_KERNEL))
    assert problems == ["without kTLS asked for, the kernel still took records (control)"]


@pytest.mark.skipif(kernel.tls_stat() is not None, reason="this kernel has kTLS: see the rig")
def test_on_a_kernel_without_ktls_verify_tls_exits_1_with_the_reason(capsys):
    code, out, _ = run_cli(capsys, "verify", "--tls", "--size", "64k", "--json")
    report = json.loads(out)
    assert code == 1 and not report["passed"] and report["tls_module"] is False
    ends = [e for v in report["versions"] for e in v["ends"]]
    assert len(ends) == 4 and all(e["reason"] == "no-kernel-tls" for e in ends)
    assert all(v["intact"] for v in report["versions"])


def test_verify_tls_takes_no_engines_and_a_size_it_can_send(capsys):
    code, _, err = run_cli(capsys, "verify", "--tls", "--engines", "software")
    assert code == 2 and "it takes no --engines or --algs" in err
    assert "--size" in refused(capsys, "verify", "--tls", "--size", "2g")
    assert "--size" in refused(capsys, "verify", "--tls", "--size", "lots")
