"""kTLS on any kernel: suites and kernel figures read, every ``ssl`` connection counted under
``kernel-tls`` once the hook is in, with the reason where the kernel does not take its records
(this host's kernel has no kTLS: tests/test_ktls_guest.py runs in the rig's, which has)."""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading

import pytest

from cryptoffload import Provider, set_default_provider, using
from cryptoffload.ktls import hook, kernel
from cryptoffload.ktls.connections import ENGINE, REASONS, REGISTRY, Connection, Registry
from cryptoffload.ktls.loopback import Loopback


@pytest.fixture(scope="module")
def loopback():
    with Loopback() as lb:
        yield lb


@pytest.fixture
def hooked():
    hook.install()
    try:
        yield
    finally:
        hook.uninstall()


@pytest.fixture
def provider():
    """The process's default provider for the test (a server thread's connections count in the
    provider in force in that thread: the default one)."""
    provider = Provider(["software"])
    set_default_provider(provider)
    try:
        yield provider
    finally:
        set_default_provider(None)


@pytest.mark.parametrize(
    ("suite", "cipher"),
    [
        ("ECDHE-RSA-AES128-GCM-SHA256", "aes-128-gcm"),
        ("ECDHE-ECDSA-AES256-GCM-SHA384", "aes-256-gcm"),
        ("TLS_AES_256_GCM_SHA384", "aes-256-gcm"),
        ("TLS_CHACHA20_POLY1305_SHA256", "chacha20-poly1305"),
        ("TLS_AES_128_CCM_8_SHA256", None),
        ("ECDHE-RSA-AES128-SHA256", None),  # CBC: kTLS never takes it
    ],
)
def test_a_suite_names_the_record_cipher_ktls_would_take(suite, cipher):
    assert kernel.suite_cipher(suite) == cipher


def test_tls_stat_is_read_as_name_and_count(tmp_path):
    path = tmp_path / "tls_stat"
    path.write_text("TlsCurrTxSw                     \t0\nTlsTxSw                         \t7\n")
    assert kernel.tls_stat(str(path)) == {"TlsCurrTxSw": 0, "TlsTxSw": 7}
    assert kernel.tls_stat(str(tmp_path / "absent")) is None
    assert kernel.tls_stat_delta({"TlsTxSw": 5, "TlsRxSw": 1}, {"TlsTxSw": 7, "TlsRxSw": 1}) == {
        "TlsTxSw": 2
    }


def test_a_plain_tcp_socket_has_no_ulp_and_no_kernel_record_state():
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        try:
            assert kernel.ulp(client) == ""
            assert kernel.crypto_state(client, kernel.TLS_TX) is None
            assert kernel.crypto_state(client, kernel.TLS_RX) is None
        finally:
            client.close()


def test_the_driver_of_an_algorithm_is_the_highest_priority_entry(tmp_path):
    proc = tmp_path / "crypto"
    proc.write_text(
        "name         : gcm(aes)\ndriver       : generic-gcm-aesni\nmodule       : aesni_intel\n"
        "priority     : 400\nrefcnt       : 3\ntype         : aead\n\n"
        "name         : gcm(aes)\ndriver       : gcm-aes-caam\nmodule       : caamalg\n"
        "priority     : 3000\nrefcnt       : 5\ntype         : aead\n"
    )
    driver = kernel.driver_for("gcm(aes)", str(proc))
    assert (driver.driver, driver.hardware, driver.refcnt) == ("gcm-aes-caam", True, 5)
    assert kernel.driver_for("gcm(sm4)", str(proc)) is None


def test_install_makes_every_context_ask_for_ktls_and_uninstall_gives_ssl_back(hooked):
    assert ssl.SSLContext.sslsocket_class is hook.KernelTLSSocket
    assert hook.installed()
    hook.uninstall()
    assert ssl.SSLContext.sslsocket_class is ssl.SSLSocket
    assert ssl.SSLContext.sslobject_class is ssl.SSLObject
    hook.install()


def _exchange(loopback: Loopback, version: str) -> bytes:
    """One connection made by ``ssl``'s own wrap_socket under the hook, counted in a provider."""
    server_ctx, client_ctx = loopback.contexts(version, ktls=True)
    for context in (server_ctx, client_ctx):
        del context.sslsocket_class  # the class ssl.SSLContext has: the hook's
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        raw, _ = listener.accept()
        with server_ctx.wrap_socket(raw, server_side=True) as tls:
            tls.sendall(tls.recv(100).upper())

    thread = threading.Thread(target=serve)
    thread.start()
    with client_ctx.wrap_socket(
        socket.create_connection(listener.getsockname()), server_hostname="localhost"
    ) as tls:
        tls.sendall(b"counted")
        answer = tls.recv(100)
    thread.join()
    REGISTRY.flush()
    listener.close()
    return answer


@pytest.mark.parametrize("version", ["TLSv1.2", "TLSv1.3"])
def test_each_connection_is_counted_with_the_reason_its_records_stayed_here(
    loopback, hooked, provider, version
):
    answer = _exchange(loopback, version)
    assert answer == b"COUNTED"
    cells = provider.counters.snapshot()[ENGINE]
    cipher = "aes-128-gcm" if version == "TLSv1.2" else "aes-256-gcm"
    cell = cells[f"{version.lower().replace('v', '')}-{cipher}"]
    if kernel.tls_stat() is None:  # this host: no kTLS in the kernel
        assert cell["ops"] == 0 and cell["declined"] == {"no-kernel-tls": 2}
    else:
        assert cell["ops"] == 2 and cell["bytes"] == 4 * len(b"counted")


def test_an_ssl_object_over_memory_bios_is_counted_as_not_in_the_kernel(loopback, hooked, provider):
    server_ctx, client_ctx = loopback.contexts("TLSv1.3", ktls=True)

    async def talk() -> bytes:
        async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write((await reader.readexactly(5)).upper())
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(echo, "127.0.0.1", 0, ssl=server_ctx)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=client_ctx, server_hostname="localhost"
        )
        writer.write(b"hello")
        answer = await reader.readexactly(5)
        writer.close()
        server.close()
        await server.wait_closed()
        return answer

    assert asyncio.run(talk()) == b"HELLO"
    declined = provider.counters.snapshot()[ENGINE]["tls1.3-aes-256-gcm"]["declined"]
    assert declined == {"memory-bio": 2}


def test_a_registry_counts_a_connection_once_and_keeps_its_details():
    registry = Registry()
    provider = Provider(["software"])
    conn = Connection("client", "TLSv1.2", "ECDHE-RSA-AES128-GCM-SHA256", "aes-128-gcm", True, True)
    conn.sent, conn.received = 100, 50
    with using(provider):
        registry.opened(conn)
        registry.closed(conn)
        registry.closed(conn)
        report = registry.report()
    assert provider.counters.snapshot()[ENGINE]["tls1.2-aes-128-gcm"]["ops"] == 1
    assert provider.counters.snapshot()[ENGINE]["tls1.2-aes-128-gcm"]["bytes"] == 150
    assert report["connections"][0]["kernel_tx"] is True and report["reasons"] == REASONS


@pytest.mark.parametrize("version", ["TLSv1.2", "TLSv1.3"])
@pytest.mark.parametrize("sendfile", [False, True])
def test_a_loopback_transfer_arrives_intact_with_or_without_ktls(loopback, version, sendfile):
    for ktls in (False, True):
        done = loopback.transfer(version, ktls=ktls, size=300_000, record=4096, sendfile=sendfile)
        assert done.intact and done.client is not None and done.server is not None
        assert done.client.version == version
        if kernel.tls_stat() is None:
            assert not done.client.in_kernel and not done.tls_stat
