"""TLS through the kernel in the rig's guest (rig/run), whose kernel has kTLS: an unmodified
urllib program under ``run --tls``, ``verify --tls``'s proof, a suite the kernel does not take,
a peer that stops mid-record or closes, and the CPU driver unloaded (last: it changes the guest).
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import shutil
import socket
import ssl
import subprocess
import sys
import threading
from typing import Any

import pytest

from cryptoffload.ktls import kernel
from cryptoffload.ktls.hook import KernelTLSSocket
from cryptoffload.ktls.loopback import Loopback, write_certificate

APP = pathlib.Path(__file__).with_name("tls_app.py")


def _in_rig() -> bool:
    try:
        with open("/proc/cmdline", encoding="ascii") as f:
            line = f.read()
    except OSError:
        return False
    return "rdinit=/init" in line and "cryptomgr.notests=1" in line


def _why_not() -> str | None:
    if not _in_rig():
        return "not the rig's guest: run it there (rig/run python3 -m pytest tests/...)"
    if os.geteuid() != 0 or shutil.which("busybox") is None:
        return "needs root and busybox (the rig's guest has both)"
    subprocess.run(["busybox", "ip", "link", "set", "lo", "up"], check=False)
    subprocess.run(["busybox", "modprobe", "tls"], check=False)
    if kernel.tls_stat() is None:
        return "this kernel has no kTLS (the tls module did not load)"
    return None


REASON = _why_not()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")


@pytest.fixture(scope="module")
def loopback():
    with Loopback() as lb:
        yield lb


def test_an_unmodified_urllib_program_under_run_tls_sends_its_records_through_the_kernel(
    tmp_path,
):
    cert, key = write_certificate(str(tmp_path))
    counters = tmp_path / "counters.json"
    before = kernel.tls_stat()
    argv = ["-m", "cryptoffload", "run", "--tls", "--counters", str(counters)]
    proc = subprocess.run(
        [sys.executable, *argv, str(APP), cert, key, "1000000"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("intact 999936")
    moved = kernel.tls_stat_delta(before, kernel.tls_stat())
    assert moved.get("TlsTxSw", 0) >= 2  # both ends' send sides
    data = json.loads(counters.read_text())
    ends = data["kernel_tls"]["connections"]
    assert sorted(c["side"] for c in ends) == ["client", "server"]
    assert all(c["kernel_tx"] and c["driver"]["algorithm"] == "gcm(aes)" for c in ends)
    row = next(r for r in data["engines"] if r["name"] == "kernel-tls")
    (cell,) = row["counters"].values()
    assert cell["ops"] == 2 and cell["bytes"] >= 2 * 999936 and cell["declined"] == {}


def test_verify_tls_proves_the_kernel_did_the_records():
    proc = subprocess.run(
        [sys.executable, "-m", "cryptoffload", "verify", "--tls", "--size", "1m", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    tls12, tls13 = report["versions"]
    assert tls12["passed"] and tls13["passed"]
    assert all(e["kernel_tx"] and e["kernel_rx"] for e in tls12["ends"])
    assert tls12["tls_stat"]["TlsTxSw"] == 2 and tls12["tls_stat"]["TlsRxSw"] == 2
    assert tls12["driver_users_added"] >= 4 and tls12["control_tls_stat"] == {}


def test_a_suite_the_kernel_does_not_take_stays_in_user_space_with_its_reason(loopback):
    server_ctx, client_ctx = loopback.contexts("TLSv1.2", ktls=True)
    for context in (server_ctx, client_ctx):
        context.set_ciphers("ECDHE-ECDSA-AES128-SHA256")  # CBC: kTLS has no such cipher
    listener = socket.create_server(("127.0.0.1", 0))
    got = {}

    def serve() -> None:
        raw, _ = listener.accept()
        with server_ctx.wrap_socket(raw, server_side=True) as tls:
            got["data"] = tls.recv(100)
            got["conn"] = tls._ktls

    thread = threading.Thread(target=serve)
    thread.start()
    with client_ctx.wrap_socket(
        socket.create_connection(listener.getsockname()), server_hostname="localhost"
    ) as tls:
        tls.sendall(b"cbc stays here")
        conn = tls._ktls
    thread.join(30)
    listener.close()
    assert got["data"] == b"cbc stays here"
    assert not conn.in_kernel and conn.reason == "cipher"
    assert not got["conn"].in_kernel and got["conn"].reason == "cipher"


def _memory_server(
    raw: socket.socket, context: ssl.SSLContext
) -> tuple[ssl.SSLObject, ssl.MemoryBIO]:
    """A TLS 1.2 server end over memory BIOs on ``raw``, its handshake done: the test writes
    its records to the socket itself, whole or cut short."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_side=True)
    while True:
        try:
            tls.do_handshake()
            break
        except ssl.SSLWantReadError:
            raw.sendall(outgoing.read())
            incoming.write(raw.recv(65536))
    raw.sendall(outgoing.read())
    return tls, outgoing


def _records_to_a_ktls_client(loopback: Loopback, send: Any) -> tuple[bytes, object]:
    """A kTLS client reading from a server that ``send(tls, outgoing, raw)`` drives: what the
    client read before its read ended, and how it ended (b"" or the exception)."""
    server_ctx, client_ctx = loopback.contexts("TLSv1.2", ktls=True)
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        raw, _ = listener.accept()
        tls, outgoing = _memory_server(raw, server_ctx)
        send(tls, outgoing, raw)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    client = client_ctx.wrap_socket(
        socket.create_connection(listener.getsockname(), timeout=20), server_hostname="localhost"
    )
    assert client._ktls.rx, "the client's receive side must be in the kernel for this test"
    received, ended = b"", None
    try:
        while True:
            chunk = client.recv(65536)
            if not chunk:
                ended = b""
                break
            received += chunk
    except OSError as exc:  # ssl.SSLError too; a TimeoutError here would be a hang
        ended = exc
    client.close()
    thread.join(20)
    listener.close()
    return received, ended


def test_a_peer_that_stops_mid_record_ends_the_read_without_a_hang_or_lost_bytes(loopback):
    whole = b"w" * 5000

    def send(tls: ssl.SSLObject, outgoing: ssl.MemoryBIO, raw: socket.socket) -> None:
        tls.write(whole)
        raw.sendall(outgoing.read())
        tls.write(b"x" * 3000)
        record = outgoing.read()
        raw.sendall(record[: len(record) // 2])  # half a record, then the connection ends
        raw.close()

    received, ended = _records_to_a_ktls_client(loopback, send)
    assert received == whole
    assert not isinstance(ended, TimeoutError)


def test_a_close_notify_alert_ends_the_read_cleanly(loopback):
    def send(tls: ssl.SSLObject, outgoing: ssl.MemoryBIO, raw: socket.socket) -> None:
        tls.write(b"before the alert")
        raw.sendall(outgoing.read())
        with contextlib.suppress(ssl.SSLWantReadError):
            tls.unwrap()
        raw.sendall(outgoing.read())
        raw.close()

    received, ended = _records_to_a_ktls_client(loopback, send)
    assert received == b"before the alert"
    assert ended == b"" or (isinstance(ended, ssl.SSLError) and not isinstance(ended, TimeoutError))


def test_unloading_the_cpu_driver_moves_the_records_to_the_next_driver(loopback):
    before = loopback.transfer("TLSv1.2", ktls=True, size=1 << 20)
    assert before.intact and before.driver and before.driver["driver"] == "generic-gcm-aesni"
    unloaded = subprocess.run(["busybox", "rmmod", "aesni_intel"], capture_output=True, text=True)
    if unloaded.returncode:
        pytest.skip(f"aesni_intel would not unload: {unloaded.stderr.strip()}")
    after = loopback.transfer("TLSv1.2", ktls=True, size=1 << 20)
    assert after.intact and after.client.tx and after.client.rx
    assert after.driver and after.driver["driver"] != "generic-gcm-aesni"
    assert not after.driver["hardware"]  # still the CPU: a C driver after the AES-NI one


def test_a_renegotiation_request_ends_or_continues_the_connection_without_a_hang(tmp_path):
    # OpenSSL's own server asks for a TLS 1.2 renegotiation ("r" on s_server's input) after
    # sending data; the kTLS client must not hang, and the bytes before must all arrive.
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("no openssl command here")
    cert, key = write_certificate(str(tmp_path))
    port_socket = socket.create_server(("127.0.0.1", 0))
    port = port_socket.getsockname()[1]
    port_socket.close()
    server = subprocess.Popen(
        [
            openssl,
            "s_server",
            "-tls1_2",
            "-cert",
            cert,
            "-key",
            key,
            "-accept",
            f"127.0.0.1:{port}",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.load_verify_locations(cert)
        context.maximum_version = ssl.TLSVersion.TLSv1_2
        context.sslsocket_class = KernelTLSSocket
        for _ in range(100):
            try:
                raw = socket.create_connection(("127.0.0.1", port), timeout=20)
                break
            except ConnectionRefusedError:
                threading.Event().wait(0.05)
        client = context.wrap_socket(raw, server_hostname="localhost")
        assert client._ktls.rx
        for line in (b"before the request\n", b"r\n", b"after the request\n"):
            server.stdin.write(line)  # one line a read: s_server takes "r" alone as a command
            server.stdin.flush()
            threading.Event().wait(1.0)
        client.settimeout(10)
        received, ended = b"", None
        try:
            while b"after the request" not in received:
                chunk = client.recv(100)
                if not chunk:
                    ended = b""
                    break
                received += chunk
        except OSError as exc:  # ssl.SSLError too, and TimeoutError: nothing came in 10 s
            ended = exc
        client.close()
        # OpenSSL 3.0's client lets the request pass (no renegotiation, no alert) and the
        # connection goes on: every byte before and after it arrives, nothing hangs.
        assert received == b"before the request\nafter the request\n", ended
    finally:
        server.kill()
        server.wait()
