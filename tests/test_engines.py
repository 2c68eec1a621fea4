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
