"""asyncio's TLS over loopback for `bench --tls` (tools/bench/tls_asyncio.py): the bytes arrive,
each end's records stay in user space as the kernel reports it (meaningful in the rig, whose
kernel has kTLS: tls_stat must not move there either), and the bench's own connections are not
counted with the process's."""

from __future__ import annotations

import pytest

from cryptoffload import Provider, set_default_provider
from cryptoffload.ktls import hook
from cryptoffload.ktls.connections import ENGINE, REGISTRY
from cryptoffload.ktls.loopback import Loopback
from cryptoffload.tools.bench import tls_asyncio

SIZE = 300_000


@pytest.fixture(scope="module")
def loopback():
    with Loopback() as lb:
        yield lb


@pytest.mark.parametrize("version", ["TLSv1.2", "TLSv1.3"])
def test_an_asyncio_transfer_arrives_intact_with_its_records_in_user_space(loopback, version):
    done = tls_asyncio.transfer(loopback, version, size=SIZE, record=4096)
    assert done.intact and done.size == SIZE and done.record == 4096
    assert done.client.version == done.server.version == version
    for end in (done.client, done.server):
        assert (end.tx, end.rx, end.reason) == (False, False, "memory-bio")
    assert done.client.sent == SIZE and done.server.received == SIZE
    assert done.tls_stat == {}  # the kernel did no record of it
    assert done.wall > 0 and done.user >= 0 and done.system >= 0


def test_an_asyncio_transfer_is_not_counted_with_the_process_connections(loopback):
    provider = Provider(["software"])
    set_default_provider(provider)
    hook.install()
    try:
        tls_asyncio.transfer(loopback, "TLSv1.3", size=SIZE, record=16384)
        REGISTRY.flush()
        assert ENGINE not in provider.counters.snapshot()
    finally:
        hook.uninstall()
        set_default_provider(None)
