"""``Loopback.transfer(driver=False)``: the record cipher's driver is not read, so its
/proc/crypto parse stays out of the CPU time that `bench --tls` divides by the bytes."""

from __future__ import annotations

import pytest

from cryptoffload.ktls import kernel, loopback
from cryptoffload.ktls.loopback import Loopback


@pytest.fixture
def driver_reads(monkeypatch):
    """The driver reads made during transfers, as if the kernel did the records (it may not)."""
    reads: list[str] = []

    def driver_for(algorithm, *args):
        reads.append(algorithm)
        return kernel.Driver(algorithm, "generic-gcm-aesni", "aesni_intel", 400, False, 3)

    monkeypatch.setattr(loopback, "_algorithm", lambda conn: "gcm(aes)")
    monkeypatch.setattr(kernel, "driver_for", driver_for)
    return reads


@pytest.mark.parametrize(("driver", "reads"), [(True, ["gcm(aes)"]), (False, [])])
def test_a_transfer_reads_the_driver_only_when_asked(driver_reads, driver, reads):
    with Loopback() as lb:
        done = lb.transfer("TLSv1.3", ktls=True, size=100_000, driver=driver)
    assert done.intact
    assert driver_reads == reads
    assert (done.driver is not None) is driver
    assert (done.driver_users_added is not None) is driver
