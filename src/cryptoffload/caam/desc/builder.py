"""Build CAAM descriptor words from named fields (the driver and the tests write them)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cryptoffload.caam.desc import encoding as E
from cryptoffload.caam.desc.builder_flow import FlowCommands
from cryptoffload.caam.desc.fieldcodes import (
    aai_value,
    bit24,
    flag_bits,
    in_range,
    lookup,
    names_of,
)
from cryptoffload.caam.desc.words import check_byteorder

__all__ = ["DescriptorBuilder"]


class DescriptorBuilder(FlowCommands):
    """Descriptor words from named fields; ``words()`` fills in the header's length and start.

    Each command method appends one command and returns the builder, so calls chain.
    Immediate data (keys, loaded values) is packed into words in ``byteorder``.
    """

    def __init__(self, *, long_pointers: bool = False, byteorder: str = "big") -> None:
        self.long_pointers = bool(long_pointers)
        self.byteorder = check_byteorder(byteorder)
        self._pw = 2 if self.long_pointers else 1
        self._header: dict[str, Any] = {
            "kind": "job",
            "flags": E.HDR_ONE,
            "share": 0,
            "start": None,
            "shared_pointer": None,
            "shared_length": None,
        }
        self._pdb: list[int] = []
        self._body: list[int] = []

    # Header and PDB ------------------------------------------------------------------------

    def header(
        self,
        *,
        kind: str = "job",
        dnr: bool = False,
        reverse: bool = False,
        one: bool = True,
        zro: bool = False,
        start: int | None = None,
        shared_pointer: int | None = None,
        shared_length: int | None = None,
        share: str | int | None = None,
        trusted: bool = False,
        make_trusted: bool = False,
        rsls: bool = False,
        savectx: bool = False,
        prop_dnr: bool = False,
        clear_ififo: bool = False,
        rif: bool = False,
    ) -> DescriptorBuilder:
        """Header options; ``start`` defaults to 1 + PDB words (0 without a PDB).

        A job header (``kind="job"``) with ``shared_pointer`` points at a shared descriptor of
        ``shared_length`` words (bits 21:16, where a plain job header has its start index), e.g.
        Linux's ``header(shared_pointer=P, shared_length=14, reverse=True, share="defer")``.
        ``share`` is never, wait, serial, always (and defer for a job header); ``trusted``,
        ``make_trusted`` and ``rsls`` are job-header bits, ``savectx``, ``prop_dnr``,
        ``clear_ififo`` and ``rif`` shared-header bits.
        """
        if kind not in ("job", "shared"):
            raise ValueError(f"kind must be 'job' or 'shared', got {kind!r}")
        job = kind == "job"
        if start is not None:
            in_range("start", start, 0, E.HDR_START_MASK)
        if shared_pointer is not None:
            if not job:
                raise ValueError("shared_pointer is only for a job header (kind='job')")
            self._ptr("shared_pointer", shared_pointer)
        if shared_length is not None:
            if shared_pointer is None:
                raise ValueError("shared_length goes with shared_pointer")
            if start is not None:
                raise ValueError("give shared_length or start, not both: they share bits 21:16")
            in_range("shared_length", shared_length, 0, E.HDR_START_MASK)
        own = {"trusted": trusted, "make_trusted": make_trusted, "rsls": rsls}
        other = {"savectx": savectx, "prop_dnr": prop_dnr, "clear_ififo": clear_ififo, "rif": rif}
        if not job:
            own, other = other, own
        wrong = [k for k, v in other.items() if v]
        if wrong:
            raise ValueError(f"{', '.join(wrong)} not for a {kind} header")
        table = E.JOB_HDR_FLAGS if job else E.SHR_HDR_FLAGS
        flags = 0
        for name, on in {"dnr": dnr, "one": one, "zro": zro, **own}.items():
            flags |= table[name] if on else 0
        if reverse:
            if not job:
                raise ValueError("reverse is a job-header bit")
            flags |= E.HDR_REVERSE
        shares = E.SHARE_TYPES if job else {k: v for k, v in E.SHARE_TYPES.items() if k < 4}
        width = 3 if job else 2
        self._header = {
            "kind": kind,
            "flags": flags,
            "share": 0 if share is None else lookup("share", share, shares, width),
            "start": start,
            "shared_pointer": shared_pointer,
            "shared_length": shared_length,
        }
        return self

    def pdb(self, layout: str, **fields: int) -> DescriptorBuilder:
        """A protocol data block from named fields, e.g. ``pdb("rsa-public", n_len=256, ...)``."""
        spec = E.PDB_LAYOUTS.get(layout)
        if spec is None:
            raise ValueError(f"layout must be one of {names_of(E.PDB_LAYOUTS)}, got {layout!r}")
        wanted = [n for n, _, _ in spec.head] + list(spec.pointers) + [n for n, _, _ in spec.tail]
        missing = [n for n in wanted if n not in fields]
        extra = [n for n in fields if n not in wanted]
        if missing or extra:
            raise ValueError(
                f"{layout} PDB fields are {', '.join(wanted)}; "
                + (f"missing {', '.join(missing)}" if missing else f"unknown {', '.join(extra)}")
            )
        words = [self._pack(layout, spec.head, fields)]
        for name in spec.pointers:
            words += self._ptr(name, fields[name])
        if spec.tail:
            words.append(self._pack(layout, spec.tail, fields))
        self._pdb = words
        return self

    def pdb_words(self, *words: int) -> DescriptorBuilder:
        """A protocol data block given as raw words."""
        self._pdb = [in_range(f"pdb word {i}", w, 0, E.WORD_MASK) for i, w in enumerate(words)]
        return self

    # Commands ------------------------------------------------------------------------------

    def key(
        self,
        cls: int,
        *,
        dest: str | int = "class-key",
        pointer: int | None = None,
        data: bytes | None = None,
        length: int | None = None,
        seq: bool = False,
        sgf: bool = False,
        enc: bool = False,
        nwb: bool = False,
        ekt: bool = False,
        tk: bool = False,
    ) -> DescriptorBuilder:
        """KEY (or SEQ_KEY): a key into a class key register, PKHA E, S-box or split key."""
        word = (E.CMD_SEQ_KEY if seq else E.CMD_KEY) | in_range("cls", cls, 0, 3) << E.CLASS_SHIFT
        word |= lookup("dest", dest, E.KEY_DESTS, 2) << E.KEY_DEST_SHIFT
        imm, length, extra = self._operand("KEY", pointer, data, length, seq, E.KEY_LENGTH_MASK)
        for on, bit in ((sgf, E.KEY_SGF), (enc, E.KEY_ENC), (nwb, E.KEY_NWB), (ekt, E.KEY_EKT),
                        (tk, E.KEY_TK), (imm, E.KEY_IMM)):  # fmt: skip
            word |= bit if on else 0
        return self._append(word | length, extra)

    def load(
        self,
        cls: int,
        reg: str | int,
        *,
        offset: int = 0,
        length: int | None = None,
        pointer: int | None = None,
        data: bytes | None = None,
        value: int | None = None,
        seq: bool = False,
        sgf: bool = False,
        vlf: bool = False,
    ) -> DescriptorBuilder:
        """LOAD (or SEQ_LOAD) into a register; ``value`` is one immediate 32-bit word.

        DECO registers are class 3: ``load(3, "math3", offset=4, length=4, seq=True)``, or a DECO
        control with no data, ``load(3, "decoctrl", offset=0x3, data=b"")``. ``vlf`` (SEQ only):
        the length is VSIL; ``sgf``: the pointer is an S/G table.
        """
        if value is not None:
            if data is not None:
                raise ValueError("LOAD: give data or value, not both")
            data = in_range("value", value, 0, E.WORD_MASK).to_bytes(4, self.byteorder)
        return self._ldst(E.CMD_SEQ_LOAD if seq else E.CMD_LOAD, "LOAD", cls, reg, offset,
                          length, pointer, data, seq, sgf, vlf)  # fmt: skip

    def store(
        self,
        cls: int,
        reg: str | int,
        *,
        offset: int = 0,
        length: int | None = None,
        pointer: int | None = None,
        seq: bool = False,
        sgf: bool = False,
        vlf: bool = False,
    ) -> DescriptorBuilder:
        """STORE (or SEQ_STORE) of a register to memory (``vlf``: the length is VSOL).

        A STORE of descbuf-job, descbuf-shared or their write-enable forms takes no pointer.
        """
        return self._ldst(E.CMD_SEQ_STORE if seq else E.CMD_STORE, "STORE", cls, reg, offset,
                          length, pointer, None, seq, sgf, vlf)  # fmt: skip

    def fifo_load(
        self,
        cls: int,
        type: str | int,
        *,
        length: int | None = None,
        pointer: int | None = None,
        data: bytes | None = None,
        ext: bool = False,
        sgf: bool = False,
        flush1: bool = False,
        last1: bool = False,
        last2: bool = False,
        seq: bool = False,
        vlf: bool = False,
    ) -> DescriptorBuilder:
        """FIFO LOAD (or SEQ_FIFO_LOAD) of message, IV, AAD, ICV or PKHA data.

        ``vlf`` (SEQ only): the length is VSIL when the command runs (the field is 0); class 0 on
        a SEQ FIFO LOAD skips ``length`` input bytes; ``sgf`` (not SEQ): the pointer is an S/G
        table.
        """
        word = E.CMD_SEQ_FIFO_LOAD if seq else E.CMD_FIFO_LOAD
        word |= in_range("cls", cls, 0, 3) << E.CLASS_SHIFT
        types = {**E.FIFOLD_PK_TYPES, **E.FIFOLD_OTHER_TYPES, **E.FIFOLD_DATA_TYPES}
        ftype = lookup("type", type, types, 6)
        action = (
            (E.FIFOLD_FLUSH1 if flush1 else 0)
            | (E.FIFOLD_LAST1 if last1 else 0)
            | (E.FIFOLD_LAST2 if last2 else 0)
        )
        if action and ftype < 0x10:
            raise ValueError(
                f"flush1/last1/last2 apply to data types (MSG, IV, AAD, ICV...), not type {type!r}"
            )
        word |= (ftype | action) << E.FIFOLD_TYPE_SHIFT
        max_length = E.WORD_MASK if ext else E.FIFOLD_LENGTH_MASK
        word |= bit24("FIFO_LOAD", sgf, vlf, seq)
        if vlf and length is None and data is None:
            length = 0
        imm, length, extra = self._operand("FIFO_LOAD", pointer, data, length, seq, max_length,
                                           hint="use ext=True above 65535 bytes")  # fmt: skip
        word |= E.FIFOLD_IMM if imm else 0
        if ext:
            word |= E.FIFOLD_EXT
            at = 0 if imm else len(extra)
            extra = [*extra[:at], length, *extra[at:]]
        else:
            word |= length
        return self._append(word, extra)

    def fifo_store(
        self,
        cls: int,
        type: str | int,
        *,
        length: int | None = None,
        pointer: int | None = None,
        ext: bool = False,
        cont: bool = False,
        sgf: bool = False,
        seq: bool = False,
        vlf: bool = False,
    ) -> DescriptorBuilder:
        """FIFO STORE (or SEQ_FIFO_STORE) of message data, RNG output or a PKHA register.

        ``vlf`` (SEQ only): the length is VSOL; type SKIP on a SEQ FIFO STORE steps the output
        sequence without writing.
        """
        word = E.CMD_SEQ_FIFO_STORE if seq else E.CMD_FIFO_STORE
        word |= in_range("cls", cls, 0, 3) << E.CLASS_SHIFT
        word |= lookup("type", type, E.FIFOST_TYPES, 6) << E.FIFOST_TYPE_SHIFT
        max_length = E.WORD_MASK if ext else E.FIFOST_LENGTH_MASK
        word |= bit24("FIFO_STORE", sgf, vlf, seq)
        if vlf and length is None:
            length = 0
        _, length, extra = self._operand("FIFO_STORE", pointer, None, length, seq, max_length,
                                         hint="use ext=True above 65535 bytes")  # fmt: skip
        word |= E.FIFOST_CONT if cont else 0
        if ext:
            return self._append(word | E.FIFOST_EXT, [*extra, length])
        return self._append(word | length, extra)

    def operation(
        self,
        cls: int,
        alg: str | int,
        *,
        aai: str | int = 0,
        state: str | int = "initfinal",
        icv: bool = False,
        encrypt: bool = False,
        dk: bool = False,
        pr: bool = False,
    ) -> DescriptorBuilder:
        """OPERATION of a class 1 or class 2 algorithm (AES, SHA-256, RNG ...).

        ``dk`` (AES): the key register holds the decryption schedule (also ``aai="CBC|DK"``);
        ``pr`` (RNG): prediction resistance, the same bit as ``icv``.
        """
        if cls not in (1, 2):
            raise ValueError(f"cls must be 1 or 2 for an algorithm OPERATION, got {cls!r}")
        word = E.CMD_OPERATION | (2 if cls == 1 else 4) << E.OP_TYPE_SHIFT
        code = lookup("alg", alg, E.ALGORITHMS, 8)
        aai_code = aai_value(code, aai)
        if dk:
            if code != E.ALG_AES:
                raise ValueError("dk is an AES AAI bit")
            aai_code |= E.AAI_DK
        if pr and code != E.ALG_RNG:
            raise ValueError("pr (prediction resistance) is an RNG bit: use icv for a cipher")
        word |= code << E.OP_ALG_SHIFT | aai_code << E.OP_AAI_SHIFT
        word |= lookup("state", state, E.STATES, 2) << E.OP_STATE_SHIFT
        word |= E.OP_ICV if icv or pr else 0
        return self._append(word | (E.OP_ENCRYPT if encrypt else 0))

    def pkha(self, function: str | int, *, flags: Iterable[str] = ()) -> DescriptorBuilder:
        """OPERATION of a PKHA function, e.g. ``pkha("MOD_EXPO")`` (B = A^E mod N)."""
        word = E.CMD_OPERATION | 1 << E.OP_TYPE_SHIFT | E.OP_PK
        word |= lookup("function", function, E.PK_FUNCTIONS, 6)
        return self._append(word | flag_bits("flags", flags, E.PK_FLAGS))

    def protocol(
        self,
        protid: str | int,
        *,
        protinfo: int = 0,
        flags: Iterable[str] = (),
        form: int | None = None,
        kind: str = "protocol",
    ) -> DescriptorBuilder:
        """OPERATION of a protocol (RSA, ECDSA, DH, key pair, BLOB); ``form`` for RSA decrypt.

        ``flags`` name protinfo bits: PKPROT_FLAGS, or BLOB_FLAGS for the BLOB protocol.
        """
        types = {"protocol": 0, "decap": 6, "encap": 7}
        if kind not in types:
            raise ValueError(f"kind must be one of {names_of(types)}, got {kind!r}")
        word = E.CMD_OPERATION | types[kind] << E.OP_TYPE_SHIFT
        code = lookup("protid", protid, E.PROTOCOLS, 8)
        word |= code << E.OP_PROTID_SHIFT
        info = in_range("protinfo", protinfo, 0, E.OP_PROTINFO_MASK)
        info |= flag_bits("flags", flags, E.BLOB_FLAGS if code == E.PROT_BLOB else E.PKPROT_FLAGS)
        if form is not None:
            info |= {1: 0, 2: 1, 3: 2}[in_range("form", form, 1, 3)]
        return self._append(word | info)

    def seq_in_ptr(
        self, *, length: int = 0, pointer: int | None = None, flags: Iterable[str] = ()
    ) -> DescriptorBuilder:
        """SEQ IN PTR: the input sequence (flag EXT puts the length in a word of its own)."""
        return self._seq_ptr(E.CMD_SEQ_IN_PTR, E.SEQ_IN_FLAGS, length, pointer, flags)

    def seq_out_ptr(
        self, *, length: int = 0, pointer: int | None = None, flags: Iterable[str] = ()
    ) -> DescriptorBuilder:
        """SEQ OUT PTR: the output sequence."""
        return self._seq_ptr(E.CMD_SEQ_OUT_PTR, E.SEQ_OUT_FLAGS, length, pointer, flags)

    def raw(self, *words: int) -> DescriptorBuilder:
        """Words appended as given (for encodings the builder does not name)."""
        return self._append(
            *[in_range(f"word {i}", w, 0, E.WORD_MASK) for i, w in enumerate(words)]
        )

    # Output ----------------------------------------------------------------------------------

    def words(self, *, length: int | None = None) -> list[int]:
        """The descriptor: header (length and start index filled in), PDB, commands.

        ``length`` overrides the header's length field (to build a bad descriptor on purpose).
        """
        h = self._header
        shared = [] if h["shared_pointer"] is None else self._ptr("pointer", h["shared_pointer"])
        if shared and self._pdb:
            raise ValueError("a job header with a shared descriptor pointer takes no PDB")
        start = h["start"] if h["start"] is not None else (1 + len(self._pdb) if self._pdb else 0)
        if h["shared_length"] is not None:
            start = h["shared_length"]
        if start > E.HDR_START_MASK:
            raise ValueError(f"start index must be 0..63: the PDB is {len(self._pdb)} words")
        total = 1 + len(shared) + len(self._pdb) + len(self._body)
        if length is None:
            if total > E.MAX_DESCRIPTOR_WORDS:
                raise ValueError(f"a descriptor is at most 64 words, this one is {total}")
            length = total
        in_range("length", length, 0, E.HDR_LENGTH_MASK)
        word = E.CMD_SHARED_HDR if h["kind"] == "shared" else E.CMD_DESC_HDR
        word |= h["flags"] | h["share"] << E.HDR_SHARE_SHIFT
        word |= (E.HDR_SHARED if shared else 0) | start << E.HDR_START_SHIFT | length
        return [word, *shared, *self._pdb, *self._body]

    # Helpers -----------------------------------------------------------------------------------

    def _append(self, *words: Any) -> DescriptorBuilder:
        for w in words:
            self._body.extend(w if isinstance(w, list) else [w])
        return self

    def _ptr(self, field: str, pointer: Any) -> list[int]:
        bits = 32 * self._pw
        if (
            isinstance(pointer, bool)
            or not isinstance(pointer, int)
            or not 0 <= pointer < 1 << bits
        ):
            hint = "" if self.long_pointers else " (addresses above 4 GiB need long_pointers=True)"
            raise ValueError(f"{field} must be an int 0..2**{bits}-1{hint}, got {pointer!r}")
        if self._pw == 2:
            return [pointer >> 32, pointer & E.WORD_MASK]
        return [pointer]

    def _pack(self, layout: str, spec: tuple[tuple[str, int, int], ...], fields: dict) -> int:
        word = 0
        for name, shift, width in spec:
            word |= (
                in_range(f"{layout} PDB field {name}", fields[name], 0, (1 << width) - 1) << shift
            )
        return word

    def _imm_words(self, data: bytes) -> list[int]:
        padded = data + bytes(-len(data) % 4)
        return [int.from_bytes(padded[i : i + 4], self.byteorder) for i in range(0, len(padded), 4)]

    def _operand(
        self,
        command: str,
        pointer: int | None,
        data: bytes | None,
        length: int | None,
        seq: bool,
        max_length: int,
        hint: str = "",
    ) -> tuple[bool, int, list[int]]:
        """(immediate?, length, words after the command) for a pointer, data or a sequence."""
        suffix = f" ({hint})" if hint else ""
        if data is not None:
            if not isinstance(data, (bytes, bytearray, memoryview)):
                raise ValueError(f"{command}: data must be bytes, got {type(data).__name__}")
            if pointer is not None:
                raise ValueError(f"{command}: give pointer or data, not both")
            data = bytes(data)
            if length is not None and length != len(data):
                raise ValueError(f"{command}: length {length} differs from the data's {len(data)}")
            if len(data) > max_length:
                raise ValueError(f"{command}: data must be at most {max_length} bytes{suffix}")
            return True, len(data), self._imm_words(data)
        if length is None:
            raise ValueError(f"{command}: length is required unless data is given")
        if isinstance(length, bool) or not isinstance(length, int) or not 0 <= length <= max_length:
            raise ValueError(f"length must be an int 0..{max_length}{suffix}, got {length!r}")
        if seq:
            if pointer is not None:
                raise ValueError(f"SEQ {command} takes no pointer: the sequence gives the address")
            return False, length, []
        if pointer is None:
            raise ValueError(f"{command}: pointer or data is required")
        return False, length, self._ptr("pointer", pointer)

    def _ldst(
        self,
        opcode: int,
        command: str,
        cls: int,
        reg: str | int,
        offset: int,
        length: int | None,
        pointer: int | None,
        data: bytes | None,
        seq: bool,
        sgf: bool = False,
        vlf: bool = False,
    ) -> DescriptorBuilder:
        cls = in_range("cls", cls, 0, 3)
        word = opcode | cls << E.CLASS_SHIFT
        code = lookup("reg", reg, E.LDST_REGS[cls], 7)
        word |= code << E.LDST_REG_SHIFT
        word |= in_range("offset", offset, 0, E.LDST_OFFSET_MASK) << E.LDST_OFFSET_SHIFT
        word |= bit24(command, sgf, vlf, seq)
        if vlf and length is None and data is None:
            length = 0
        if command == "STORE" and not seq and code in E.STORE_NO_POINTER_REGS:
            if pointer is not None:
                raise ValueError(f"STORE of register 0x{code:x} takes no pointer")
            length = in_range("length", 0 if length is None else length, 0, E.LDST_LENGTH_MASK)
            return self._append(word | length)
        imm, length, extra = self._operand(command, pointer, data, length, seq, E.LDST_LENGTH_MASK)
        return self._append(word | (E.LDST_IMM if imm else 0) | length, extra)

    def _seq_ptr(
        self,
        opcode: int,
        table: Mapping[str, int],
        length: int,
        pointer: int | None,
        flags: Iterable[str],
    ) -> DescriptorBuilder:
        bits = flag_bits("flags", flags, table)
        ext = bool(bits & E.SEQ_EXT)
        in_range("length", length, 0, E.WORD_MASK if ext else E.SEQ_LENGTH_MASK)
        if bits & E.SEQ_NO_POINTER:
            if pointer is not None:
                raise ValueError("flags PRE and RTO take no pointer")
            extra: list[int] = []
        elif pointer is None:
            raise ValueError("a pointer is required unless flags has PRE or RTO")
        else:
            extra = self._ptr("pointer", pointer)
        if ext:
            return self._append(opcode | bits, [*extra, length])
        return self._append(opcode | bits | length, extra)
