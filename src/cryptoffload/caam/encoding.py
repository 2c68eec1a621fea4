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

# Header.
HDR_DNR = 0x0100_0000
HDR_ONE = 0x0080_0000
HDR_ZRO = 0x8000
HDR_SHARED = 0x1000
HDR_REVERSE = 0x800
HDR_START_SHIFT = 16
HDR_START_MASK = 0x3F
HDR_LENGTH_MASK = 0x7F
HDR_KNOWN = (
    OPCODE_MASK
    | HDR_DNR
    | HDR_ONE
    | HDR_ZRO
    | HDR_SHARED
    | HDR_REVERSE
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
LDST_IMM = 0x0080_0000
LDST_REG_SHIFT = 16
LDST_REG_MASK = 0x7F
LDST_OFFSET_SHIFT = 8
LDST_OFFSET_MASK = 0xFF
LDST_LENGTH_MASK = 0xFF
LDST_KNOWN = (
    OPCODE_MASK
    | CLASS_MASK
    | LDST_IMM
    | (LDST_REG_MASK << LDST_REG_SHIFT)
    | (LDST_OFFSET_MASK << LDST_OFFSET_SHIFT)
    | LDST_LENGTH_MASK
)
#: Register codes by class (0 CCB, 1 class 1, 2 class 2, 3 DECO): the same code names
#: different registers in different classes, so a code is only named for the classes listed.
LDST_REGS: dict[int, dict[int, str]] = {
    0: {0x08: "clear-written", 0x10: "pkha-a-size", 0x11: "pkha-b-size", 0x12: "pkha-n-size",
        0x13: "pkha-e-size"},
    1: {0x20: "context", 0x40: "key", 0x10: "pkha-a-size", 0x11: "pkha-b-size",
        0x12: "pkha-n-size", 0x13: "pkha-e-size"},
    2: {0x20: "context", 0x40: "key"},
    3: {0x08: "math0", 0x09: "math1", 0x0A: "math2", 0x0B: "math3", 0x40: "descbuf"},
}  # fmt: skip

# FIFO LOAD (and SEQ_).
FIFOLD_SGF = 0x0100_0000
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
FIFOST_SGF = 0x0100_0000
FIFOST_CONT = 0x0080_0000
FIFOST_EXT = 0x0040_0000
FIFOST_TYPE_SHIFT = 16
FIFOST_TYPE_MASK = 0x3F
FIFOST_LENGTH_MASK = 0xFFFF
FIFOST_TYPES = {
    0x00: "PKHA_A0", 0x01: "PKHA_A1", 0x02: "PKHA_A2", 0x03: "PKHA_A3",
    0x04: "PKHA_B0", 0x05: "PKHA_B1", 0x06: "PKHA_B2", 0x07: "PKHA_B3",
    0x08: "PKHA_N", 0x0C: "PKHA_A", 0x0D: "PKHA_B", 0x26: "SPLIT_KEK",
    0x30: "MESSAGE_DATA", 0x34: "RNGSTORE", 0x35: "RNGFIFO", 0x3E: "METADATA", 0x3F: "SKIP",
}  # fmt: skip
FIFOST_KNOWN = FIFOLD_KNOWN  # same layout: SGF, CONT (bit 23), EXT, type, length

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
OP_ICV = 0x2
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
PKPROT_FLAGS = {"F2M": 0x1, "ECC": 0x2, "DECRYPT": 0x4, "TEST": 0x8, "HASHED": 0x800}
PKPROT_ECC = 0x2
PKPROT_HASHED = 0x800
#: RSA decrypt: the private key form in protinfo bits 1:0 (form 1 = 0, 2 = 1, 3 = 2).
RSA_FORM_MASK = 0x3
RSA_FORMS = {0: 1, 1: 2, 2: 3}

# JUMP.
JUMP_JSL = 0x0100_0000
JUMP_TYPE_SHIFT = 22
JUMP_TYPE_MASK = 0x3
JUMP_TYPES = {0: "local", 1: "nonlocal", 2: "halt", 3: "halt-user"}
JUMP_TEST_SHIFT = 16
JUMP_TEST_MASK = 0x3
JUMP_TESTS = {0: "all", 1: "not-all", 2: "any", 3: "not-any"}
JUMP_COND_SHIFT = 8
JUMP_COND_MASK = 0xFF
JUMP_OFFSET_MASK = 0xFF
#: Condition bits: without JSL they test PKHA and math results, with JSL the sharing state.
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
    "EXT": 0x0040_0000, "RTO": 0x0020_0000, "RJD": 0x0010_0000,
}  # fmt: skip
SEQ_OUT_FLAGS = {"SGF": 0x0100_0000, "PRE": 0x0080_0000, "EXT": 0x0040_0000, "RTO": 0x0020_0000}
SEQ_EXT = 0x0040_0000
SEQ_NO_POINTER = 0x0080_0000 | 0x0020_0000  # PRE or RTO: no pointer follows
SEQ_LENGTH_MASK = 0xFFFF


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
