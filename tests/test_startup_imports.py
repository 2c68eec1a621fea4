"""What `run` loads before a program's first operation, and what only the operations that need
them load: the start-up cost kept off a short program (issue 32)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from cryptoffload import engines
from cryptoffload.blocks._lazy import LazyModule

#: Modules a program that does one AES-GCM op does not need (a hash, a log message, an RSA
#: key, a DmaBuffer, adaptive routing or a cross-check would load them).
NOT_FOR_ONE_AES_OP = (
    "logging",
    "platform",
    "json",
    "threading",
    "ctypes",
    "random",
    "hashlib",
    "hmac",
    "cryptography.hazmat.backends.openssl.backend",
    "cryptography.hazmat.primitives.asymmetric.padding",
    "cryptoffload.ciphers.base",
    "cryptoffload.blocks.ffdh",
)

ONE_AES_OP = textwrap.dedent(
    """
    import sys
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    sealed = AESGCM(bytes(16)).encrypt(bytes(12), b"one record", None)
    assert AESGCM.__module__.startswith("cryptoffload"), AESGCM
    loaded = sorted(sys.modules)  # before json, which prints them
    import json

    print(json.dumps(loaded))
    """
)


def modules_loaded_under_run(tmp_path, source: str, *options: str) -> set[str]:
    script = tmp_path / "program.py"
    script.write_text(source)
    out = subprocess.run(
        [sys.executable, "-m", "cryptoffload", "run", *options, str(script)],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(json.loads(out.stdout.splitlines()[-1]))


def modules_python_loads_at_start(tmp_path) -> set[str]:
    """What plain ``python`` has loaded before a program's first line: the interpreter's and
    the environment's (a ``.pth`` file in site-packages may import threading or random), not
    ours to keep off."""
    script = tmp_path / "empty.py"
    script.write_text(
        "import sys\nloaded = sorted(sys.modules)\nimport json\nprint(json.dumps(loaded))\n"
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.splitlines()[-1]))


@pytest.mark.parametrize("options", [(), ("--engines", "software"), ("--engines", "passthrough")])
def test_one_aes_op_under_run_loads_nothing_it_does_not_need(tmp_path, options):
    loaded = modules_loaded_under_run(tmp_path, ONE_AES_OP, *options)
    loaded -= modules_python_loads_at_start(tmp_path)
    assert not loaded & set(NOT_FOR_ONE_AES_OP)
    absent = [kind for kind, why in engines.WHY_ABSENT.items() if why() is not None]
    assert not loaded & {f"cryptoffload.engines.{kind}" for kind in absent}


def test_run_with_an_engine_list_builds_nothing_for_a_program_without_crypto(tmp_path):
    program = "import sys\nloaded = sorted(sys.modules)\nimport json\nprint(json.dumps(loaded))\n"
    for engine in ("software", "passthrough"):
        loaded = modules_loaded_under_run(tmp_path, program, "--engines", engine)
        assert not {m for m in loaded if m.startswith("cryptography")}, engine
        assert "cryptoffload.core.provider" not in loaded and "cryptoffload.core.lane" not in loaded


def test_a_lazy_module_is_imported_at_its_first_read_and_keeps_what_was_read(monkeypatch):
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)
    colors = LazyModule("colorsys")
    assert "colorsys" not in sys.modules
    assert colors.rgb_to_hsv(1.0, 0.0, 0.0) == (0.0, 1.0, 1.0)
    assert "colorsys" in sys.modules
    assert colors.__dict__["rgb_to_hsv"] is sys.modules["colorsys"].rgb_to_hsv
    with pytest.raises(AttributeError):
        colors.no_such_name  # noqa: B018
