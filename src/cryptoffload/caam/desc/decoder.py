"""Decode CAAM descriptor words into named commands (the model and the disassembler read them)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cryptoffload.caam.desc import encoding as E
from cryptoffload.caam.desc.operation import aai_name, decode_operation, parse_pdb
from cryptoffload.caam.desc.words import Command, check_byteorder, check_word

__all__ = [
    "PAST_INPUT",
    "PAST_LENGTH",
    "Command",
    "aai_name",
    "decode",
    "decode_at",
    "decode_operation",
    "parse_pdb",
]

PAST_LENGTH = "runs past the descriptor length"
PAST_INPUT = "runs past the end of the words given"


def decode(
    words: Sequence[int], *, long_pointers: bool = False, byteorder: str = "big"
) -> list[Command]:
    """Decode a descriptor (header first) into commands, stopping at the header's length."""
    check_byteorder(byteorder)
    words = tuple(check_word(w, i) for i, w in enumerate(words))
    return _Decoder(words, 2 if long_pointers else 1, byteorder).run()


def decode_at(
    words: Sequence[int],
    pos: int,
    *,
    limit: int | None = None,
    long_pointers: bool = False,
    byteorder: str = "big",
) -> Command:
    """The one command starting at ``words[pos]`` (UNKNOWN when it runs past ``limit``).

    What a DECO does at each step: the model runs its descriptor buffer through this, so that a
    command another command wrote into the buffer is read as it now stands.
    """
    check_byteorder(byteorder)
    words = tuple(words)
    decoder = _Decoder(words, 2 if long_pointers else 1, byteorder)
    decoder.limit = len(words) if limit is None else min(limit, len(words))
    return decoder.at(pos)


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
        header = self.at(0)
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
            command = self.at(pos)
            out.append(command)
            if command.name == "UNKNOWN" and command.fields.get("reason") in (
                PAST_LENGTH,
                PAST_INPUT,
            ):
                break
            pos += len(command.words)
        return out

    def at(self, pos: int) -> Command:
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
            if name == "STORE" and _reg(word) in E.STORE_NO_POINTER_REGS:
                return 1
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
            return 1 + (self.pw if _jump_type(word) == E.JUMP_NONLOCAL else 0)
        if name in ("SEQ_IN_PTR", "SEQ_OUT_PTR"):
            return 1 + (0 if word & E.SEQ_NO_POINTER else self.pw) + (1 if word & E.SEQ_EXT else 0)
        if name == "HEADER" and pos == 0 and word & E.HDR_SHARED:
            return 1 + self.pw  # a job header with a shared descriptor pointer
        if name == "MATH":
            return 1 + _math_immediate_words(word)
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
        job = name == "HEADER"
        start = (word >> E.HDR_START_SHIFT) & E.HDR_START_MASK
        shared = job and bool(word & E.HDR_SHARED)
        fields: dict[str, Any] = {"shared_length" if shared else "start": start}
        fields["length"] = word & E.HDR_LENGTH_MASK
        flags = E.JOB_HDR_FLAGS if job else E.SHR_HDR_FLAGS
        fields.update({k: bool(word & bit) for k, bit in flags.items()})
        share_mask = E.HDR_JOB_SHARE_MASK if job else E.HDR_SHR_SHARE_MASK
        share = (word >> E.HDR_SHARE_SHIFT) & share_mask
        if not job or shared or share:
            fields["share"] = E.SHARE_TYPES.get(share, f"unknown({share})")
        if shared and pos == 0:
            fields["pointer"] = self._pointer(pos + 1)
        return _with_unknown_bits(fields, word & ~(E.HDR_KNOWN if job else E.SHR_HDR_KNOWN))

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
        reg = _reg(word)
        imm = bool(word & E.LDST_IMM)
        length = word & E.LDST_LENGTH_MASK
        offset = (word >> E.LDST_OFFSET_SHIFT) & E.LDST_OFFSET_MASK
        seq = name.startswith("SEQ_")
        no_pointer = imm or seq or (name == "STORE" and reg in E.STORE_NO_POINTER_REGS)
        fields: dict[str, Any] = {
            "cls": cls,
            "vlf" if seq else "sgf": bool(word & E.LDST_SGF),
            "imm": imm,
            "reg": reg,
            "reg_name": E.LDST_REGS[cls].get(reg, "unknown"),
            "offset": offset,
            "length": length,
            "pointer": None if no_pointer else self._pointer(pos + 1),
            "data": self._data(pos + 1, length) if imm else None,
        }
        if cls == 3 and reg == E.DECOCTRL_REG:
            fields.update(_deco_controls(offset))
        return fields

    _f_store = _f_load

    def _f_fifo_load(self, pos: int, name: str) -> dict[str, Any]:
        word = self.words[pos]
        imm, ext = bool(word & E.FIFOLD_IMM), bool(word & E.FIFOLD_EXT)
        seq = name.startswith("SEQ_")
        has_ptr = not imm and not seq
        after = pos + 1 + (self.pw if has_ptr else 0)
        length = self.words[after] if ext else word & E.FIFOLD_LENGTH_MASK
        ftype = (word >> E.FIFOLD_TYPE_SHIFT) & E.FIFOLD_TYPE_MASK
        pk = ftype < 0x10
        action = 0 if pk else ftype & E.FIFOLD_ACTION_MASK
        cls = (word >> E.CLASS_SHIFT) & 3
        fields: dict[str, Any] = {
            "cls": cls,
            "vlf" if seq else "sgf": bool(word & E.FIFOLD_SGF),
            "imm": imm,
            "ext": ext,
            "type": ftype,
            "type_name": (
                {**E.FIFOLD_PK_TYPES, **E.FIFOLD_OTHER_TYPES}.get(ftype, "unknown")
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
        if seq and cls == 0:
            fields["skip"] = True  # class 0 on SEQ FIFO LOAD: consume input, feed no CHA
        if ext and word & E.FIFOLD_LENGTH_MASK:
            fields["unknown_bits"] = word & E.FIFOLD_LENGTH_MASK
        return fields

    def _f_fifo_store(self, pos: int, name: str) -> dict[str, Any]:
        word = self.words[pos]
        ext = bool(word & E.FIFOST_EXT)
        seq = name.startswith("SEQ_")
        after = pos + 1 + (0 if seq else self.pw)
        ftype = (word >> E.FIFOST_TYPE_SHIFT) & E.FIFOST_TYPE_MASK
        fields: dict[str, Any] = {
            "cls": (word >> E.CLASS_SHIFT) & 3,
            "vlf" if seq else "sgf": bool(word & E.FIFOST_SGF),
            "cont": bool(word & E.FIFOST_CONT),
            "ext": ext,
            "type": ftype,
            "type_name": E.FIFOST_TYPES.get(ftype, "unknown"),
            "length": self.words[after] if ext else word & E.FIFOST_LENGTH_MASK,
            "pointer": None if seq else self._pointer(pos + 1),
        }
        if ext and word & E.FIFOST_LENGTH_MASK:
            fields["unknown_bits"] = word & E.FIFOST_LENGTH_MASK
        return fields

    def _f_operation(self, pos: int, name: str) -> dict[str, Any]:
        return decode_operation(self.words[pos])

    def _f_jump(self, pos: int, name: str) -> dict[str, Any]:
        word = self.words[pos]
        jsl = bool(word & E.JUMP_JSL)
        code = _jump_type(word)
        test = (word >> E.JUMP_TEST_SHIFT) & E.JUMP_TEST_MASK
        condition = (word >> E.JUMP_COND_SHIFT) & E.JUMP_COND_MASK
        offset = word & E.JUMP_OFFSET_MASK
        fields: dict[str, Any] = {
            "cls": (word >> E.CLASS_SHIFT) & 3,
            "jsl": jsl,
            "type": E.JUMP_TYPES.get(code, f"unknown({code:#x})"),
        }
        if code in E.JUMP_STEP_TYPES:  # bits 15:12 name the register, 11:8 the MATH conditions
            step = (word >> E.JUMP_STEP_SHIFT) & 0xF
            fields["register"] = E.JUMP_STEP_REGS.get(step, f"unknown({step:#x})")
            condition &= 0x0F
        fields.update(
            test=test,
            test_name=E.JUMP_TESTS[test],
            condition=condition,
            condition_names=tuple(
                n for n, bit in E.JUMP_CONDITIONS[jsl].items() if condition & bit
            ),
            offset=offset - 0x100 if offset & 0x80 else offset,
            pointer=self._pointer(pos + 1) if code == E.JUMP_NONLOCAL else None,
        )
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

    def _f_math(self, pos: int, name: str) -> dict[str, Any]:
        word = self.words[pos]
        function, src0, src1, dest = (
            (word >> shift) & E.MATH_FIELD_MASK
            for shift in (E.MATH_FUN_SHIFT, E.MATH_SRC0_SHIFT, E.MATH_SRC1_SHIFT, E.MATH_DEST_SHIFT)
        )
        fields: dict[str, Any] = {
            "function": function,
            "function_name": E.MATH_FUNCTIONS.get(function, "unknown"),
            "src0": src0,
            "src0_name": E.MATH_SRC0.get(src0, "unknown"),
            "src1": src1,
            "src1_name": E.MATH_SRC1.get(src1, "unknown"),
            "dest": dest,
            "dest_name": E.MATH_DEST.get(dest, "unknown"),
            "length": word & E.MATH_LENGTH_MASK,
        }
        fields.update({k: bool(word & bit) for k, bit in E.MATH_FLAGS.items()})
        imm = self.words[pos + 1 : pos + 1 + _math_immediate_words(word)]
        if src0 == E.MATH_IMM and src1 == E.MATH_IMM:
            fields["src0_imm"], fields["src1_imm"] = imm
        elif E.MATH_IMM in (src0, src1):
            key = "src0_imm" if src0 == E.MATH_IMM else "src1_imm"
            fields[key] = _math_value(imm, self.byteorder)
        return _with_unknown_bits(fields, word & ~E.MATH_KNOWN)

    def _f_move(self, pos: int, name: str) -> dict[str, Any]:
        word = self.words[pos]
        src = (word >> E.MOVE_SRC_SHIFT) & E.MOVE_FIELD_MASK
        dest = (word >> E.MOVE_DEST_SHIFT) & E.MOVE_FIELD_MASK
        fields: dict[str, Any] = {
            "aux": (word >> E.MOVE_AUX_SHIFT) & E.MOVE_AUX_MASK,
            "waitcomp": bool(word & E.MOVE_WAITCOMP),
            "src": src,
            "src_name": E.MOVE_SOURCES.get(src, "unknown"),
            "dest": dest,
            "dest_name": E.MOVE_DESTS.get(dest, "unknown"),
            "offset": (word >> E.MOVE_OFFSET_SHIFT) & E.MOVE_OFFSET_MASK,
        }
        if name == "MOVE_LEN":
            fields["length_reg"] = f"MATH{word & E.MOVE_LEN_MATH_MASK}"
            return _with_unknown_bits(fields, word & ~E.MOVE_LEN_KNOWN)
        fields["length"] = word & E.MOVE_LENGTH_MASK
        return fields

    _f_move_len = _f_move

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


def _reg(word: int) -> int:
    return (word >> E.LDST_REG_SHIFT) & E.LDST_REG_MASK


def _jump_type(word: int) -> int:
    return (word >> E.JUMP_TYPE_SHIFT) & E.JUMP_TYPE_MASK


def _math_immediate_words(word: int) -> int:
    """Words after a MATH command: one per immediate source, two for one 8-byte immediate."""
    src0 = (word >> E.MATH_SRC0_SHIFT) & E.MATH_FIELD_MASK
    src1 = (word >> E.MATH_SRC1_SHIFT) & E.MATH_FIELD_MASK
    if src0 == E.MATH_IMM and src1 == E.MATH_IMM:
        return 2
    if E.MATH_IMM not in (src0, src1):
        return 0
    eight = word & E.MATH_LENGTH_MASK == 8 and not word & E.MATH_IFB
    return 2 if eight else 1


def _math_value(words: Sequence[int], byteorder: str) -> int:
    """A MATH immediate: one word, or two words of a 64-bit value, high word first on
    big-endian parts and low word first on little-endian ones (Linux append_u64)."""
    if len(words) == 1:
        return words[0]
    high, low = (words[0], words[1]) if byteorder == "big" else (words[1], words[0])
    return high << 32 | low


def _deco_controls(offset: int) -> dict[str, Any]:
    """The controls a DECOCTRL LOAD carries in its offset byte."""
    out: dict[str, Any] = {
        "share_change": E.DECOCTRL_SHARE.get(offset & E.DECOCTRL_SHARE_MASK),
        "controls": tuple(n for n, bit in E.DECOCTRL_FLAGS.items() if offset & bit),
    }
    for key, shift in (
        ("nonseq_liodn", E.DECOCTRL_NONSEQ_LIODN_SHIFT),
        ("seq_liodn", E.DECOCTRL_SEQ_LIODN_SHIFT),
    ):
        if (offset >> shift) & 3:
            out[key] = (offset >> shift) & 3
    return out


def _data_words(length: int) -> int:
    return (length + 3) // 4


def _with_unknown_bits(fields: dict[str, Any], bits: int) -> dict[str, Any]:
    if bits:
        fields["unknown_bits"] = bits
    return fields


def _unknown(index: int, words: Sequence[int], reason: str) -> Command:
    return Command(index, "UNKNOWN", tuple(words), {"reason": reason})
