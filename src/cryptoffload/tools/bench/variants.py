"""Software rows with the CPU's crypto extensions hidden from OpenSSL, run in a subprocess.

OpenSSL reads a capability mask from the environment when it starts (OPENSSL_ia32cap on x86-64,
OPENSSL_armcap on ARM): clearing the AES, carry-less multiply and SHA bits makes it fall back to
its portable code, which gives the articles' "plain C" rows beside the "assembly" ones.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
from typing import Any

# x86-64: word 1 is CPUID.1 EDX:ECX (AES-NI is ECX bit 25 -> 57, PCLMULQDQ ECX bit 1 -> 33,
# AVX ECX bit 28 -> 60); word 2 is CPUID.7 EBX:ECX (AVX2 EBX 5, AVX-512F EBX 16, SHA EBX 29,
# VAES ECX 9 -> 41, VPCLMULQDQ ECX 10 -> 42).
_X86_WORD1 = (1 << 57) | (1 << 33) | (1 << 60)
_X86_WORD2 = (1 << 5) | (1 << 16) | (1 << 29) | (1 << 41) | (1 << 42)


def mask_environment() -> tuple[str, dict[str, str]] | None:
    """(label, environment) hiding crypto extensions on this CPU, or None where unknown."""
    arch = platform.machine().lower()
    if arch in ("x86_64", "amd64"):
        return "no-crypto-ext", {"OPENSSL_ia32cap": f"~{_X86_WORD1:#x}:~{_X86_WORD2:#x}"}
    if arch in ("aarch64", "arm64") or arch.startswith("arm"):
        return "no-crypto-ext", {"OPENSSL_armcap": "0"}
    return None


def run_variant(labels: list[str], block: int, seconds: float, trials: int) -> list[dict[str, Any]]:
    """Software rows for ``labels`` measured in a child with the mask set; engine renamed."""
    found = mask_environment()
    if found is None:
        raise RuntimeError(f"no known OpenSSL capability mask for {platform.machine()}")
    label, env_extra = found
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "variant.json")
        cmd = [
            sys.executable,
            "-m",
            "cryptoffload",
            "bench",
            "--engines",
            "software",
            "--algs",
            ",".join(labels),
            "--block",
            str(block),
            "--time",
            str(seconds),
            "--trials",
            str(trials),
            "--format",
            "json",
            "--out",
            out,
            "--quiet",
        ]
        env = {**os.environ, **env_extra}
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
        if proc.returncode != 0:
            raise RuntimeError(f"variant run failed ({proc.returncode}): {proc.stderr.strip()}")
        with open(out, encoding="utf-8") as f:
            report = json.load(f)
    rows = report["rows"]
    mask = " ".join(f"{k}={v}" for k, v in env_extra.items())
    for row in rows:
        row["engine"] = f"software:{label}"
        row["variant"] = mask
    return rows
