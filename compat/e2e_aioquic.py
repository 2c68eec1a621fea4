"""End to end, aioquic unmodified: a QUIC client and server in one process, datagrams handed
from one to the other in memory, so aioquic's TLS 1.3 handshake runs as it does on a network.

The server's certificate is self-signed, made here with `cryptography.x509` (an ECDSA P-256 key,
for the name ``localhost``), and is the client's only trust anchor. It prints the negotiated
cipher suite and ALPN, asserts the handshake completed on both sides and that data sent on a
stream comes back (the server echoes it), and (when run offloaded) the ops cryptoffload counted.
aioquic 1.7 protects packets with `cryptography` too (aioquic/_crypto.py: AESGCM for the
payload, one AES-ECB block per packet for the header), so the ops counted are the handshake's
(key share, HKDF/HMAC, the certificate's signature) and every packet's.

    python -m cryptoffload run [--engines passthrough] --counters ops.json compat/e2e_aioquic.py
    python compat/e2e_aioquic.py                   # the same on `cryptography` alone
"""

from __future__ import annotations

import datetime
import os
import sys

from aioquic.quic import events
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection
from aioquic.tls import CipherSuite
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from e2e_ops import print_ops

CLIENT_ADDR = ("127.0.0.1", 50000)  # addresses only label the datagrams: nothing is sent
SERVER_ADDR = ("127.0.0.1", 4433)
ALPN = "e2e-echo"
PAYLOAD = os.urandom(100_000)


def certificate() -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A self-signed certificate for ``localhost`` and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def transfer(sender: QuicConnection, receiver: QuicConnection, now: float) -> int:
    """The datagrams ``sender`` has to send, given to ``receiver``; how many."""
    source = CLIENT_ADDR if sender.configuration.is_client else SERVER_ADDR
    count = 0
    for data, _addr in sender.datagrams_to_send(now=now):
        receiver.receive_datagram(data, source, now=now)
        count += 1
    return count


def exchange(client: QuicConnection, server: QuicConnection, now: float) -> None:
    """Datagrams back and forth until neither side has any left to send."""
    for _ in range(100):
        if transfer(client, server, now) + transfer(server, client, now) == 0:
            return
    raise AssertionError("the connections kept sending for 100 rounds")


def drain(connection: QuicConnection) -> list[events.QuicEvent]:
    found = []
    while (event := connection.next_event()) is not None:
        found.append(event)
    return found


def key_share_group(server: QuicConnection) -> str:
    """The group of the key share the server answered (aioquic keeps it private: read from
    the ephemeral key it made for it)."""
    tls = server.tls
    if getattr(tls, "_x25519_private_key", None) is not None:
        return "x25519"
    if getattr(tls, "_x448_private_key", None) is not None:
        return "x448"
    keys = getattr(tls, "_ec_private_keys", [])
    return keys[0].curve.name if keys else "?"


def main() -> int:
    cert, key = certificate()
    client_config = QuicConfiguration(is_client=True, alpn_protocols=[ALPN])
    client_config.server_name = "localhost"
    client_config.load_verify_locations(cadata=cert.public_bytes(serialization.Encoding.PEM))
    server_config = QuicConfiguration(is_client=False, alpn_protocols=[ALPN])
    server_config.certificate = cert
    server_config.private_key = key

    now = 1000.0
    client = QuicConnection(configuration=client_config)
    server = QuicConnection(
        configuration=server_config,
        original_destination_connection_id=client.original_destination_connection_id,
    )
    client.connect(SERVER_ADDR, now=now)
    exchange(client, server, now)

    done = {}
    for side, connection in (("client", client), ("server", server)):
        found = [e for e in drain(connection) if isinstance(e, events.HandshakeCompleted)]
        assert found, f"the {side} did not complete the handshake"
        done[side] = found[0]
        suite = CipherSuite(connection.tls.key_schedule.cipher_suite)
        print(
            f"{side}: TLS 1.3 handshake completed, cipher suite {suite.name} "
            f"(0x{int(suite):04x}), ALPN {found[0].alpn_protocol}"
        )
        assert found[0].alpn_protocol == ALPN
    print(f"key exchange: {key_share_group(server)} (the first of the client's key shares)")
    peer = client.tls._peer_certificate  # aioquic keeps it private; checked all the same
    assert peer is not None and peer == cert, "the client saw another certificate"
    print(
        f"server certificate: {peer.subject.rfc4514_string()}, "
        f"{peer.public_key().curve.name} key, {peer.signature_hash_algorithm.name} signature"
    )

    stream_id = client.get_next_available_stream_id()
    client.send_stream_data(stream_id, PAYLOAD, end_stream=True)
    received = {"server": bytearray(), "client": bytearray()}
    ended = {"server": False, "client": False}
    for _ in range(200):
        now += 0.01
        exchange(client, server, now)
        for event in drain(server):
            if isinstance(event, events.StreamDataReceived):
                received["server"] += event.data
                server.send_stream_data(event.stream_id, event.data, end_stream=event.end_stream)
                ended["server"] |= event.end_stream
        exchange(client, server, now)
        for event in drain(client):
            if isinstance(event, events.StreamDataReceived):
                received["client"] += event.data
                ended["client"] |= event.end_stream
        if ended["client"]:
            break
    assert bytes(received["server"]) == PAYLOAD, "the server did not get the data"
    assert ended["client"] and bytes(received["client"]) == PAYLOAD, "the echo did not come back"
    print(f"stream {stream_id}: {len(PAYLOAD)} bytes sent, echoed back by the server, intact")
    client.close()
    exchange(client, server, now)
    print_ops()
    return 0


if __name__ == "__main__":
    sys.exit(main())
