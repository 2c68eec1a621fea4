"""Decode CAAM descriptor words into named commands (the model and the disassembler read them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cryptoffload.caam import encoding as E
from cryptoffload.caam.words import Command, check_byteorder, check_word

__all__ = ["Command", "aai_name", "decode", "decode_operation", "parse_pdb"]

PAST_LENGTH = "runs past the descriptor length"
PAST_INPUT = "runs past the end of the words given"


def decode(
    words: Sequence[int], *, long_pointers: bool = False, byteorder: str = "big"
) -> list[Command]:
    """Decode a descriptor (header first) into commands, stopping at the header's length."""
    check_byteorder(byteorder)
    words = tuple(check_word(w, i) for i, w in enumerate(words))
    return _Decoder(words, 2 if long_pointers else 1, byteorder).run()


class _Decoder:
    def __init__(self, words: tuple[int, ...], pointer_words: int, byteorder: str) -> None:
        self.words, self.pw, self.byteorder = words, pointer_words, byteorder
        self.limit = len(words)

    def run(self) -> list[Command]:
        if not self.words:
            return []
        first = self.words[0]
        if first & E.OPCODE_MASK not in (E.CMD_DESC_HDR, E.CMD_SHARED_HDR):
            return self._commands(0, [])  # no header: a fragment, decoded command by command
        self.limit = (first & E.HDR_LENGTH_MASK) or 1
        header = self._at(0)
        out = [header]
        if header.name == "UNKNOWN":
            return out
        if header.fields.get("pointer") is None:
            start = header.fields["start"]
            if start > 1:
                if start > self.limit or start > len(self.words):
                    end = min(start, self.limit, len(self.words))
                    reason = PAST_LENGTH if start > self.limit else PAST_INPUT
                    out.append(_unknown(1, self.words[1:end], reason))
                    return out
                out.append(Command(1, "PDB", self.words[1:start], {}))
            pos = max(start, 1)
        else:
            pos = len(header.words)
        out = self._commands(pos, out)
        if len(out) > 1 and out[1].name == "PDB":
            out[1] = self._pdb(out[1], out)
        return out

    def _commands(self, pos: int, out: list[Command]) -> list[Command]:
        stop = min(self.limit, len(self.words))
        while pos < stop:
            command = self._at(pos)
            out.append(command)
            if command.name == "UNKNOWN" and command.fields.get("reason") in (
                PAST_LENGTH,
                PAST_INPUT,
            ):
                break
            pos += len(command.words)
        return out

    def _at(self, pos: int) -> Command:
        """The command at ``pos``, or UNKNOWN when it runs past the length or the input."""
        word = self.words[pos]
        opcode = word & E.OPCODE_MASK
        name = E.COMMANDS.get(opcode)
        if name is None:
            return _unknown(pos, (word,), f"unknown opcode 0x{opcode >> 27:02x}")
        span = self._span(pos, name)
        end = pos + span
        if end > self.limit:
            return _unknown(pos, self.words[pos : min(self.limit, len(self.words))], PAST_LENGTH)
        if end > len(self.words):
            return _unknown(pos, self.words[pos:], PAST_INPUT)
        fields = getattr(self, "_f_" + name.lower().removeprefix("seq_"))(pos, name)
        return Command(pos, name, self.words[pos:end], fields)

    # Spans -----------------------------------------------------------------------------------

    def _span(self, pos: int, name: str) -> int:
        word = self.words[pos]
        seq = name.startswith("SEQ_") and name not in ("SEQ_IN_PTR", "SEQ_OUT_PTR")
        ptr = 0 if seq else self.pw
        if name in ("KEY", "SEQ_KEY"):
            if word & E.KEY_IMM:
                return 1 + _data_words(word & E.KEY_LENGTH_MASK)
            return 1 + ptr
        if name in ("LOAD", "SEQ_LOAD", "STORE", "SEQ_STORE"):
            if word & E.LDST_IMM:
                return 1 + _data_words(word & E.LDST_LENGTH_MASK)
            return 1 + ptr
        if name in ("FIFO_LOAD", "SEQ_FIFO_LOAD"):
            imm, ext = word & E.FIFOLD_IMM, word & E.FIFOLD_EXT
            span = 1 + (0 if imm else ptr)
            if ext:
                span += 1
                if imm:
                    if pos + span > len(self.words):
                        return span
                    return span + _data_words(self.words[pos + span - 1])
            return span + (_data_words(word & E.FIFOLD_LENGTH_MASK) if imm else 0)
        if name in ("FIFO_STORE", "SEQ_FIFO_STORE"):
            return 1 + ptr + (1 if word & E.FIFOST_EXT else 0)
        if name == "JUMP":
            nonlocal_ = (word >> E.JUMP_TYPE_SHIFT) & E.JUMP_TYPE_MASK == 1
            return 1 + (self.pw if nonlocal_ else 0)
        if name in ("SEQ_IN_PTR", "SEQ_OUT_PTR"):
            return 1 + (0 if word & E.SEQ_NO_POINTER else self.pw) + (1 if word & E.SEQ_EXT else 0)
        if name == "HEADER" and pos == 0 and word & E.HDR_SHARED:
            return 1 + self.pw  # a job header with a shared descriptor pointer
        return 1

    # Field decoders (one per command family) -------------------------------------------------

    def _pointer(self, pos: int) -> int:
        if self.pw == 2:
            return (self.words[pos] << 32) | self.words[pos + 1]
        return self.words[pos]

    def _data(self, pos: int, length: int) -> bytes:
        raw = b"".join(
            w.to_bytes(4, self.byteorder) for w in self.words[pos : pos + _data_words(length)]
        )
        return raw[:length]

    def _f_header(self, pos: int, name: str) -> dict[str, Any]:
        word = self.words[pos]
        fields: dict[str, Any] = {
            "start": (word >> E.HDR_START_SHIFT) & E.HDR_START_MASK,
            "length": word & E.HDR_LENGTH_MASK,
            "one": bool(word & E.HDR_ONE),
            "zro": bool(word & E.HDR_ZRO),
            "dnr": bool(word & E.HDR_DNR),
            "shared": bool(word & E.HDR_SHARED),
            "reverse": bool(word & E.HDR_REVERSE),
        }
        if name == "HEADER" and pos == 0 and word & E.HDR_SHARED:
            fields["pointer"] = self._pointer(pos + 1)
        return _with_unknown_bits(fields, word & ~E.HDR_KNOWN)

    _f_shared_header = _f_header

    def _f_key(self, pos: int, name: str) -> dict[str, Any]:
        word = self.words[pos]
        imm = bool(word & E.KEY_IMM)
        length = word & E.KEY_LENGTH_MASK
        fields: dict[str, Any] = {
            "cls": (word >> E.CLASS_SHIFT) & 3,
            "sgf": bool(word & E.KEY_SGF),
            "imm": imm,
            "enc": bool(word & E.KEY_ENC),
            "nwb": bool(word & E.KEY_NWB),
            "ekt": bool(word & E.KEY_EKT),
            "tk": bool(word & E.KEY_TK),
            "dest": E.KEY_DESTS[(word >> E.KEY_DEST_SHIFT) & E.KEY_DEST_MASK],
            "length": length,
            "pointer": None if imm or name == "SEQ_KEY" else self._pointer(pos + 1),
            "data": self._data(pos + 1, length) if imm else None,
        }
        return _with_unknown_bits(fields, word & ~E.KEY_KNOWN)

    def _f_load(self, pos: int, name: str) -> dict[str, Any]:
        word = self.words[pos]
        cls = (word >> E.CLASS_SHIFT) & 3
        reg = (word >> E.LDST_REG_SHIFT) & E.LDST_REG_MASK
        imm = bool(word & E.LDST_IMM)
        length = word & E.LDST_LENGTH_MASK
        return {
            "cls": cls,
            "imm": imm,
            "reg": reg,
            "reg_name": E.LDST_REGS[cls].get(reg, "unknown"),
            "offset": (word >> E.LDST_OFFSET_SHIFT) & E.LDST_OFFSET_MASK,
            "length": length,
            "pointer": None if imm or name.startswith("SEQ_") else self._pointer(pos + 1),
            "data": self._data(pos + 1, length) if imm else None,
        }

    _f_store = _f_load

    def _f_fifo_load(self, pos: int, name: str) -> dict[str, Any]:
        word = self.words[pos]
        imm, ext = bool(word & E.FIFOLD_IMM), bool(word & E.FIFOLD_EXT)
        has_ptr = not imm and not name.startswith("SEQ_")
        after = pos + 1 + (self.pw if has_ptr else 0)
        length = self.words[after] if ext else word & E.FIFOLD_LENGTH_MASK
        ftype = (word >> E.FIFOLD_TYPE_SHIFT) & E.FIFOLD_TYPE_MASK
        pk = ftype < 0x10
        action = 0 if pk else ftype & E.FIFOLD_ACTION_MASK
        fields: dict[str, Any] = {
            "cls": (word >> E.CLASS_SHIFT) & 3,
            "sgf": bool(word & E.FIFOLD_SGF),
            "imm": imm,
            "ext": ext,
            "type": ftype,
            "type_name": (
                E.FIFOLD_PK_TYPES.get(ftype, "unknown")
                if pk
                else E.FIFOLD_DATA_TYPES.get(ftype & ~E.FIFOLD_ACTION_MASK, "unknown")
            ),
            "flush1": bool(action & E.FIFOLD_FLUSH1),
            "last1": bool(action & E.FIFOLD_LAST1),
            "last2": bool(action & E.FIFOLD_LAST2),
            "length": length,
            "pointer": self._pointer(pos + 1) if has_ptr else None,
            "data": self._data(after + (1 if ext else 0), length) if imm else None,
        }
        if ext and word & E.FIFOLD_LENGTH_MASK:
            fields["unknown_bits"] = word & E.FIFOLD_LENGTH_MASK
        return fields

    def _f_fifo_store(self, pos: int, name: str) -> dict[str, Any]:
        word = self.words[pos]
        ext = bool(word & E.FIFOST_EXT)
        has_ptr = not name.startswith("SEQ_")
        after = pos + 1 + (self.pw if has_ptr else 0)
        ftype = (word >> E.FIFOST_TYPE_SHIFT) & E.FIFOST_TYPE_MASK
        fields: dict[str, Any] = {
            "cls": (word >> E.CLASS_SHIFT) & 3,
            "sgf": bool(word & E.FIFOST_SGF),
            "cont": bool(word & E.FIFOST_CONT),
            "ext": ext,
            "type": ftype,
            "type_name": E.FIFOST_TYPES.get(ftype, "unknown"),
            "length": self.words[after] if ext else word & E.FIFOST_LENGTH_MASK,
            "pointer": self._pointer(pos + 1) if has_ptr else None,
        }
        if ext and word & E.FIFOST_LENGTH_MASK:
            fields["unknown_bits"] = word & E.FIFOST_LENGTH_MASK
        return fields

    def _f_operation(self, pos: int, name: str) -> dict[str, Any]:
        return decode_operation(self.words[pos])

    def _f_jump(self, pos: int, name: str) -> dict[str, Any]:
        word = self.words[pos]
        jsl = bool(word & E.JUMP_JSL)
        jtype = E.JUMP_TYPES[(word >> E.JUMP_TYPE_SHIFT) & E.JUMP_TYPE_MASK]
        test = (word >> E.JUMP_TEST_SHIFT) & E.JUMP_TEST_MASK
        condition = (word >> E.JUMP_COND_SHIFT) & E.JUMP_COND_MASK
        offset = word & E.JUMP_OFFSET_MASK
        fields: dict[str, Any] = {
            "cls": (word >> E.CLASS_SHIFT) & 3,
            "jsl": jsl,
            "type": jtype,
            "test": test,
            "test_name": E.JUMP_TESTS[test],
            "condition": condition,
            "condition_names": tuple(
                n for n, bit in E.JUMP_CONDITIONS[jsl].items() if condition & bit
            ),
            "offset": offset - 0x100 if offset & 0x80 else offset,
            "pointer": self._pointer(pos + 1) if jtype == "nonlocal" else None,
        }
        return _with_unknown_bits(fields, word & ~E.JUMP_KNOWN)

    def _f_seq_ptr(self, pos: int, name: str) -> dict[str, Any]:
        word = self.words[pos]
        table = E.SEQ_IN_FLAGS if name == "SEQ_IN_PTR" else E.SEQ_OUT_FLAGS
        has_ptr = not word & E.SEQ_NO_POINTER
        after = pos + 1 + (self.pw if has_ptr else 0)
        ext = word & E.SEQ_EXT
        fields: dict[str, Any] = {
            "flags": tuple(n for n, bit in table.items() if word & bit),
            "length": self.words[after] if ext else word & E.SEQ_LENGTH_MASK,
            "pointer": self._pointer(pos + 1) if has_ptr else None,
        }
        known = E.OPCODE_MASK | sum(table.values()) | (0 if ext else E.SEQ_LENGTH_MASK)
        return _with_unknown_bits(fields, word & ~known)

    _f_in_ptr = _f_out_ptr = _f_seq_ptr

    def _f_move(self, pos: int, name: str) -> dict[str, Any]:
        return {"reason": f"{name} is not decoded by this tool"}

    _f_move_len = _f_math = _f_move

    def _f_signature(self, pos: int, name: str) -> dict[str, Any]:
        return {"reason": "SIGNATURE is not decoded; signature words after it are not skipped"}

    # PDB ---------------------------------------------------------------------------------------

    def _pdb(self, pdb: Command, commands: list[Command]) -> Command:
        op = next(
            (
                c
                for c in commands
                if c.name == "OPERATION" and c.fields["optype"] in ("protocol", "decap", "encap")
            ),
            None,
        )
        protocol = op.fields["prot_name"] if op else None
        layout = None
        if op is not None and op.fields["optype"] == "protocol":
            layout = E.pdb_layout_for(op.fields["protid"], op.fields["protinfo"])
        named = parse_pdb(pdb.words, layout, self.pw) if layout else None
        fields = {
            "words": pdb.words,
            "protocol": protocol,
            "layout": layout.name if named is not None else None,
            "fields": named or {},
        }
        return Command(pdb.index, "PDB", pdb.words, fields)


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
    """The named fields of one OPERATION word."""
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
            icv=bool(word & E.OP_ICV),
            encrypt=bool(word & E.OP_ENCRYPT),
        )
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
    return fields


def aai_name(alg: int, aai: int) -> str:
    """The mode (block ciphers), hash mode, or RNG bits an AAI value names; "unknown" if none."""
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
    return table.get(aai, "unknown") if table else "unknown"


def _data_words(length: int) -> int:
    return (length + 3) // 4


def _with_unknown_bits(fields: dict[str, Any], bits: int) -> dict[str, Any]:
    if bits:
        fields["unknown_bits"] = bits
    return fields


def _unknown(index: int, words: Sequence[int], reason: str) -> Command:
    return Command(index, "UNKNOWN", tuple(words), {"reason": reason})
