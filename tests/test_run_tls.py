"""``run --tls``: an unmodified urllib program's connections ask for kTLS and are counted, in the
counters file's ``kernel-tls`` row and its ``kernel_tls`` section (here, a kernel without kTLS:
each with its reason; tests/test_ktls_guest.py runs the same in the rig's kernel)."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from cryptoffload.ktls import kernel
from cryptoffload.ktls.loopback import write_certificate

APP = pathlib.Path(__file__).with_name("tls_app.py")


def run_app(tmp_path: pathlib.Path, *options: str, size: int = 200_000) -> tuple[str, dict]:
    """Run tests/tls_app.py under ``run`` with ``options``: its output and the counters file."""
    cert, key = write_certificate(str(tmp_path))
    counters = tmp_path / "counters.json"
    argv = ["-m", "cryptoffload", "run", "--counters", str(counters), *options]
    proc = subprocess.run(
        [sys.executable, *argv, str(APP), cert, key, str(size)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, json.loads(counters.read_text())


def test_without_tls_no_connection_is_counted(tmp_path):
    out, counters = run_app(tmp_path)
    assert out.startswith("intact")
    assert "kernel_tls" not in counters
    assert all(row["name"] != "kernel-tls" for row in counters["engines"])


@pytest.mark.skipif(kernel.tls_stat() is not None, reason="this kernel has kTLS: see the rig")
def test_with_tls_both_ends_are_counted_with_the_reason_the_kernel_did_not_take_them(tmp_path):
    out, counters = run_app(tmp_path, "--tls")
    assert out.startswith("intact 199936")
    row = next(r for r in counters["engines"] if r["name"] == "kernel-tls")
    (cell,) = row["counters"].values()
    assert cell["ops"] == 0 and cell["declined"] == {"no-kernel-tls": 2}
    report = counters["kernel_tls"]
    sides = sorted(c["side"] for c in report["connections"])
    assert sides == ["client", "server"] and report["more_connections"] == 0
    client = next(c for c in report["connections"] if c["side"] == "client")
    assert client["received"] >= 199936 and not client["kernel_tx"] and not client["kernel_rx"]


def test_install_tls_reaches_a_python_child(tmp_path):
    script = tmp_path / "parent.py"
    script.write_text(
        "import subprocess, sys\n"
        f"sys.exit(subprocess.call([sys.executable, {str(APP)!r}] + sys.argv[1:]))\n"
    )
    cert, key = write_certificate(str(tmp_path))
    counters = tmp_path / "counters.json"
    argv = ["-m", "cryptoffload", "run", "--tls", "--counters", str(counters)]
    proc = subprocess.run(
        [sys.executable, *argv, str(script), cert, key, "1000"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(counters.read_text())
    assert data["processes"] == 2 and len(data["kernel_tls"]["connections"]) == 2


def test_tls_hooks_ssl_when_the_program_imports_it_and_builds_no_provider_before_a_connection(
    tmp_path,
):
    script = tmp_path / "imports_ssl.py"
    script.write_text(
        "import sys\n"
        "print('ssl' in sys.modules, 'cryptoffload.ktls.hook' in sys.modules)\n"
        "import urllib.request  # ssl imported by the standard library, not the program\n"
        "import ssl\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('cryptoffload.core.provider', "
        "'cryptography')))\n"
        "print(ssl.SSLContext.sslsocket_class.__module__, loaded)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "cryptoffload", "run", "--tls", str(script)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["False False", "cryptoffload.ktls.hook []"]
