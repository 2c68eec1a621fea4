"""CAAM / QorIQ SEC register map and capability decoding, shared by the model and the driver."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# Block layout: offsets relative to the SEC block base.
BLOCK_SIZE = 0x10000
PAGE_SIZE = 0x1000


def jr_base(n: int) -> int:
    """Offset of job ring ``n``'s register page."""
    return PAGE_SIZE * (n + 1)


# Job ring registers, offsets inside a ring page.
IRBAR_HI = 0x00  # input ring base address, bits 63:32
IRBAR_LO = 0x04  # input ring base address, bits 31:0
IRSR = 0x0C  # input ring size, in entries
IRSAR = 0x14  # input ring slots available (read)
IRJAR = 0x1C  # input ring jobs added (write N)
ORBAR_HI = 0x20
ORBAR_LO = 0x24
ORSR = 0x2C  # output ring size, in entries
ORJRR = 0x34  # output ring jobs removed (write N)
ORSFR = 0x3C  # output ring slots full (read)
JRSTAR = 0x44  # ring status
JRINTR = 0x4C  # interrupt status, write 1 to clear
JRCFGR_MS = 0x50
JRCFGR_LS = 0x54
IRRIR = 0x5C  # input ring read index
ORWIR = 0x64  # output ring write index
JRCR = 0x6C  # ring command

RING_SIZE_MASK = 0x3FF

# JRINTR fields.
JRINTR_JRI = 0x1  # completed jobs wait in the output ring
JRINTR_ERR = 0x2  # a ring error happened; its type is in ERR_TYPE
JRINTR_HALT_MASK = 0xC
JRINTR_HALT_IN_PROGRESS = 0x4
JRINTR_HALT_DONE = 0x8
JRINTR_ERR_TYPE_MASK = 0xF00
JRINTR_ERR_TYPE_SHIFT = 8
# Ring error types (JRINTR bits 11:8), as Linux regs.h names them; not in the brief.
JR_ERR_WRITE = 0x1
JR_ERR_BAD_INPADDR = 0x3
JR_ERR_BAD_OUTADDR = 0x4
JR_ERR_INV_INPWRT = 0x5
JR_ERR_INV_OUTWRT = 0x6
JR_ERR_RESET = 0x7
JR_ERR_REMOVE_OFL = 0x8  # ORJRR wrote more jobs than the output ring holds
JR_ERR_ADD_OFL = 0x9  # IRJAR wrote more jobs than slots were available

# JRCFGR low word.
JRCFGR_IMSK = 0x1  # interrupt mask
JRCFGR_ICEN = 0x2  # interrupt coalescing enable
JRCFGR_SOE = 0x4  # stop on error

# JRCR.
JRCR_RESET = 0x1

# Controller registers (page 0).
MCFGR = 0x004
MCFGR_SWRESET = 0x80000000
MCFGR_LONG_PTR = 0x00010000
SCFGR = 0x00C  # security configuration
SCFGR_RDBENABLE = 0x400  # RNG4 "deterministic bit" enable, set by Linux after instantiation
SCFGR_VIRT_EN = 0x8000  # job ring virtualization: DECORSR must be used before DECORR
DECORSR = 0x094  # DECO request source: which ring's identity DECO 0 takes
DECORSR_JR0 = 0x1
DECORSR_VALID = 0x8000_0000
DECORR = 0x09C  # DECO request: software asks for DECO 0 (Linux runs the RNG descriptors there)
DECORR_RQD0ENABLE = 0x1
DECORR_DEN0 = 0x1_0000  # DECO 0 granted to software

# RNG4 TRNG test registers (Linux kick_trng programs them before instantiating).
RTMCTL = 0x600  # miscellaneous control
RTMCTL_PRGM = 0x00010000  # program mode
RTMCTL_ACC = 0x20  # access mode: invalidates the entropy register
RTMCTL_SAMP_MODE_MASK = 0x3
RTMCTL_SAMP_MODE_RAW_ES_SC = 0x1
RTSCMISC = 0x604  # statistical check miscellaneous
RTPKRRNG = 0x608  # poker range
RTPKRMAX = 0x60C  # poker maximum limit
RTSDCTL = 0x610  # seed control: entropy delay (bits 31:16), sample size (bits 15:0)
RTSDCTL_ENT_DLY_SHIFT = 16
RTSDCTL_SAMP_SIZE_MASK = 0xFFFF
RTFRQMIN = 0x618  # frequency count minimum
RTFRQMAX = 0x61C  # frequency count maximum
RTSCML = 0x620  # statistical check monobit limit
RTSCRL = tuple(0x624 + 4 * n for n in range(6))  # statistical check run length 1..6 limits
RDSTA = 0x6C0
RDSTA_IF0 = 0x1
RDSTA_IF1 = 0x2
RDSTA_PR0 = 0x10  # state handle 0 instantiated with prediction resistance
RDSTA_PR1 = 0x20
RDSTA_SKVN = 0x4000_0000  # secure keys valid (JDKEK, TDKEK, TDSK generated)
RDSTA_SKVT = 0x8000_0000  # secure keys valid, test mode
RDSTA_MASK = RDSTA_IF0 | RDSTA_IF1 | RDSTA_PR0 | RDSTA_PR1  # what Linux reads as "instantiated"

# DECO register pages: DECO n at page 8 + n (4 KiB pages). Offsets inside a DECO page.
DECO_PAGE = 8
DECO_JR_CTL_HI = 0x800  # job queue control: WHL/FOUR start a descriptor written by software
DECO_JR_CTL_LO = 0x804
DECO_JQCR_WHL = 0x2000_0000  # the whole descriptor is in the descriptor buffer
DECO_JQCR_FOUR = 0x1000_0000  # at least four words are
DECO_DESC_ADDR_HI = 0x808
DECO_DESC_ADDR_LO = 0x80C
DECO_OP_STATUS_HI = 0x810  # the status word of the last descriptor run
DECO_OP_STATUS_LO = 0x814
DECO_OP_STATUS_HI_ERR_MASK = 0xF000_00FF  # what Linux compares (0 or 0x70000000 is success)
DECO_DESCBUF = 0xA00  # 64-word descriptor buffer
DECO_DESCBUF_WORDS = 64
DECO_DESC_DBG = 0xE04  # debug: VALID (bit 31) while running, DECO state in bits 23:20
DECO_DBG_EXEC = 0xE3C  # era 10+: DECO state in bits 19:16
DESC_DBG_VALID = 0x8000_0000
DESC_DBG_STATE_SHIFT = 20
DBG_EXEC_STATE_SHIFT = 16
DECO_STATE_MASK = 0xF
DECO_STATE_HOST_ERR = 0xD  # the descriptor ended in error


def deco_base(n: int) -> int:
    """Offset of DECO ``n``'s register page."""
    return PAGE_SIZE * (DECO_PAGE + n)


# Version and ID registers (page 0, mirrored in every ring page).
ID_SPACE_START = 0xE80
VERSION_REGS_START = 0xE80  # per-CHA version registers, era 10 and later
PKHA_VERSION = 0xE8C
AESA_VERSION = 0xE90
MDHA_VERSION = 0xE94
RNG_VERSION = 0xEB4
CRNR_MS = 0xFA0
CRNR_LS = 0xFA4
CTPR_MS = 0xFA8
CTPR_LS = 0xFAC
CSTA = 0xFD4
CCBVID = 0xFE4
CHAVID_MS = 0xFE8
CHAVID_LS = 0xFEC
CHANUM_MS = 0xFF0
CHANUM_LS = 0xFF4
CAAMVID_MS = 0xFF8
CAAMVID_LS = 0xFFC

CTPR_MS_PS = 1 << 17  # the block can use pointers above 32 bits
CSTA_PLEND = 1 << 10
CSTA_ALT_PLEND = 1 << 18

# Nibble positions of each CHA in CHAVID/CHANUM/CRNR before era 10: (register, shift).
LS_FIELDS = {
    "AES": 0,
    "DES": 4,
    "ARC4": 8,
    "MD": 12,
    "RNG": 16,
    "SNOW8": 20,
    "KASUMI": 24,
    "PK": 28,
}
MS_FIELDS = {"CRC": 0, "SNOW9": 4, "DECO": 24, "JR": 28}

# Version ids found in the nibbles.
AES_LP = 3
AES_HP = 4
MD_LP256 = 0
MD_LP512 = 1
MD_HP = 2
RNG4 = 4

# Era 10 per-CHA version registers: [31:24] version, [23:16] revision, [15:8] misc, [7:0] count.
ERA10_REGISTERS = {
    "PK": PKHA_VERSION,
    "AES": AESA_VERSION,
    "MD": MDHA_VERSION,
    "RNG": RNG_VERSION,
}
#: AESA misc bit "GCM implemented" (Linux regs.h CHA_VER_MISC_AES_GCM; not in the brief).
ERA10_AES_MISC_GCM = 1 << 9

# SVR (QorIQ System Version Register).
SVR_E_BIT = 0x00080000
#: SoC ids, (SVR >> 8) with the E bit cleared (U-Boot; T1024 from the Linux guts table).
KNOWN_SOCS = {
    0x824000: "T4240",
    0x824100: "T4160",
    0x824102: "T4080",
    0x852000: "T1040",
    0x852002: "T1042",
    0x853000: "T2080",
    0x853100: "T2081",
    0x854000: "T1024",
}


def era(ccbvid: int) -> int:
    """The CAAM era, CCBVID bits 31:24 (0 on parts older than era 6, which lack the field)."""
    return (ccbvid >> 24) & 0xFF


def _nibbles(ms: int, ls: int) -> dict[str, int]:
    fields = {name: (ls >> shift) & 0xF for name, shift in LS_FIELDS.items()}
    fields.update({name: (ms >> shift) & 0xF for name, shift in MS_FIELDS.items()})
    return fields


def cha_versions(chavid_ms: int, chavid_ls: int) -> dict[str, int]:
    """CHA version ids by name from CHAVID_MS/LS (before era 10); meaningful where counted."""
    return _nibbles(chavid_ms, chavid_ls)


def cha_counts(chanum_ms: int, chanum_ls: int) -> dict[str, int]:
    """Instance counts by name (CHAs, DECOs, job rings) from CHANUM_MS/LS (before era 10)."""
    return _nibbles(chanum_ms, chanum_ls)


def cha_revisions(crnr_ms: int, crnr_ls: int) -> dict[str, int]:
    """CHA revision numbers by name from CRNR_MS/LS (same nibble layout)."""
    return _nibbles(crnr_ms, crnr_ls)


@dataclass(frozen=True)
class ChaVersion:
    """One era-10 per-CHA version register split into its fields."""

    version: int
    revision: int
    misc: int
    count: int


def cha_version_era10(value: int) -> ChaVersion:
    """Decode an era-10 per-CHA version register (0xE80..)."""
    return ChaVersion(
        version=(value >> 24) & 0xFF,
        revision=(value >> 16) & 0xFF,
        misc=(value >> 8) & 0xFF,
        count=value & 0xFF,
    )


def gcm_supported(aes_version: int, aes_revision: int) -> bool:
    """Before era 10: GCM is absent only on a low-power AESA with revision below 8."""
    return not (aes_version == AES_LP and aes_revision < 8)


def gcm_supported_era10(aesa_version_reg: int) -> bool:
    """From era 10: the AESA version register's misc field says whether GCM is implemented."""
    return bool(aesa_version_reg & ERA10_AES_MISC_GCM)


def little_endian(csta: int) -> bool:
    """The block's byte order as Linux decides it: little-endian unless PLEND or ALT_PLEND is set.

    ALT_PLEND is PLEND as seen through a byte-swapped read, so either order of reading works.
    """
    return not csta & (CSTA_PLEND | CSTA_ALT_PLEND)


def long_pointers_supported(ctpr_ms: int) -> bool:
    """Whether the block can take pointers above 32 bits (CTPR_MS.PS)."""
    return bool(ctpr_ms & CTPR_MS_PS)


def caam_vid(ms: int) -> tuple[int, int, int]:
    """CAAMVID_MS split into (IP id, major revision, minor revision)."""
    return (ms >> 16) & 0xFFFF, (ms >> 8) & 0xFF, ms & 0xFF


def sec_present(svr: int) -> bool:
    """Whether a QorIQ SVR belongs to an "E" part, the one with the SEC block."""
    return bool(svr & SVR_E_BIT)


def soc_id(svr: int) -> int:
    """The SoC id without the E bit: (SVR >> 8) & 0xFFF7FF."""
    return (svr >> 8) & 0xFFF7FF


def soc_revision(svr: int) -> tuple[int, int]:
    """The silicon revision (major, minor) from the SVR's low byte."""
    return (svr >> 4) & 0xF, svr & 0xF


def soc_name(svr: int) -> str | None:
    """The SoC's name with an "E" suffix when the SEC is present, or None when unknown."""
    name = KNOWN_SOCS.get(soc_id(svr))
    if name is None:
        return None
    return name + "E" if sec_present(svr) else name


@dataclass(frozen=True)
class Capabilities:
    """What the capability registers say about one block."""

    era: int
    little_endian: bool
    long_pointers: bool  # CTPR_MS.PS: pointers above 32 bits possible
    ip_id: int
    major: int
    minor: int
    versions: dict[str, int]  # CHA version ids (AES, MD, RNG, PK, ...)
    counts: dict[str, int]  # instances (AES, MD, RNG, PK, ..., DECO, JR)
    gcm: bool

    @property
    def byteorder(self) -> str:
        return "little" if self.little_endian else "big"


def discover(read32: Callable[[int], int]) -> Capabilities:
    """Read the version/ID registers through ``read32(offset)`` and decode them.

    Before era 10 the CHA nibbles of CHAVID/CHANUM/CRNR are used; from era 10 the per-CHA version
    registers give AES, MD, RNG and PK (other CHAs then read as absent here), while DECO and job
    ring counts still come from CHANUM_MS (an assumption: the brief does not say for era 10).
    """
    ccb = era(read32(CCBVID))
    ip_id, major, minor = caam_vid(read32(CAAMVID_MS))
    counts = cha_counts(read32(CHANUM_MS), read32(CHANUM_LS))
    if ccb < 10:
        versions = cha_versions(read32(CHAVID_MS), read32(CHAVID_LS))
        revisions = cha_revisions(read32(CRNR_MS), read32(CRNR_LS))
        gcm = counts["AES"] > 0 and gcm_supported(versions["AES"], revisions["AES"])
    else:
        versions = dict.fromkeys([*LS_FIELDS, *MS_FIELDS], 0)
        counts = dict.fromkeys(versions, 0) | {"DECO": counts["DECO"], "JR": counts["JR"]}
        for name, offset in ERA10_REGISTERS.items():
            reg = cha_version_era10(read32(offset))
            versions[name] = reg.version
            counts[name] = reg.count
        gcm = counts["AES"] > 0 and gcm_supported_era10(read32(AESA_VERSION))
    return Capabilities(
        era=ccb,
        little_endian=little_endian(read32(CSTA)),
        long_pointers=long_pointers_supported(read32(CTPR_MS)),
        ip_id=ip_id,
        major=major,
        minor=minor,
        versions=versions,
        counts=counts,
        gcm=gcm,
    )
