"""Which engines verify and calibrate work on; the drivers an engine lists but does not use,
in `cryptoffload engines` too."""

from __future__ import annotations

import json

import pytest
from controlled import ControlledEngine
from doubles import AbsentEngine

from cryptoffload import engines
from cryptoffload.engines.base import Capabilities
from cryptoffload.tools import cli, targets

PINNED = {"spec": "pinned:dev", "driver": "dev", "priority": 150, "kernel name": "cbc(aes)"}


class Lister(AbsentEngine):
    """Not available itself, but its probe lists a driver that a spec pins."""

    name = "lister"

    def probe(self) -> Capabilities:
        detail = {"alternatives": {"aes-128-cbc": [PINNED], "aes-256-cbc": [PINNED]}}
        return Capabilities(False, "no algorithm is bound to a hardware driver", detail=detail)


@pytest.fixture
def registry(monkeypatch):
    monkeypatch.setitem(engines.FACTORIES, "lister", lambda arg: Lister())
    monkeypatch.setitem(
        engines.FACTORIES, "pinned", lambda arg: ControlledEngine(f"pinned:{arg}", ["aes-128-cbc"])
    )
    monkeypatch.setattr(engines, "discover", lambda: [Lister()])


@pytest.mark.usefixtures("registry")
def test_engines_found_bring_the_drivers_they_list():
    found = targets.resolve(None)
    assert [t.name for t in found.engines] == ["pinned:dev"]  # once, though listed twice
    assert found.absent == {"lister": "no algorithm is bound to a hardware driver"}
    assert "lister" in found.engines[0].origin and found.engines[0].required


@pytest.mark.usefixtures("registry")
def test_an_engine_named_is_kept_even_when_absent_and_its_drivers_join():
    found = targets.resolve(["lister"])
    assert [t.name for t in found.engines] == ["lister", "pinned:dev"]
    assert not found.engines[0].caps.available


def test_software_is_not_a_target():
    with pytest.raises(ValueError, match="software is the reference"):
        targets.resolve(["software"])


def test_a_probe_is_run_once():
    class Counting(ControlledEngine):
        probes = 0

        def probe(self):
            Counting.probes += 1
            return super().probe()

    probed = targets.probed(Counting("c", ["sha256"]))
    assert probed.probe() is probed.probe() and Counting.probes == 1


@pytest.mark.usefixtures("registry")
def test_engines_command_lists_the_drivers_not_chosen_with_their_specs(capsys):
    assert cli.main(["engines", "--engine", "lister"]) == 0
    out = capsys.readouterr().out
    assert "lister: hardware drivers the kernel does not choose" in out
    assert "pinned:dev" in out and "150" in out
    assert cli.main(["engines", "--engine", "lister", "--json"]) == 0
    (row, _software) = json.loads(capsys.readouterr().out)["engines"]
    assert row["detail"]["alternatives"]["aes-128-cbc"] == [PINNED]
