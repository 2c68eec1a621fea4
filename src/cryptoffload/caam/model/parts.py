"""Part profiles of the CAAM model: what each SoC's block contains and what its ID registers read.

Values from the brief (caam-sec-brief.md sections 4 and 5): T2080E and T1040E SEC version, era,
job ring / DECO / AESA / MDHA / RNG / PKHA counts and PKHA version; the SVR E bit and SoC ids;
the CSTA byte-order rule. i.MX7D from public boot logs (Toradex Colibri iMX7D, Linux 6.16):
"device ID = 0x0a16030000000000 (Era 8)", "job rings = 3" (CAAMVID_MS 0x0A160300, era 8, 3 rings).

Chosen here, not given by any source found (a driver should read them, never assume them):
- AES version nibble 4 (HP) on every part, so GCM is available (both QorIQ parts run GCM on the
  engine; i.MX7D's AESA may really be LP); MD version 2 (HP: SHA-384/512); RNG version 4 (RNG4).
- CHAs the model does not run (DES, ARC4, SNOW, KASUMI, CRC) read as absent (count 0), although
  the real parts have some of them: the model advertises only what it executes.
- DECO and JR version nibbles 0; every present CHA's CRNR revision nibble 1.
- CAAMVID: QorIQ IP id 0x0A10 with the SEC version as major.minor (5.2, 5.0); CAAMVID_LS 0.
- CTPR_MS.PS set on the QorIQ parts (36-bit physical addresses), clear on the 32-bit i.MX7D.
- SVRs: revision 1.1 (T2080E 0x85380011, T1040E 0x85280011, T2080 without SEC 0x85300011).
- i.MX7D: DECO 1, AESA 1, MDHA 1, RNG 1, PKHA 1 of version 1 were not confirmed. i.MX has no SVR:
  the model's ``svr`` is the ANATOP DIGPROG value of an i.MX7D rev 1.0 (0x00720000, from memory of
  the Linux i.MX support code, unconfirmed) with the E bit ORed in, so that the one rule
  "E bit set means the block is there" holds for every part of the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from cryptoffload.caam import regs


@dataclass(frozen=True)
class Part:
    """One SoC's CAAM: its contents, quirks, and the version/ID register values it shows."""

    name: str
    svr: int
    sec: bool
    byteorder: str
    era: int
    job_rings: int
    decos: int
    aesa: int
    mdha: int
    rngs: int
    pkha: int
    pkha_version: int
    builtin_curves: bool
    allow_prehashed_flag: bool
    id_registers: Mapping[int, int]


def _pack(values: Mapping[str, int], fields: Mapping[str, int]) -> int:
    word = 0
    for name, shift in fields.items():
        word |= (values.get(name, 0) & 0xF) << shift
    return word


def _id_registers(
    part: Part, *, ip_id: int, major: int, minor: int, long_pointers: bool
) -> Mapping[int, int]:
    counts = {
        "AES": part.aesa,
        "MD": part.mdha,
        "RNG": part.rngs,
        "PK": part.pkha,
        "DECO": part.decos,
        "JR": part.job_rings,
    }
    versions = {"AES": regs.AES_HP, "MD": regs.MD_HP, "RNG": regs.RNG4, "PK": part.pkha_version}
    revisions = {name: 1 for name in ("AES", "MD", "RNG", "PK") if counts[name]}
    values = {
        regs.CRNR_MS: _pack(revisions, regs.MS_FIELDS),
        regs.CRNR_LS: _pack(revisions, regs.LS_FIELDS),
        regs.CTPR_MS: regs.CTPR_MS_PS if long_pointers else 0,
        regs.CTPR_LS: 0,
        regs.CSTA: regs.CSTA_PLEND if part.byteorder == "big" else 0,
        regs.CCBVID: (part.era & 0xFF) << 24,
        regs.CHAVID_MS: _pack(versions, regs.MS_FIELDS),
        regs.CHAVID_LS: _pack(versions, regs.LS_FIELDS),
        regs.CHANUM_MS: _pack(counts, regs.MS_FIELDS),
        regs.CHANUM_LS: _pack(counts, regs.LS_FIELDS),
        regs.CAAMVID_MS: (ip_id << 16) | (major << 8) | minor,
        regs.CAAMVID_LS: 0,
    }
    return MappingProxyType(values)


def _part(
    name: str,
    svr: int,
    *,
    byteorder: str,
    era: int,
    job_rings: int,
    decos: int,
    aesa: int,
    mdha: int,
    rngs: int,
    pkha: int,
    pkha_version: int,
    imx: bool,
    ip_id: int,
    major: int,
    minor: int,
    sec: bool = True,
) -> Part:
    part = Part(
        name=name,
        svr=svr,
        sec=sec,
        byteorder=byteorder,
        era=era,
        job_rings=job_rings,
        decos=decos,
        aesa=aesa,
        mdha=mdha,
        rngs=rngs,
        pkha=pkha,
        pkha_version=pkha_version,
        builtin_curves=imx,
        allow_prehashed_flag=imx,
        id_registers=MappingProxyType({}),
    )
    if not sec:
        return part
    ids = _id_registers(part, ip_id=ip_id, major=major, minor=minor, long_pointers=not imx)
    return replace(part, id_registers=ids)


_T2080 = dict(
    byteorder="big",
    era=6,
    job_rings=4,
    decos=4,
    aesa=4,
    mdha=4,
    rngs=1,
    pkha=1,
    pkha_version=2,
    imx=False,
    ip_id=0x0A10,
    major=5,
    minor=2,
)

PARTS: dict[str, Part] = {
    "t2080": _part("t2080", 0x85380011, **_T2080),
    "t1040": _part(
        "t1040",
        0x85280011,
        **{**_T2080, "decos": 2, "aesa": 2, "mdha": 2, "pkha_version": 1, "minor": 0},
    ),
    "t2080-nosec": _part("t2080-nosec", 0x85300011, sec=False, **_T2080),
    "imx7d": _part(
        "imx7d",
        0x00720000 | regs.SVR_E_BIT,
        byteorder="little",
        era=8,
        job_rings=3,
        decos=1,
        aesa=1,
        mdha=1,
        rngs=1,
        pkha=1,
        pkha_version=1,
        imx=True,
        ip_id=0x0A16,
        major=3,
        minor=0,
    ),
}
