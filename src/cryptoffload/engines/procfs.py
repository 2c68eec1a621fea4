"""What the kernel crypto API offers: /proc/crypto parsed, drivers told hardware from software."""

from __future__ import annotations

import re
from dataclasses import dataclass

PROC_CRYPTO = "/proc/crypto"

#: Driver name endings of the kernel's CPU implementations (and the generic C ones).
SOFTWARE_SUFFIXES = (
    "-generic",
    "-aesni",
    "-ni",
    "-clmulni",
    "-ce",
    "-neon",
    "-avx",
    "-avx2",
    "-avx512",
    "-ssse3",
    "-sse2",
    "-lib",
    "-asm",
    "-x86_64",
    "-arm",
    "-arm64",
    "-fixed-time",
    "-intel",
    "-vaes",
    "-zvkned",
    "-s390",
    "-ppc",
    "-p8",
    "-spe",
    "-simd",
)
#: Driver name beginnings of software random number generators.
SOFTWARE_PREFIXES = ("drbg_", "jitterentropy", "ansi_cprng")
#: Kernel modules that put a device behind a driver (hardware whatever the driver is called).
DEVICE_MODULES = (
    "virtio_crypto",
    "caam",
    "caamalg",
    "caamhash",
    "caam_jr",
    "caam_pkc",
    "dpaa2_caam",
    "talitos",
    "qat_",
    "intel_qat",
    "ccp",
    "ccp_crypto",
    "mv_cesa",
    "marvell_cesa",
    "omap",
    "atmel",
    "stm32",
    "sun8i",
    "sun4i",
    "rockchip",
    "hisi",
    "nx_crypto",
    "ccree",
    "safexcel",
    "inside_secure",
    "mxs_dcp",
    "mxc_scc",
    "sahara",
    "img_hash",
    "keembay",
    "zynqmp",
)


@dataclass(frozen=True)
class Entry:
    """One /proc/crypto record."""

    name: str
    driver: str
    module: str
    priority: int
    type: str
    internal: bool = False
    #: Users of the driver now (each transform allocated: a kTLS connection's direction, an
    #: AF_ALG socket...): its rise during a transfer shows the driver is the one in use.
    refcnt: int = 0

    @property
    def hardware(self) -> bool:
        """True when a device does the work (see :func:`is_hardware`)."""
        return is_hardware(self.driver, self.module)


def parse(text: str) -> list[Entry]:
    """Entries of a /proc/crypto text (records separated by blank lines)."""
    entries = []
    for block in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                fields[key.strip()] = value.strip()
        if "name" in fields and "driver" in fields:
            entries.append(
                Entry(
                    name=fields["name"],
                    driver=fields["driver"],
                    module=fields.get("module", "kernel"),
                    priority=int(fields.get("priority", "0") or 0),
                    type=fields.get("type", ""),
                    internal=fields.get("internal", "no") == "yes",
                    refcnt=int(fields.get("refcnt", "0") or 0),
                )
            )
    return entries


def read(path: str = PROC_CRYPTO) -> list[Entry]:
    """The running kernel's entries (empty when /proc/crypto cannot be read)."""
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return parse(f.read())
    except OSError:
        return []


def _components(driver: str) -> list[str]:
    """The implementations a (possibly templated) driver name is built from.

    Template names (cbc, gcm_base, hmac, ctr...) are the tokens followed by "(": they carry no
    implementation of their own, so only the leaves count.
    """
    return [m.group(1) for m in re.finditer(r"([^(),\s]+)(?!\()(?=[),]|$)", driver)]


def is_software_name(driver: str) -> bool:
    """True when every implementation the driver is built from is a known CPU one."""
    components = _components(driver)
    return all(c.endswith(SOFTWARE_SUFFIXES) or c.startswith(SOFTWARE_PREFIXES) for c in components)


def is_hardware(driver: str, module: str = "kernel") -> bool:
    """Hardware unless the name says CPU code; any driver of a device module is hardware."""
    if module.startswith(DEVICE_MODULES):
        return True
    return not is_software_name(driver)


def candidates(entries: list[Entry], name: str) -> list[Entry]:
    """Every driver registered for ``name`` that a user can bind (not internal), the kernel's
    choice first, then by falling priority."""
    public = [e for e in entries if e.name == name and not e.internal]
    return sorted(public, key=lambda e: -e.priority)


def chosen(entries: list[Entry], name: str) -> Entry | None:
    """The entry the kernel picks for ``name``: the highest priority one not internal."""
    found = candidates(entries, name)
    return found[0] if found else None


def by_driver(entries: list[Entry], driver: str) -> Entry | None:
    """The entry of a driver name, if the kernel has it."""
    return next((e for e in entries if e.driver == driver), None)
