"""Job status words as the CAAM writes them to the output ring, built and explained."""

from __future__ import annotations

from dataclasses import dataclass

# Source of the status, bits 31:28.
SRC_NONE = 0x0
SRC_CCB = 0x2
SRC_JUMP_HALT_USER = 0x3
SRC_DECO = 0x4
SRC_JR = 0x6
SRC_JUMP_HALT_COND = 0x7

SOURCES = {
    SRC_NONE: "none",
    SRC_CCB: "CCB",
    SRC_JUMP_HALT_USER: "jump halt (user)",
    SRC_DECO: "DECO",
    SRC_JR: "job ring",
    SRC_JUMP_HALT_COND: "jump halt (condition)",
}

# CCB: CHA id, bits 7:4.
CHA_AES = 0x1
CHA_DES = 0x2
CHA_MD = 0x4
CHA_RNG = 0x5
CHA_PK = 0x8

CHAS = {CHA_AES: "AES", CHA_DES: "DES", CHA_MD: "MD", CHA_RNG: "RNG", CHA_PK: "PK"}

# CCB: error id, bits 3:0.
ERR_MODE = 0x1
ERR_DATASIZ = 0x2
ERR_KEYSIZ = 0x3
ERR_PKAMEMSZ = 0x4
ERR_PKBMEMSZ = 0x5
ERR_SEQUENCE = 0x6
ERR_PKDIVZRO = 0x7
ERR_PKMODEVN = 0x8
ERR_ICVCHK = 0xA
ERR_HARDWARE = 0xB
ERR_CLASS1_NOT_RESET = 0xD
ERR_INVCHA = 0xF
# The RNG's own error ids (CHA id 5), named as in Linux's error.c (rng_err_id_list).
ERR_RNG_INSTANTIATE = 0x3  # instantiating a handle that is already instantiated (0x53)
ERR_RNG_NOT_INSTANTIATED = 0x4  # generate, reseed or secure keys on a bare handle (0x54)
ERR_RNG_TEST_INSTANTIATE = 0x5
ERR_RNG_PREDICTION_RESISTANCE = 0x6  # PR asked of a handle instantiated without it (0x56)
ERR_RNG_PR_AND_TEST = 0x7
ERR_RNG_UNINSTANTIATE = 0x8  # uninstantiating a handle that is not instantiated (0x58)
ERR_RNG_SECURE_KEYS = 0x9  # secure key generation when the keys are already valid (0x59)
ERR_RNG_HARDWARE = 0xB
ERR_RNG_CONTINUOUS_CHECK = 0xC

RNG_ERRORS = {
    ERR_RNG_INSTANTIATE: "instantiate error (state handle already instantiated)",
    ERR_RNG_NOT_INSTANTIATED: "RNG not instantiated",
    ERR_RNG_TEST_INSTANTIATE: "test instantiate error",
    ERR_RNG_PREDICTION_RESISTANCE: "prediction resistance error",
    ERR_RNG_PR_AND_TEST: "prediction resistance and test request error",
    ERR_RNG_UNINSTANTIATE: "uninstantiate error",
    ERR_RNG_SECURE_KEYS: "secure key generation error",
    ERR_RNG_HARDWARE: "hardware error",
    ERR_RNG_CONTINUOUS_CHECK: "continuous check error",
}

CCB_ERRORS = {
    ERR_MODE: "invalid mode",
    ERR_DATASIZ: "data size error",
    ERR_KEYSIZ: "key size error",
    ERR_PKAMEMSZ: "PKHA A memory size error",
    ERR_PKBMEMSZ: "PKHA B memory size error",
    ERR_SEQUENCE: "data arrived out of sequence",
    ERR_PKDIVZRO: "PKHA divide by zero",
    ERR_PKMODEVN: "PKHA modulus even",
    ERR_ICVCHK: "ICV check failed",
    ERR_HARDWARE: "internal hardware failure",
    ERR_CLASS1_NOT_RESET: "class 1 CHA is not reset",
    ERR_INVCHA: "invalid CHA selected",
}

# DECO error codes (low byte).
DECO_HDRLEN = 0x13
DECO_DMA = 0x16
DECO_JRRESET = 0x1A
DECO_JOBFAIL = 0x1B
DECO_WATCHDOG = 0x1C  # the DECO stalled (a loop, a store that never fills): watchdog timeout
DECO_KEYS_NOT_LOADED = 0x24  # JDKEK, TDKEK or TDSK not loaded: blob or black key before SK
DECO_UNDEFPCL = 0x81
DECO_PDBERR = 0x82
DECO_INVSIGN = 0x86
DECO_DSASIGN = 0x87
DECO_PROTOCOL_SIZE = 0x89
# BLOB protocol errors (error.c: "Blob Command error: ...").
DECO_BLOB_UNDEFINED_MODE = 0xC1
DECO_BLOB_SECMEM = 0xC2
DECO_BLOB_BLACK_SIZE = 0xC4
DECO_BLOB_KEY_DESTINATION = 0xC5
DECO_BLOB_TRUSTED = 0xC8

DECO_ERRORS = {
    DECO_HDRLEN: "descriptor header length error",
    DECO_DMA: "DMA error",
    DECO_JRRESET: "job ring reset released the job",
    DECO_JOBFAIL: "job failed",
    DECO_WATCHDOG: "watchdog timer timeout (the descriptor stalled)",
    DECO_KEYS_NOT_LOADED: "JDKEK, TDKEK or TDSK not loaded",
    DECO_UNDEFPCL: "undefined protocol command",
    DECO_PDBERR: "invalid setting in the protocol data block",
    DECO_INVSIGN: "ECDSA signature not valid",
    DECO_DSASIGN: "DSA sign error",
    DECO_PROTOCOL_SIZE: "protocol size error",
    DECO_BLOB_UNDEFINED_MODE: "blob command error: undefined mode",
    DECO_BLOB_SECMEM: "blob command error: secure memory blob mode error",
    DECO_BLOB_BLACK_SIZE: "blob command error: black blob key or input size error",
    DECO_BLOB_KEY_DESTINATION: "blob command error: invalid key destination",
    DECO_BLOB_TRUSTED: "blob command error: trusted/secure mode error",
}

# Job ring errors (low byte), for jobs the ring could not even start.
JR_BAD_DESC_ADDR = 0x03  # input ring entry points outside memory

JR_ERRORS = {JR_BAD_DESC_ADDR: "descriptor address not readable"}

OK = 0


def ccb(cha: int, error: int, index: int = 0) -> int:
    """A CCB status: which CHA reported which error, at which descriptor word."""
    return (SRC_CCB << 28) | ((index & 0xFF) << 8) | ((cha & 0xF) << 4) | (error & 0xF)


def deco(code: int, index: int = 0) -> int:
    """A DECO status with its error code, at which descriptor word."""
    return (SRC_DECO << 28) | ((index & 0xFF) << 8) | (code & 0xFF)


def job_ring(code: int) -> int:
    """A job ring status: the ring refused the job before a DECO ran it."""
    return (SRC_JR << 28) | (code & 0xFF)


@dataclass(frozen=True)
class Status:
    """A status word split into its fields, with a sentence for people."""

    word: int

    @property
    def source(self) -> int:
        return self.word >> 28

    @property
    def index(self) -> int:
        return (self.word >> 8) & 0xFF

    @property
    def code(self) -> int:
        return self.word & 0xFF

    @property
    def ok(self) -> bool:
        return self.word == OK

    def describe(self) -> str:
        """What the status says, e.g. ``CCB: AES: ICV check failed (word 9)``."""
        if self.word == OK:
            return "ok"
        source = SOURCES.get(self.source, f"source {self.source:#x}")
        if self.source == SRC_CCB:
            cha, err = (self.code >> 4) & 0xF, self.code & 0xF
            cha_name = CHAS.get(cha, f"CHA {cha:#x}")
            if cha == CHA_RNG and err in RNG_ERRORS:
                what = RNG_ERRORS[err]
            else:
                what = CCB_ERRORS.get(err, f"error {err:#x}")
            return f"{source}: {cha_name}: {what} (word {self.index})"
        if self.source == SRC_DECO:
            what = DECO_ERRORS.get(self.code, f"error {self.code:#04x}")
            return f"{source}: {what} (word {self.index})"
        if self.source == SRC_JR:
            return f"{source}: {JR_ERRORS.get(self.code, f'error {self.code:#04x}')}"
        return f"{source}: {self.code:#04x} (word {self.index})"

    def __str__(self) -> str:
        return f"0x{self.word:08x} ({self.describe()})"
