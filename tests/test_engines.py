"""The engine registry (`cryptoffload.engines`): specs to engines, and what it may find here."""

from __future__ import annotations

import pytest

from cryptoffload import engines


@pytest.mark.parametrize("kind", sorted(engines.MAY_BE_HERE))
def test_a_kind_said_absent_is_unavailable_to_its_own_probe(kind):
    # The check may say "maybe" where the probe finds nothing, never "absent" where it finds one.
    if engines.MAY_BE_HERE[kind]():
        pytest.skip(f"{kind}'s device may be on this machine")
    engine = engines.from_spec(kind)
    try:
        assert not engine.probe().available
    finally:
        close = getattr(engine, "close", None)
        if close is not None:
            close()


def test_every_discovered_kind_but_a_registered_one_has_a_presence_check(monkeypatch):
    discovered = {kind for kind in engines.FACTORIES if kind not in engines.NOT_DISCOVERED}
    assert discovered == set(engines.MAY_BE_HERE)
    monkeypatch.setitem(engines.FACTORIES, "elsewhere", lambda arg: None)
    assert engines.may_discover_any()  # a kind without a check may always be found


def test_nothing_is_discovered_where_no_device_may_be(monkeypatch):
    for kind in engines.MAY_BE_HERE:
        monkeypatch.setitem(engines.MAY_BE_HERE, kind, lambda: False)
    assert not engines.may_discover_any()
    monkeypatch.setitem(engines.MAY_BE_HERE, "cryptodev", lambda: True)
    assert engines.may_discover_any()


@pytest.mark.parametrize("kind", sorted(engines.WHY_ABSENT))
def test_discovery_without_a_device_gives_the_kinds_own_probe_answer(kind):
    if engines.WHY_ABSENT[kind]() is None:
        pytest.skip(f"{kind}'s device may be on this machine")
    found = next(engine for engine in engines.discover() if engine.name == kind)
    real = engines.from_spec(kind)
    try:
        assert found.probe() == real.probe()
        assert not found.probe().available and found.probe().reason
    finally:
        real.close()


def test_discovery_imports_no_engine_module_whose_device_is_absent(monkeypatch):
    import sys

    for kind in engines.WHY_ABSENT:
        monkeypatch.setitem(engines.WHY_ABSENT, kind, lambda: "not on this machine")
        monkeypatch.delitem(sys.modules, f"cryptoffload.engines.{kind}", raising=False)
    found = engines.discover()
    assert [engine.name for engine in found] == list(engines.WHY_ABSENT)
    assert all(engine.probe().reason == "not on this machine" for engine in found)
    assert not any(f"cryptoffload.engines.{kind}" in sys.modules for kind in engines.WHY_ABSENT)


def test_discovery_builds_the_real_engine_where_its_device_may_be(monkeypatch):
    monkeypatch.setitem(engines.WHY_ABSENT, "cryptodev", lambda: None)
    found = {engine.name: engine for engine in engines.discover()}
    from cryptoffload.engines.cryptodev import CryptodevEngine

    assert isinstance(found["cryptodev"], CryptodevEngine)


def test_discovery_asks_a_factory_put_in_a_builtin_kinds_place(monkeypatch):
    from doubles import TakeAllEngine

    monkeypatch.setitem(engines.WHY_ABSENT, "afalg", lambda: "not on this machine")
    monkeypatch.setitem(engines.FACTORIES, "afalg", lambda arg: TakeAllEngine("afalg", ["sha256"]))
    found = {engine.name: engine for engine in engines.discover()}
    assert found["afalg"].probe().available


def test_the_software_engines_probe_reports_what_platform_and_the_backend_report():
    import platform

    from cryptography.hazmat.backends.openssl.backend import backend

    from cryptoffload.engines.software import SoftwareEngine

    detail = SoftwareEngine().probe().detail
    assert detail["openssl"] == backend.openssl_version_text()
    assert detail["machine"] == platform.machine()
    assert detail["python"] == platform.python_version()
