"""CAAM descriptor encoding: opcodes, field masks and name tables (builder, decoder, model)."""

from __future__ import annotations

from dataclasses import dataclass

WORD_MASK = 0xFFFF_FFFF
MAX_DESCRIPTOR_WORDS = 64

# Command opcodes, bits 31:27.
OPCODE_MASK = 0xF800_0000
CMD_KEY = 0x0000_0000
CMD_SEQ_KEY = 0x0800_0000
CMD_LOAD = 0x1000_0000
CMD_SEQ_LOAD = 0x1800_0000
CMD_FIFO_LOAD = 0x2000_0000
CMD_SEQ_FIFO_LOAD = 0x2800_0000
CMD_STORE = 0x5000_0000
CMD_SEQ_STORE = 0x5800_0000
CMD_FIFO_STORE = 0x6000_0000
CMD_SEQ_FIFO_STORE = 0x6800_0000
CMD_MOVE_LEN = 0x7000_0000
CMD_MOVE = 0x7800_0000
CMD_OPERATION = 0x8000_0000
CMD_SIGNATURE = 0x9000_0000
CMD_JUMP = 0xA000_0000
CMD_MATH = 0xA800_0000
CMD_DESC_HDR = 0xB000_0000
CMD_SHARED_HDR = 0xB800_0000
CMD_SEQ_IN_PTR = 0xF000_0000
CMD_SEQ_OUT_PTR = 0xF800_0000

COMMANDS = {
    CMD_KEY: "KEY",
    CMD_SEQ_KEY: "SEQ_KEY",
    CMD_LOAD: "LOAD",
    CMD_SEQ_LOAD: "SEQ_LOAD",
    CMD_FIFO_LOAD: "FIFO_LOAD",
    CMD_SEQ_FIFO_LOAD: "SEQ_FIFO_LOAD",
    CMD_STORE: "STORE",
    CMD_SEQ_STORE: "SEQ_STORE",
    CMD_FIFO_STORE: "FIFO_STORE",
    CMD_SEQ_FIFO_STORE: "SEQ_FIFO_STORE",
    CMD_MOVE_LEN: "MOVE_LEN",
    CMD_MOVE: "MOVE",
    CMD_OPERATION: "OPERATION",
    CMD_SIGNATURE: "SIGNATURE",
    CMD_JUMP: "JUMP",
    CMD_MATH: "MATH",
    CMD_DESC_HDR: "HEADER",
    CMD_SHARED_HDR: "SHARED_HEADER",
    CMD_SEQ_IN_PTR: "SEQ_IN_PTR",
    CMD_SEQ_OUT_PTR: "SEQ_OUT_PTR",
}

# Class field, bits 26:25 (KEY, LOAD, STORE, FIFO LOAD/STORE, JUMP).
CLASS_SHIFT = 25
CLASS_MASK = 0x3 << CLASS_SHIFT
CLASS_1 = 0x0200_0000
CLASS_2 = 0x0400_0000
CLASS_BOTH = 0x0600_0000

# Header (job: HEADER, shared: SHARED_HEADER).
HDR_DNR = 0x0100_0000
HDR_ONE = 0x0080_0000
HDR_ZRO = 0x8000
HDR_SHARED = 0x1000  # job header: a pointer to a shared descriptor follows
HDR_REVERSE = 0x800  # job header: run the job's commands before the shared descriptor's
HDR_START_SHIFT = 16
HDR_START_MASK = 0x3F  # start index; with HDR_SHARED, the shared descriptor's length
HDR_LENGTH_MASK = 0x7F
HDR_SHARE_SHIFT = 8
HDR_JOB_SHARE_MASK = 0x7
HDR_SHR_SHARE_MASK = 0x3
#: Share types: the job header's 3-bit field adds DEFER (use the shared header's type).
SHARE_TYPES = {0: "never", 1: "wait", 2: "serial", 3: "always", 4: "defer"}
# Job header only.
HDR_RSLS = 0x0200_0000  # require the same SEQ LIODN (DPDK)
HDR_TRUSTED = 0x4000
HDR_MAKE_TRUSTED = 0x2000
JOB_HDR_FLAGS = {
    "rsls": HDR_RSLS, "dnr": HDR_DNR, "one": HDR_ONE, "zro": HDR_ZRO, "trusted": HDR_TRUSTED,
    "make_trusted": HDR_MAKE_TRUSTED, "shared": HDR_SHARED, "reverse": HDR_REVERSE,
}  # fmt: skip
# Shared header only (SHR HDR): the same bits as the job header's SHARED and REVERSE mean other
# things here.
SHR_RIF = 0x0200_0000  # read the input frame early (DPDK)
SHR_CLEAR_IFIFO = 0x2000  # (DPDK)
SHR_SAVECTX = 0x1000  # keep the contexts when the descriptor is shared with itself
SHR_PROP_DNR = 0x800
SHR_HDR_FLAGS = {
    "rif": SHR_RIF, "dnr": HDR_DNR, "one": HDR_ONE, "zro": HDR_ZRO,
    "clear_ififo": SHR_CLEAR_IFIFO, "savectx": SHR_SAVECTX, "prop_dnr": SHR_PROP_DNR,
}  # fmt: skip
HDR_KNOWN = (
    OPCODE_MASK
    | sum(JOB_HDR_FLAGS.values())
    | (HDR_JOB_SHARE_MASK << HDR_SHARE_SHIFT)
    | (HDR_START_MASK << HDR_START_SHIFT)
    | HDR_LENGTH_MASK
)
SHR_HDR_KNOWN = (
    OPCODE_MASK
    | sum(SHR_HDR_FLAGS.values())
    | (HDR_SHR_SHARE_MASK << HDR_SHARE_SHIFT)
    | (HDR_START_MASK << HDR_START_SHIFT)
    | HDR_LENGTH_MASK
)

# KEY / SEQ_KEY.
KEY_SGF = 0x0100_0000
KEY_IMM = 0x0080_0000
KEY_ENC = 0x0040_0000
KEY_NWB = 0x0020_0000
KEY_EKT = 0x0010_0000
KEY_TK = 0x8000
KEY_DEST_SHIFT = 16
KEY_DEST_MASK = 0x3
KEY_LENGTH_MASK = 0x3FF
KEY_DESTS = {0: "class-key", 1: "pkha-e", 2: "afha-sbox", 3: "mdha-split"}
KEY_FLAGS = {"sgf": KEY_SGF, "imm": KEY_IMM, "enc": KEY_ENC, "nwb": KEY_NWB, "ekt": KEY_EKT}
KEY_KNOWN = (
    OPCODE_MASK
    | CLASS_MASK
    | KEY_SGF
    | KEY_IMM
    | KEY_ENC
    | KEY_NWB
    | KEY_EKT
    | KEY_TK
    | (KEY_DEST_MASK << KEY_DEST_SHIFT)
    | KEY_LENGTH_MASK
)

# LOAD / STORE (and SEQ_ forms).
LDST_SGF = 0x0100_0000  # LOAD/STORE: the pointer is an S/G table; SEQ forms: VLF
LDST_VLF = LDST_SGF
LDST_IMM = 0x0080_0000
LDST_REG_SHIFT = 16
LDST_REG_MASK = 0x7F
LDST_OFFSET_SHIFT = 8
LDST_OFFSET_MASK = 0xFF
LDST_LENGTH_MASK = 0xFF
LDST_KNOWN = (
    OPCODE_MASK
    | CLASS_MASK
    | LDST_SGF
    | LDST_IMM
    | (LDST_REG_MASK << LDST_REG_SHIFT)
    | (LDST_OFFSET_MASK << LDST_OFFSET_SHIFT)
    | LDST_LENGTH_MASK
)
#: Register codes by class (0 CCB, 1 class 1, 2 class 2, 3 DECO): the same code names
#: different registers in different classes, so a code is only named for the classes listed.
_CLASS_WORD_REGS = {
    0x00: "mode", 0x01: "key-size", 0x02: "data-size", 0x03: "icv-size", 0x0C: "iv-size",
    0x0F: "alt-data-size",
}  # fmt: skip
LDST_REGS: dict[int, dict[int, str]] = {
    0: {0x06: "cha-control", 0x07: "irq-control", 0x08: "clear-written", 0x09: "status",
        0x10: "pkha-a-size", 0x11: "pkha-b-size", 0x12: "pkha-n-size", 0x13: "pkha-e-size",
        0x71: "info-fifo-sm", 0x7A: "info-fifo", 0x7C: "input-fifo", 0x7E: "output-fifo"},
    1: {**_CLASS_WORD_REGS, 0x20: "context", 0x40: "key", 0x10: "pkha-a-size",
        0x11: "pkha-b-size", 0x12: "pkha-n-size", 0x13: "pkha-e-size"},
    2: {**_CLASS_WORD_REGS, 0x20: "context", 0x40: "key"},
    3: {0x06: "decoctrl", 0x07: "dpovrd", 0x08: "math0", 0x09: "math1", 0x0A: "math2",
        0x0B: "math3", 0x40: "descbuf", 0x41: "descbuf-job", 0x42: "descbuf-shared",
        0x45: "descbuf-job-we", 0x46: "descbuf-shared-we"},
}  # fmt: skip
#: STORE from these register codes writes the descriptor buffer back where it came from: no
#: pointer word follows (Linux desc_constr.h append_store).
STORE_NO_POINTER_REGS = frozenset({0x41, 0x42, 0x45, 0x46})
LDST_MATH0 = 0x08
MATH_REGISTER_BYTES = 8
#: LOAD of DECOCTRL (class 3, code 0x06, IMM, length 0): controls in the offset byte.
DECOCTRL_REG = 0x06
DECOCTRL_SHARE_MASK = 0x3
DECOCTRL_SHARE = {1: "never", 2: "ok-propagate", 3: "ok-no-propagate"}
DECOCTRL_FLAGS = {"enable-auto-info-fifo": 0x4, "disable-auto-info-fifo": 0x8}
DECOCTRL_NONSEQ_LIODN_SHIFT = 4
DECOCTRL_SEQ_LIODN_SHIFT = 6

# FIFO LOAD (and SEQ_).
FIFOLD_SGF = 0x0100_0000  # FIFO LOAD: the pointer is an S/G table
FIFOLD_VLF = FIFOLD_SGF  # SEQ FIFO LOAD: the length is VSIL
FIFOLD_IMM = 0x0080_0000
FIFOLD_EXT = 0x0040_0000
FIFOLD_TYPE_SHIFT = 16
FIFOLD_TYPE_MASK = 0x3F
FIFOLD_LENGTH_MASK = 0xFFFF
FIFOLD_FLUSH1 = 0x1
FIFOLD_LAST1 = 0x2
FIFOLD_LAST2 = 0x4
FIFOLD_ACTION_MASK = 0x7
FIFOLD_PK_TYPES = {
    0x00: "PK_A0", 0x01: "PK_A1", 0x02: "PK_A2", 0x03: "PK_A3",
    0x04: "PK_B0", 0x05: "PK_B1", 0x06: "PK_B2", 0x07: "PK_B3",
    0x08: "PK_N", 0x0C: "PK_A", 0x0D: "PK_B",
}  # fmt: skip
#: Type 0x0F: no info-FIFO entry (DPDK's descriptors load data a later command routes).
FIFOLD_OTHER_TYPES = {0x0F: "NOINFOFIFO"}
#: Data types (0x10 and up): the low 3 bits are the action (FLUSH1, LAST1, LAST2).
FIFOLD_DATA_TYPES = {
    0x10: "MSG", 0x18: "MSG1OUT2", 0x20: "IV", 0x28: "BITDATA", 0x30: "AAD", 0x38: "ICV",
}  # fmt: skip
FIFOLD_KNOWN = (
    OPCODE_MASK
    | CLASS_MASK
    | FIFOLD_SGF
    | FIFOLD_IMM
    | FIFOLD_EXT
    | (FIFOLD_TYPE_MASK << FIFOLD_TYPE_SHIFT)
    | FIFOLD_LENGTH_MASK
)

# FIFO STORE (and SEQ_).
FIFOST_SGF = 0x0100_0000  # FIFO STORE: S/G table; SEQ FIFO STORE: VLF (the length is VSOL)
FIFOST_VLF = FIFOST_SGF
FIFOST_CONT = 0x0080_0000
FIFOST_EXT = 0x0040_0000
FIFOST_TYPE_SHIFT = 16
FIFOST_TYPE_MASK = 0x3F
FIFOST_LENGTH_MASK = 0xFFFF
FIFOST_SKIP = 0x3F
FIFOST_TYPES = {
    0x00: "PKHA_A0", 0x01: "PKHA_A1", 0x02: "PKHA_A2", 0x03: "PKHA_A3",
    0x04: "PKHA_B0", 0x05: "PKHA_B1", 0x06: "PKHA_B2", 0x07: "PKHA_B3",
    0x08: "PKHA_N", 0x0C: "PKHA_A", 0x0D: "PKHA_B", 0x14: "KEY_CCM_JKEK",
    0x20: "AF_SBOX_JKEK", 0x21: "AF_SBOX_TKEK", 0x22: "PKHA_E_JKEK", 0x23: "PKHA_E_TKEK",
    0x24: "KEY_KEK", 0x25: "KEY_TKEK", 0x26: "SPLIT_KEK", 0x27: "SPLIT_TKEK",
    0x28: "OUTFIFO_KEK", 0x29: "OUTFIFO_TKEK",
    0x30: "MESSAGE_DATA", 0x34: "RNGSTORE", 0x35: "RNGFIFO", 0x3E: "METADATA", 0x3F: "SKIP",
}  # fmt: skip
FIFOST_KNOWN = FIFOLD_KNOWN  # same layout: SGF/VLF, CONT (bit 23), EXT, type, length

# OPERATION.
OP_TYPE_SHIFT = 24
OP_TYPE_MASK = 0x7
OP_TYPES = {0: "protocol", 1: "pk", 2: "class1", 4: "class2", 6: "decap", 7: "encap"}
OP_ALG_SHIFT = 16
OP_ALG_MASK = 0xFF
OP_AAI_SHIFT = 4
OP_AAI_MASK = 0x1FF
OP_STATE_SHIFT = 2
OP_STATE_MASK = 0x3
OP_ICV = 0x2  # check the ICV on decrypt; for the RNG: prediction resistance (OP_PR)
OP_PR = OP_ICV
OP_ENCRYPT = 0x1
OP_ALG_KNOWN = (
    OPCODE_MASK
    | (OP_TYPE_MASK << OP_TYPE_SHIFT)
    | (OP_ALG_MASK << OP_ALG_SHIFT)
    | (OP_AAI_MASK << OP_AAI_SHIFT)
    | (OP_STATE_MASK << OP_STATE_SHIFT)
    | OP_ICV
    | OP_ENCRYPT
)
ALG_AES = 0x10
ALG_DES = 0x20
ALG_3DES = 0x21
ALG_MD5 = 0x40
ALG_SHA1 = 0x41
ALG_SHA224 = 0x42
ALG_SHA256 = 0x43
ALG_SHA384 = 0x44
ALG_SHA512 = 0x45
ALG_RNG = 0x50
ALGORITHMS = {
    ALG_AES: "AES", ALG_DES: "DES", ALG_3DES: "3DES", ALG_MD5: "MD5", ALG_SHA1: "SHA1",
    ALG_SHA224: "SHA224", ALG_SHA256: "SHA256", ALG_SHA384: "SHA384", ALG_SHA512: "SHA512",
    ALG_RNG: "RNG",
}  # fmt: skip
HASH_ALGORITHMS = frozenset({ALG_MD5, ALG_SHA1, ALG_SHA224, ALG_SHA256, ALG_SHA384, ALG_SHA512})
AES_MODES = {
    0x00: "CTR", 0x10: "CBC", 0x20: "ECB", 0x30: "CFB", 0x40: "OFB", 0x50: "XTS",
    0x60: "CMAC", 0x80: "CCM", 0x90: "GCM",
}  # fmt: skip
DES_MODES = {0x10: "CBC", 0x20: "ECB", 0x30: "CFB", 0x40: "OFB"}
#: AES AAI bit 0x100 (DK): the key register already holds the decryption key schedule.
AAI_DK = 0x100
HASH_MODES = {0x00: "HASH", 0x01: "HMAC", 0x02: "SMAC", 0x04: "HMAC_PRECOMP"}
#: RNG4 AAI bits; the state handle is bits 1:0 (SH0 = 0, SH1 = 1).
RNG_SH_MASK = 0x3
RNG_HANDLES = {0: "SH0", 1: "SH1"}
RNG_AAI_BITS = {"PS": 0x40, "AI": 0x80, "SK": 0x100}
STATES = {0: "update", 1: "init", 2: "finalize", 3: "initfinal"}


def aai_table(alg: int) -> dict[int, str] | None:
    """The AAI names of a block cipher or hash algorithm; None for RNG and unknown algorithms."""
    if alg == ALG_AES:
        return AES_MODES
    if alg in (ALG_DES, ALG_3DES):
        return DES_MODES
    if alg in HASH_ALGORITHMS:
        return HASH_MODES
    return None


# PKHA functions (OPERATION type PK).
OP_PK = 0x0080_0000
PK_FUNCTION_MASK = 0x3F
PK_FUNCTIONS = {
    0x1: "CLEARMEM", 0x2: "MOD_ADD", 0x3: "MOD_SUB_AB", 0x4: "MOD_SUB_BA", 0x5: "MOD_MULT",
    0x6: "MOD_EXPO", 0x7: "MOD_REDUCT", 0x8: "MOD_INV", 0x9: "ECC_ADD", 0xA: "ECC_DBL",
    0xB: "ECC_MULT", 0xC: "MONT_CNST", 0xD: "CRT_CNST", 0xE: "GCD", 0xF: "PRIMALITY",
}  # fmt: skip
PK_MOD_EXPO = 0x6
PK_FLAGS = {
    "IN_MONTY": 0x80000, "OUT_MONTY": 0x40000, "F2M": 0x20000, "R2_IN": 0x10000,
    "TIME_EQ": 0x400, "OUT_A": 0x100,
}  # fmt: skip

# Protocols (OPERATION types protocol, decap, encap): id bits 23:16, info bits 15:0.
OP_PROTID_SHIFT = 16
OP_PROTID_MASK = 0xFF
OP_PROTINFO_MASK = 0xFFFF
PROT_PUBLICKEYPAIR = 0x14
PROT_DSASIGN = 0x15
PROT_DSAVERIFY = 0x16
PROT_DH = 0x17
PROT_RSAENC_PUBKEY = 0x18
PROT_RSADEC_PRVKEY = 0x19
PROT_BLOB = 0x0D
PROTOCOLS = {
    PROT_PUBLICKEYPAIR: "PUBLICKEYPAIR", PROT_DSASIGN: "DSASIGN", PROT_DSAVERIFY: "DSAVERIFY",
    PROT_DH: "DH", PROT_RSAENC_PUBKEY: "RSAENC_PUBKEY", PROT_RSADEC_PRVKEY: "RSADEC_PRVKEY",
    PROT_BLOB: "BLOB",
}  # fmt: skip
#: protinfo flags of the DSA/ECDSA, DH and key pair protocols.
#: protinfo of the BLOB protocol (Linux's posted protected-key series, vendor headers): bits 1:0
#: the format, then the flags.
BLOB_FORMAT_MASK = 0x3
BLOB_FORMATS = {0: "normal", 2: "master-key-verification", 3: "test"}
BLOB_FLAGS = {"BLACK": 0x4, "PTXT_SECMEM": 0x8, "EKT": 0x100, "TK": 0x200}
PKPROT_FLAGS = {"F2M": 0x1, "ECC": 0x2, "DECRYPT": 0x4, "TEST": 0x8, "HASHED": 0x800}
PKPROT_ECC = 0x2
PKPROT_HASHED = 0x800
#: RSA decrypt: the private key form in protinfo bits 1:0 (form 1 = 0, 2 = 1, 3 = 2).
RSA_FORM_MASK = 0x3
RSA_FORMS = {0: 1, 1: 2, 2: 3}

# JUMP.
JUMP_JSL = 0x0100_0000
#: Type, bits 23:20 (the kernel's 2-bit view is bits 23:22: local, nonlocal, halt, halt-user;
#: the other codes are later eras' additions, named as DPDK names them).
JUMP_TYPE_SHIFT = 20
JUMP_TYPE_MASK = 0xF
JUMP_LOCAL = 0x0
JUMP_NONLOCAL = 0x4
JUMP_HALT = 0x8
JUMP_HALT_USER = 0xC
JUMP_TYPES = {
    0x0: "local", 0x1: "local-inc", 0x2: "gosub", 0x3: "local-dec", 0x4: "nonlocal",
    0x6: "return", 0x8: "halt", 0xC: "halt-user",
}  # fmt: skip
#: LOCAL_INC / LOCAL_DEC: the register they step, bits 15:12.
JUMP_STEP_TYPES = frozenset({0x1, 0x3})
JUMP_STEP_SHIFT = 12
JUMP_STEP_REGS = {
    0x0: "MATH0", 0x1: "MATH1", 0x2: "MATH2", 0x3: "MATH3", 0x7: "DPOVRD", 0x8: "SEQINLEN",
    0x9: "SEQOUTLEN", 0xA: "VARSEQINLEN", 0xB: "VARSEQOUTLEN",
}  # fmt: skip
JUMP_TEST_SHIFT = 16
JUMP_TEST_MASK = 0x3
JUMP_TESTS = {0: "all", 1: "invall", 2: "any", 3: "invany"}
#: Older names the builder still takes for tests 1 and 3.
JUMP_TEST_ALIASES = {"not-all": 1, "not-any": 3}
JUMP_COND_SHIFT = 8
JUMP_COND_MASK = 0xFF
JUMP_OFFSET_MASK = 0xFF
#: Condition bits: without JSL they test PKHA and math results, with JSL the DECO's state.
JUMP_CONDITIONS = {
    False: {"PK_0": 0x80, "PK_GCD_1": 0x40, "PK_PRIME": 0x20, "MATH_N": 0x08, "MATH_Z": 0x04,
            "MATH_C": 0x02, "MATH_NV": 0x01},
    True: {"JQP": 0x80, "SHRD": 0x40, "SELF": 0x20, "CALM": 0x10, "NIP": 0x08, "NIFP": 0x04,
           "NOP": 0x02, "NCP": 0x01},
}  # fmt: skip
JUMP_KNOWN = (
    OPCODE_MASK
    | CLASS_MASK
    | JUMP_JSL
    | (JUMP_TYPE_MASK << JUMP_TYPE_SHIFT)
    | (JUMP_TEST_MASK << JUMP_TEST_SHIFT)
    | (JUMP_COND_MASK << JUMP_COND_SHIFT)
    | JUMP_OFFSET_MASK
)

# SEQ IN / OUT PTR.
SEQ_IN_FLAGS = {
    "RBS": 0x0400_0000, "INL": 0x0200_0000, "SGF": 0x0100_0000, "PRE": 0x0080_0000,
    "EXT": 0x0040_0000, "RTO": 0x0020_0000, "RJD": 0x0010_0000, "SOP": 0x0008_0000,
}  # fmt: skip
SEQ_OUT_FLAGS = {
    "SGF": 0x0100_0000, "PRE": 0x0080_0000, "EXT": 0x0040_0000, "RTO": 0x0020_0000,
    "RST": 0x0010_0000, "EWS": 0x0008_0000,
}  # fmt: skip
SEQ_SGF = 0x0100_0000
SEQ_EXT = 0x0040_0000
SEQ_NO_POINTER = 0x0080_0000 | 0x0020_0000  # PRE or RTO: no pointer follows
SEQ_LENGTH_MASK = 0xFFFF

# MATH.
MATH_IFB = 0x0400_0000  # an 8-byte operation takes a 4-byte immediate
MATH_NFU = 0x0200_0000  # no flag update
MATH_STL = 0x0100_0000  # stall
MATH_FLAGS = {"ifb": MATH_IFB, "nfu": MATH_NFU, "stl": MATH_STL}
MATH_FUN_SHIFT = 20
MATH_SRC0_SHIFT = 16
MATH_SRC1_SHIFT = 12
MATH_DEST_SHIFT = 8
MATH_FIELD_MASK = 0xF
MATH_LENGTH_MASK = 0xF
MATH_LENGTHS = (1, 2, 4, 8)
MATH_FUNCTIONS = {
    0x0: "ADD", 0x1: "ADDC", 0x2: "SUB", 0x3: "SUBB", 0x4: "OR", 0x5: "AND", 0x6: "XOR",
    0x7: "LSHIFT", 0x8: "RSHIFT", 0x9: "SHLD", 0xA: "ZBYT", 0xB: "BSWAP",
}  # fmt: skip
MATH_IMM = 0x4
MATH_SRC0 = {
    0x0: "MATH0", 0x1: "MATH1", 0x2: "MATH2", 0x3: "MATH3", 0x4: "IMM", 0x7: "DPOVRD",
    0x8: "SEQINLEN", 0x9: "SEQOUTLEN", 0xA: "VARSEQINLEN", 0xB: "VARSEQOUTLEN", 0xC: "ZERO",
    0xF: "ONE",
}  # fmt: skip
MATH_SRC1 = {
    0x0: "MATH0", 0x1: "MATH1", 0x2: "MATH2", 0x3: "MATH3", 0x4: "IMM", 0x7: "DPOVRD",
    0x8: "VARSEQINLEN", 0x9: "VARSEQOUTLEN", 0xA: "INFIFO", 0xB: "OUTFIFO", 0xC: "ONE",
    0xD: "JOBSRC", 0xF: "ZERO",
}  # fmt: skip
MATH_DEST = {
    0x0: "MATH0", 0x1: "MATH1", 0x2: "MATH2", 0x3: "MATH3", 0x7: "DPOVRD", 0x8: "SEQINLEN",
    0x9: "SEQOUTLEN", 0xA: "VARSEQINLEN", 0xB: "VARSEQOUTLEN", 0xF: "NONE",
}  # fmt: skip
MATH_KNOWN = (
    OPCODE_MASK
    | sum(MATH_FLAGS.values())
    | (MATH_FIELD_MASK << MATH_FUN_SHIFT)
    | (MATH_FIELD_MASK << MATH_SRC0_SHIFT)
    | (MATH_FIELD_MASK << MATH_SRC1_SHIFT)
    | (MATH_FIELD_MASK << MATH_DEST_SHIFT)
    | MATH_LENGTH_MASK
)

# MOVE and MOVE_LEN.
MOVE_AUX_SHIFT = 25
MOVE_AUX_MASK = 0x3
MOVE_WAITCOMP = 0x0100_0000
MOVE_SRC_SHIFT = 20
MOVE_DEST_SHIFT = 16
MOVE_FIELD_MASK = 0xF
MOVE_OFFSET_SHIFT = 8
MOVE_OFFSET_MASK = 0xFF
MOVE_LENGTH_MASK = 0xFF
MOVE_LEN_MATH_MASK = 0x3  # MOVE_LEN: bits 1:0 pick the MATH register holding the length
MOVE_SOURCES = {
    0x0: "CLASS1CTX", 0x1: "CLASS2CTX", 0x2: "OUTFIFO", 0x3: "DESCBUF", 0x4: "MATH0",
    0x5: "MATH1", 0x6: "MATH2", 0x7: "MATH3", 0x8: "INFIFO", 0x9: "INFIFO_CL", 0xA: "AUX_ABLK",
}  # fmt: skip
MOVE_DESTS = {
    0x0: "CLASS1CTX", 0x1: "CLASS2CTX", 0x2: "OUTFIFO", 0x3: "DESCBUF", 0x4: "MATH0",
    0x5: "MATH1", 0x6: "MATH2", 0x7: "MATH3", 0x8: "CLASS1INFIFO", 0x9: "CLASS2INFIFO",
    0xA: "INFIFO_NOINFO", 0xC: "PK_A", 0xD: "CLASS1KEY", 0xE: "CLASS2KEY",
}  # fmt: skip
MOVE_KNOWN = (
    OPCODE_MASK
    | (MOVE_AUX_MASK << MOVE_AUX_SHIFT)
    | MOVE_WAITCOMP
    | (MOVE_FIELD_MASK << MOVE_SRC_SHIFT)
    | (MOVE_FIELD_MASK << MOVE_DEST_SHIFT)
    | (MOVE_OFFSET_MASK << MOVE_OFFSET_SHIFT)
    | MOVE_LENGTH_MASK
)
MOVE_LEN_KNOWN = MOVE_KNOWN & ~MOVE_LENGTH_MASK | MOVE_LEN_MATH_MASK


# Protocol data blocks.
@dataclass(frozen=True)
class PdbLayout:
    """One PDB shape: bit fields of word 0, the pointers, and an optional last word."""

    name: str
    head: tuple[tuple[str, int, int], ...]  # (field, shift, width)
    pointers: tuple[str, ...]
    tail: tuple[tuple[str, int, int], ...] = ()

    def length(self, pointer_words: int) -> int:
        """Words of the PDB with pointers of this many words."""
        return 1 + pointer_words * len(self.pointers) + (1 if self.tail else 0)


_RSA_E = (("e_len", 12, 12), ("n_len", 0, 12))
_RSA_D = (("d_len", 12, 12), ("n_len", 0, 12))
_RSA_PQ = (("q_len", 12, 12), ("p_len", 0, 12))
_ECC = (("l_len", 7, 10), ("n_len", 0, 7))

PDB_LAYOUTS = {
    layout.name: layout
    for layout in (
        PdbLayout("rsa-public", _RSA_E, ("f", "g", "n", "e"), (("f_len", 0, 32),)),
        PdbLayout("rsa-private-form1", _RSA_D, ("g", "f", "n", "d")),
        PdbLayout("rsa-private-form2", _RSA_D, ("g", "f", "d", "p", "q", "tmp1", "tmp2"), _RSA_PQ),
        PdbLayout(
            "rsa-private-form3",
            (("n_len", 0, 12),),
            ("g", "f", "c", "p", "q", "dp", "dq", "tmp1", "tmp2"),
            _RSA_PQ,
        ),
        PdbLayout("ecdsa-sign", _ECC, ("q", "r", "g", "s", "f", "c", "d", "ab")),
        PdbLayout("ecdsa-verify", _ECC, ("q", "r", "g", "w", "f", "c", "d", "tmp", "ab")),
        PdbLayout("ecdh", _ECC, ("q", "r", "w", "s", "z", "ab")),
        PdbLayout("ff-dh", _ECC, ("q", "r", "w", "s", "z")),
        PdbLayout("ecc-keypair", _ECC, ("q", "r", "g", "s", "w", "ab")),
    )
}


def pdb_layout_for(protid: int, protinfo: int) -> PdbLayout | None:
    """The PDB layout a protocol OPERATION (type protocol) reads, or None when not known."""
    ecc = bool(protinfo & PKPROT_ECC)
    if protid == PROT_RSAENC_PUBKEY:
        return PDB_LAYOUTS["rsa-public"]
    if protid == PROT_RSADEC_PRVKEY:
        form = RSA_FORMS.get(protinfo & RSA_FORM_MASK)
        return PDB_LAYOUTS[f"rsa-private-form{form}"] if form else None
    if protid == PROT_DH:
        return PDB_LAYOUTS["ecdh" if ecc else "ff-dh"]
    if not ecc:
        return None  # DSA over finite fields: not in the reference brief
    return {
        PROT_DSASIGN: PDB_LAYOUTS["ecdsa-sign"],
        PROT_DSAVERIFY: PDB_LAYOUTS["ecdsa-verify"],
        PROT_PUBLICKEYPAIR: PDB_LAYOUTS["ecc-keypair"],
    }.get(protid)
