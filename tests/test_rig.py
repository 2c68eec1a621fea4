"""The kernel test rig (rig/): one guest boot checks argv, cwd, exit status and the
virtio-crypto driver through AF_ALG. Skipped unless rig/setup has been run."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

RUN = Path(__file__).resolve().parents[1] / "rig" / "run"
RIG_DIR = Path(os.environ.get("RIG_DIR") or Path.home() / ".cache/cryptoffload-rig")

GUEST = """
import json, os, socket, sys
sock = socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET)
sock.bind(("skcipher", "virtio_crypto_aes_cbc"))
sock.setsockopt(socket.SOL_ALG, socket.ALG_SET_KEY,
                bytes.fromhex("2b7e151628aed2a6abf7158809cf4f3c"))
op, _ = sock.accept()
op.sendmsg_afalg([bytes.fromhex("6bc1bee22e409f96e93d7e117393172a")],
                 op=socket.ALG_OP_ENCRYPT, iv=bytes.fromhex("000102030405060708090a0b0c0d0e0f"))
print(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "ct": op.recv(16).hex(),
                  "env": os.environ.get("RIG_TEST_VAR")}))
sys.exit(7)
"""


def test_run_without_setup_exits_3(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, RUN, "true"],
        env={**os.environ, "RIG_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
    )
    assert r.returncode == 3
    assert "rig/setup" in r.stderr


@pytest.mark.skipif(
    not (RIG_DIR / "current").exists() or not shutil.which("qemu-system-x86_64"),
    reason="kernel rig not set up (rig/setup)",
)
def test_guest_runs_command_and_reaches_virtio_crypto(tmp_path: Path) -> None:
    args = ["a b", "it's", '"q"', "$HOME", "", "x\ny"]
    env = {**os.environ, "RIG_TIMEOUT": "240", "RIG_TEST_VAR": "v w"}
    r = subprocess.run(
        [sys.executable, RUN, sys.executable, "-c", GUEST, *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 7, r.stdout + r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out == {
        "argv": args,
        "cwd": str(tmp_path),
        "env": "v w",
        "ct": "7649abac8119b246cee98e9b12e9197d",
    }
