"""The builder's control-flow and arithmetic commands: JUMP, MATH, MOVE and MOVE_LEN."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Self

from cryptoffload.caam.desc import encoding as E
from cryptoffload.caam.desc.fieldcodes import flag_bits, in_range, lookup

__all__ = ["FlowCommands"]


class FlowCommands:
    """JUMP, MATH, MOVE and MOVE_LEN for DescriptorBuilder, which supplies the word output."""

    byteorder: str

    def _append(self, *words: Any) -> Self:
        raise NotImplementedError

    def _ptr(self, field: str, pointer: Any) -> list[int]:
        raise NotImplementedError

    def jump(
        self,
        *,
        type: str | int = "local",
        cls: int = 0,
        jsl: bool = False,
        test: str | int = "all",
        condition: int | Iterable[str] = 0,
        offset: int = 0,
        pointer: int | None = None,
        register: str | int | None = None,
    ) -> Self:
        """JUMP: local (offset in words), nonlocal (pointer), halt, halt-user (status byte in
        ``offset``), or a later era's local-inc, local-dec (``register``), gosub, return.

        ``cls`` waits for class 1, 2 or both to be done; ``condition`` names MATH_N, MATH_Z,
        MATH_C, MATH_NV, PK_0... or, with ``jsl``, SHRD, SELF, CALM, NIP, NIFP, NOP, NCP, JQP;
        ``test`` is all, invall, any or invany.
        """
        code = lookup("type", type, E.JUMP_TYPES, 4)
        word = E.CMD_JUMP | in_range("cls", cls, 0, 3) << E.CLASS_SHIFT | code << E.JUMP_TYPE_SHIFT
        if isinstance(test, str) and test.lower() in E.JUMP_TEST_ALIASES:
            test = E.JUMP_TEST_ALIASES[test.lower()]
        word |= (E.JUMP_JSL if jsl else 0) | lookup("test", test, E.JUMP_TESTS, 2) << 16
        if isinstance(condition, int):
            cond = in_range("condition", condition, 0, E.JUMP_COND_MASK)
        else:
            cond = flag_bits("condition", condition, E.JUMP_CONDITIONS[bool(jsl)])
        if code in E.JUMP_STEP_TYPES:
            if register is None:
                raise ValueError("local-inc and local-dec need the register they step")
            if cond & 0xF0:
                raise ValueError("local-inc and local-dec take only the MATH conditions")
            cond |= lookup("register", register, E.JUMP_STEP_REGS, 4) << 4
        elif register is not None:
            raise ValueError("only local-inc and local-dec take a register")
        top = 255 if code in (E.JUMP_HALT, E.JUMP_HALT_USER) else 127  # halt-user: a status byte
        word |= cond << E.JUMP_COND_SHIFT | in_range("offset", offset, -128, top) & 0xFF
        if code == E.JUMP_NONLOCAL:
            if pointer is None:
                raise ValueError("a nonlocal JUMP needs a pointer")
            return self._append(word, self._ptr("pointer", pointer))
        if pointer is not None:
            raise ValueError("only a nonlocal JUMP takes a pointer")
        return self._append(word)

    def math(
        self,
        function: str | int,
        src0: str | int,
        src1: str | int,
        dest: str | int,
        length: int = 4,
        *,
        imm: int | None = None,
        imm1: int | None = None,
        ifb: bool = False,
        nfu: bool = False,
        stl: bool = False,
    ) -> Self:
        """MATH: ``dest = src0 <function> src1`` over ``length`` bytes (1, 2, 4, 8).

        Names as the decoder gives them, e.g. ``math("ADD", "SEQINLEN", "MATH0",
        "VARSEQOUTLEN")``; an IMM source takes ``imm`` (both IMM: ``imm`` then ``imm1``, one word
        each). An 8-byte immediate is two words (low word first on a little-endian builder)
        unless ``ifb``. ``nfu``: leave the flags; ``stl``: stall.
        """
        fun = lookup("function", function, E.MATH_FUNCTIONS, 4)
        s0 = lookup("src0", src0, E.MATH_SRC0, 4)
        s1 = lookup("src1", src1, E.MATH_SRC1, 4)
        d = lookup("dest", dest, E.MATH_DEST, 4)
        if length not in E.MATH_LENGTHS:
            raise ValueError(f"length must be one of 1, 2, 4, 8, got {length!r}")
        word = E.CMD_MATH | fun << E.MATH_FUN_SHIFT | s0 << E.MATH_SRC0_SHIFT
        word |= s1 << E.MATH_SRC1_SHIFT | d << E.MATH_DEST_SHIFT | length
        for on, bit in ((ifb, E.MATH_IFB), (nfu, E.MATH_NFU), (stl, E.MATH_STL)):
            word |= bit if on else 0
        both = s0 == E.MATH_IMM and s1 == E.MATH_IMM
        wanted = 2 if both else 1 if E.MATH_IMM in (s0, s1) else 0
        given = [v for v in (imm, imm1) if v is not None]
        if len(given) != wanted or (imm is None and imm1 is not None):
            raise ValueError(f"imm: this MATH has {wanted} immediate source(s), {len(given)} given")
        if both:
            first = in_range("imm", imm, 0, E.WORD_MASK)
            return self._append(word, first, in_range("imm1", imm1, 0, E.WORD_MASK))
        if imm is None:
            return self._append(word)
        if length == 8 and not ifb:
            value = in_range("imm", imm, 0, (1 << 64) - 1)
            high, low = value >> 32, value & E.WORD_MASK
            return self._append(word, *((high, low) if self.byteorder == "big" else (low, high)))
        return self._append(word, in_range("imm", imm, 0, E.WORD_MASK))

    def move(
        self,
        src: str | int,
        dest: str | int,
        *,
        length: int,
        offset: int = 0,
        waitcomp: bool = False,
        aux: int = 0,
    ) -> Self:
        """MOVE ``length`` bytes between contexts, FIFOs, MATH registers, keys and the
        descriptor buffer (``offset`` applies to one side, as the hardware chooses)."""
        word = self._move(E.CMD_MOVE, src, dest, offset, waitcomp, aux)
        return self._append(word | in_range("length", length, 0, E.MOVE_LENGTH_MASK))

    def move_len(
        self,
        src: str | int,
        dest: str | int,
        *,
        length_reg: str | int,
        offset: int = 0,
        waitcomp: bool = False,
        aux: int = 0,
    ) -> Self:
        """MOVE_LEN: a MOVE whose length is the value of ``length_reg`` (MATH0..MATH3)."""
        word = self._move(E.CMD_MOVE_LEN, src, dest, offset, waitcomp, aux)
        regs = {n: f"MATH{n}" for n in range(4)}
        return self._append(word | lookup("length_reg", length_reg, regs, 2))

    def _move(
        self, opcode: int, src: str | int, dest: str | int, offset: int, waitcomp: bool, aux: int
    ) -> int:
        word = opcode | lookup("src", src, E.MOVE_SOURCES, 4) << E.MOVE_SRC_SHIFT
        word |= lookup("dest", dest, E.MOVE_DESTS, 4) << E.MOVE_DEST_SHIFT
        word |= in_range("offset", offset, 0, E.MOVE_OFFSET_MASK) << E.MOVE_OFFSET_SHIFT
        word |= in_range("aux", aux, 0, E.MOVE_AUX_MASK) << E.MOVE_AUX_SHIFT
        return word | (E.MOVE_WAITCOMP if waitcomp else 0)
