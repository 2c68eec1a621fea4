"""Decode OPERATION words (algorithms, PKHA, protocols) and name protocol data block fields."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cryptoffload.caam.desc import encoding as E

__all__ = ["aai_name", "decode_operation", "parse_pdb"]


def parse_pdb(
    words: Sequence[int], layout: E.PdbLayout, pointer_words: int
) -> dict[str, int] | None:
    """Named PDB fields when ``words`` have exactly ``layout``'s shape, else None (no guessing)."""
    if len(words) != layout.length(pointer_words):
        return None
    head = _bitfields(words[0], layout.head)
    if head is None:
        return None
    fields = dict(head)
    pos = 1
    for name in layout.pointers:
        value = 0
        for w in words[pos : pos + pointer_words]:
            value = (value << 32) | w
        fields[name] = value
        pos += pointer_words
    if layout.tail:
        tail = _bitfields(words[pos], layout.tail)
        if tail is None:
            return None
        fields.update(tail)
    return fields


def _bitfields(word: int, spec: tuple[tuple[str, int, int], ...]) -> dict[str, int] | None:
    known = 0
    out = {}
    for name, shift, width in spec:
        mask = ((1 << width) - 1) << shift
        known |= mask
        out[name] = (word & mask) >> shift
    return None if word & ~known else out


def decode_operation(word: int) -> dict[str, Any]:
    """The named fields of one OPERATION word.

    Bit 1 is the ICV check of a decrypt, except for the RNG, where it asks for prediction
    resistance: the field is then named ``pr``.
    """
    optype = E.OP_TYPES.get((word >> E.OP_TYPE_SHIFT) & E.OP_TYPE_MASK, "unknown")
    fields: dict[str, Any] = {"optype": optype}
    if optype in ("class1", "class2"):
        alg = (word >> E.OP_ALG_SHIFT) & E.OP_ALG_MASK
        aai = (word >> E.OP_AAI_SHIFT) & E.OP_AAI_MASK
        state = (word >> E.OP_STATE_SHIFT) & E.OP_STATE_MASK
        fields.update(
            alg=alg,
            alg_name=E.ALGORITHMS.get(alg, "unknown"),
            aai=aai,
            aai_name=aai_name(alg, aai),
            state=state,
            state_name=E.STATES[state],
        )
        fields["pr" if alg == E.ALG_RNG else "icv"] = bool(word & E.OP_ICV)
        fields["encrypt"] = bool(word & E.OP_ENCRYPT)
        return _with_unknown_bits(fields, word & ~E.OP_ALG_KNOWN)
    if optype == "pk":
        function = word & E.PK_FUNCTION_MASK
        flags = tuple(n for n, bit in E.PK_FLAGS.items() if word & bit)
        known = E.OPCODE_MASK | (E.OP_TYPE_MASK << E.OP_TYPE_SHIFT) | E.OP_PK | E.PK_FUNCTION_MASK
        known |= sum(E.PK_FLAGS.values())
        fields.update(
            function=function,
            function_name=E.PK_FUNCTIONS.get(function, "unknown") if word & E.OP_PK else "unknown",
            flags=flags,
        )
        if not word & E.OP_PK:
            fields["reason"] = "PKHA function bit 23 clear"
        return _with_unknown_bits(fields, word & ~known)
    if optype == "unknown":
        fields["reason"] = f"unknown OPERATION type {(word >> E.OP_TYPE_SHIFT) & 7}"
        return fields
    protid = (word >> E.OP_PROTID_SHIFT) & E.OP_PROTID_MASK
    protinfo = word & E.OP_PROTINFO_MASK
    fields.update(protid=protid, prot_name=E.PROTOCOLS.get(protid, "unknown"), protinfo=protinfo)
    if optype == "protocol" and protid == E.PROT_RSADEC_PRVKEY:
        fields["form"] = E.RSA_FORMS.get(protinfo & E.RSA_FORM_MASK)
    elif optype == "protocol" and protid in (
        E.PROT_PUBLICKEYPAIR,
        E.PROT_DSASIGN,
        E.PROT_DSAVERIFY,
        E.PROT_DH,
    ):
        fields["flags"] = tuple(n for n, bit in E.PKPROT_FLAGS.items() if protinfo & bit)
        _with_unknown_bits(fields, protinfo & ~sum(E.PKPROT_FLAGS.values()))
    elif optype in ("encap", "decap") and protid == E.PROT_BLOB:
        fields["format"] = E.BLOB_FORMATS.get(protinfo & E.BLOB_FORMAT_MASK, "unknown")
        fields["flags"] = tuple(n for n, bit in E.BLOB_FLAGS.items() if protinfo & bit)
        known = E.BLOB_FORMAT_MASK | sum(E.BLOB_FLAGS.values())
        _with_unknown_bits(fields, protinfo & ~known)
    return fields


def aai_name(alg: int, aai: int) -> str:
    """The mode (block ciphers), hash mode, or RNG bits an AAI value names; "unknown" if none.

    AES modes with the DK bit read ``CBC|DK``.
    """
    if alg == E.ALG_RNG:
        parts = [E.RNG_HANDLES.get(aai & E.RNG_SH_MASK, f"SH{aai & E.RNG_SH_MASK}?")]
        rest = aai & ~E.RNG_SH_MASK
        for name, bit in E.RNG_AAI_BITS.items():
            if rest & bit:
                parts.append(name)
                rest &= ~bit
        if rest:
            parts.append(f"unknown(0x{rest:x})")
        return "|".join(parts)
    table = E.aai_table(alg)
    if not table:
        return "unknown"
    if alg == E.ALG_AES and aai & E.AAI_DK:
        return table.get(aai & ~E.AAI_DK, "unknown") + "|DK"
    return table.get(aai, "unknown")


def _with_unknown_bits(fields: dict[str, Any], bits: int) -> dict[str, Any]:
    if bits:
        fields["unknown_bits"] = bits
    return fields
