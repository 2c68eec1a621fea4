"""CAAM descriptor builder and decoder: the brief's hardware recipes, round trips, bad fields."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cryptoffload.caam.desc import encoding as E
from cryptoffload.caam.desc.builder import DescriptorBuilder
from cryptoffload.caam.desc.decoder import decode
from cryptoffload.caam.desc.words import from_bytes, to_bytes

P_KEY, P_IV, P_IN, P_OUT, P_AAD, P_TAG = 0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000
N = 64  # message length in the recipes


def hdr(length: int, start: int = 0) -> int:
    return 0xB0800000 | start << 16 | length


def with_header(body: list[int], start: int = 0) -> list[int]:
    return [hdr(len(body) + 1, start), *body]


# The brief's "Recipes reported to work on hardware", word for word -----------------------------


def aes_cbc(encrypt: bool) -> DescriptorBuilder:
    return (
        DescriptorBuilder()
        .key(1, nwb=True, length=16, pointer=P_KEY)
        .load(1, "context", length=16, pointer=P_IV)
        .operation(1, "AES", aai="CBC", state="update", encrypt=encrypt)
        .fifo_load(1, "MSG", last1=True, length=N, pointer=P_IN)
        .fifo_store(0, "MESSAGE_DATA", length=N, pointer=P_OUT)
        .store(1, "context", length=16, pointer=P_IV)
    )


def cbc_words(op: int) -> list[int]:
    return with_header(
        [
            0x02200010,
            P_KEY,
            0x12200010,
            P_IV,
            op,
            0x22120000 | N,
            P_IN,
            0x60300000 | N,
            P_OUT,
            0x52200010,
            P_IV,
        ]
    )


def gcm(encrypt: bool, alen: int = 20) -> DescriptorBuilder:
    b = DescriptorBuilder().key(1, nwb=True, length=16, pointer=P_KEY)
    b.operation(1, "AES", aai="GCM", state="initfinal", icv=not encrypt, encrypt=encrypt)
    b.fifo_load(1, "IV", flush1=True, length=12, pointer=P_IV)
    b.fifo_load(1, "AAD", flush1=True, length=alen, pointer=P_AAD)
    b.fifo_store(0, "MESSAGE_DATA", length=N, pointer=P_OUT)
    if encrypt:
        b.fifo_load(1, "MSG", last1=True, length=N, pointer=P_IN)
        return b.store(1, "context", length=16, pointer=P_TAG)
    b.fifo_load(1, "MSG", flush1=True, length=N, pointer=P_IN)
    return b.fifo_load(1, "ICV", last1=True, length=16, pointer=P_TAG)


RECIPES = {
    "aes-cbc-enc": (aes_cbc(True), cbc_words(0x82100101)),
    "aes-cbc-dec": (aes_cbc(False), cbc_words(0x82100100)),
    "aes-ctr": (
        DescriptorBuilder()
        .key(1, nwb=True, length=16, pointer=P_KEY)
        .load(1, "context", offset=16, length=16, pointer=P_IV)
        .operation(1, "AES", aai="CTR", state="update", encrypt=True)
        .fifo_load(1, "MSG", last1=True, length=N, pointer=P_IN)
        .fifo_store(0, "MESSAGE_DATA", length=N, pointer=P_OUT)
        .store(1, "context", offset=16, length=16, pointer=P_IV),
        with_header(
            [
                0x02200010,
                P_KEY,
                0x12201010,
                P_IV,
                0x82100001,
                0x22120000 | N,
                P_IN,
                0x60300000 | N,
                P_OUT,
                0x52201010,
                P_IV,
            ]
        ),
    ),
    "aes-ecb-enc": (
        DescriptorBuilder()
        .key(1, nwb=True, length=32, pointer=P_KEY)
        .operation(1, "AES", aai="ECB", state="update", encrypt=True)
        .fifo_load(1, "MSG", last1=True, length=N, pointer=P_IN)
        .fifo_store(0, "MESSAGE_DATA", length=N, pointer=P_OUT),
        with_header([0x02200020, P_KEY, 0x82100201, 0x22120000 | N, P_IN, 0x60300000 | N, P_OUT]),
    ),
    "aes-ecb-dec": (
        DescriptorBuilder()
        .key(1, nwb=True, length=32, pointer=P_KEY)
        .operation(1, "AES", aai="ECB", state="update")
        .fifo_load(1, "MSG", last1=True, length=N, pointer=P_IN)
        .fifo_store(0, "MESSAGE_DATA", length=N, pointer=P_OUT),
        with_header([0x02200020, P_KEY, 0x82100200, 0x22120000 | N, P_IN, 0x60300000 | N, P_OUT]),
    ),
    "aes-gcm-enc": (
        gcm(True),
        with_header(
            [
                0x02200010,
                P_KEY,
                0x8210090D,
                0x22210000 | 12,
                P_IV,
                0x22310000 | 20,
                P_AAD,
                0x60300000 | N,
                P_OUT,
                0x22120000 | N,
                P_IN,
                0x52200010,
                P_TAG,
            ]
        ),
    ),
    "aes-gcm-dec": (
        gcm(False),
        with_header(
            [
                0x02200010,
                P_KEY,
                0x8210090E,
                0x22210000 | 12,
                P_IV,
                0x22310000 | 20,
                P_AAD,
                0x60300000 | N,
                P_OUT,
                0x22110000 | N,
                P_IN,
                0x223A0000 | 16,
                P_TAG,
            ]
        ),
    ),
    "sha256": (
        DescriptorBuilder()
        .operation(2, "SHA256", aai="HASH", state="initfinal", encrypt=True)
        .fifo_load(2, "MSG", last2=True, length=N, pointer=P_IN)
        .store(2, "context", length=32, pointer=P_OUT),
        with_header([0x8443000D, 0x24140000 | N, P_IN, 0x54200020, P_OUT]),
    ),
    "sha256-empty": (
        DescriptorBuilder()
        .operation(2, "SHA256", encrypt=True)
        .fifo_load(2, "MSG", last2=True, data=b"")
        .store(2, "context", length=32, pointer=P_OUT),
        with_header([0x8443000D, 0x24940000, 0x54200020, P_OUT]),
    ),
    "hmac-sha256": (
        DescriptorBuilder()
        .key(2, length=32, pointer=P_KEY)
        .operation(2, "SHA256", aai="HMAC", encrypt=True)
        .fifo_load(2, "MSG", last2=True, length=N, pointer=P_IN)
        .store(2, "context", length=32, pointer=P_OUT),
        with_header([0x04000020, P_KEY, 0x8443001D, 0x24140000 | N, P_IN, 0x54200020, P_OUT]),
    ),
    "rng-generate": (
        DescriptorBuilder()
        .operation(1, "RNG", state="update")
        .fifo_store(0, "RNGSTORE", length=32, pointer=P_OUT),
        with_header([0x82500000, 0x60340000 | 32, P_OUT]),
    ),
    "rng-generate-pr": (
        DescriptorBuilder()
        .operation(1, "RNG", state="update", icv=True)
        .fifo_store(0, "RNGSTORE", length=32, pointer=P_OUT),
        with_header([0x82500002, 0x60340000 | 32, P_OUT]),
    ),
    "rng-instantiate-sh0": (
        DescriptorBuilder()
        .operation(1, "RNG", aai="SH0", state="init")
        .jump(cls=1, offset=1)
        .load(0, "clear-written", value=1)
        .operation(1, "RNG", aai="SH0|SK", state="update")
        .jump(cls=1, type="halt"),
        with_header([0x82500004, 0xA2000001, 0x10880004, 0x00000001, 0x82501000, 0xA2800000]),
    ),
    "pkha-modexp": (
        DescriptorBuilder()
        .key(1, dest="pkha-e", length=3, pointer=P_KEY)
        .fifo_load(1, "PK_A", length=256, pointer=P_IN)
        .fifo_load(1, "PK_N", length=256, pointer=P_AAD)
        .pkha("MOD_EXPO")
        .fifo_store(1, "PKHA_B", length=256, pointer=P_OUT),
        with_header(
            [0x02010003, P_KEY, 0x220C0100, P_IN, 0x22080100, P_AAD, 0x81800006, 0x620D0100, P_OUT]
        ),
    ),
}


@pytest.mark.parametrize("name", list(RECIPES))
def test_builder_emits_the_recipe_words(name: str) -> None:
    builder, expected = RECIPES[name]
    assert builder.words() == expected


@pytest.mark.parametrize("name", list(RECIPES))
def test_recipes_decode_without_unknowns_and_cover_every_word(name: str) -> None:
    words = RECIPES[name][1]
    commands = decode(words)
    assert [c.name for c in commands if c.name == "UNKNOWN"] == []
    assert [w for c in commands for w in c.words] == words
    assert all("unknown_bits" not in c.fields for c in commands)


def test_recipe_fields_decode_exactly() -> None:
    commands = decode(RECIPES["aes-gcm-dec"][1])
    assert [c.name for c in commands] == ["HEADER", "KEY", "OPERATION"] + ["FIFO_LOAD"] * 2 + [
        "FIFO_STORE"
    ] + ["FIFO_LOAD"] * 2
    assert commands[0].fields == {
        "start": 0,
        "length": 14,
        "rsls": False,
        "dnr": False,
        "one": True,
        "zro": False,
        "trusted": False,
        "make_trusted": False,
        "shared": False,
        "reverse": False,
    }
    assert commands[2].fields == {
        "optype": "class1",
        "alg": 0x10,
        "alg_name": "AES",
        "aai": 0x90,
        "aai_name": "GCM",
        "state": 3,
        "state_name": "initfinal",
        "icv": True,
        "encrypt": False,
    }
    icv = commands[-1]
    assert icv.index == 12 and icv.words == (0x223A0010, P_TAG)
    assert icv.fields == {
        "cls": 1,
        "sgf": False,
        "imm": False,
        "ext": False,
        "type": 0x3A,
        "type_name": "ICV",
        "flush1": False,
        "last1": True,
        "last2": False,
        "length": 16,
        "pointer": P_TAG,
        "data": None,
    }
    clrw = decode(RECIPES["rng-instantiate-sh0"][1])[3]
    assert clrw.name == "LOAD" and clrw.fields["reg_name"] == "clear-written"
    assert clrw.fields["data"] == b"\x00\x00\x00\x01" and clrw.fields["pointer"] is None
    halt = decode(RECIPES["rng-instantiate-sh0"][1])[-1]
    assert halt.fields["type"] == "halt" and halt.fields["cls"] == 1
    pk = decode(RECIPES["pkha-modexp"][1])
    assert pk[1].fields["dest"] == "pkha-e"
    assert pk[4].fields == {"optype": "pk", "function": 6, "function_name": "MOD_EXPO", "flags": ()}
    assert pk[5].fields["type_name"] == "PKHA_B"


# Round trips: every command kind ------------------------------------------------------------


def only(words: list[int], **kw) -> dict:
    commands = decode(words, **kw)
    assert len(commands) == 2, commands
    return commands[1].fields


def test_round_trip_key_immediate_little_endian() -> None:
    key = bytes(range(1, 22))  # 21 bytes: padded to 6 words
    words = DescriptorBuilder(byteorder="little").key(1, data=key).words()
    assert len(words) == 8 and words[2] == 0x04030201 and words[7] == 0x00000015
    fields = only(words, byteorder="little")
    assert fields["data"] == key and fields["length"] == 21 and fields["imm"]
    assert only(words, byteorder="big")["data"] != key


def test_key_data_is_not_in_the_repr() -> None:
    key = b"\xa5" * 16
    command = decode(DescriptorBuilder().key(1, data=key).words())[1]
    assert "a5a5" not in repr(command) and "2779096485" not in repr(command)
    assert "16 bytes" in repr(command)


def test_round_trip_seq_commands_and_pointers() -> None:
    b = DescriptorBuilder(long_pointers=True)
    b.seq_in_ptr(length=100, pointer=0x1_2345_6780).seq_out_ptr(
        length=0x12345, pointer=0x10, flags=("EXT",)
    )
    b.seq_in_ptr(flags=("PRE", "RJD"), length=5)
    b.key(2, seq=True, length=20).load(1, "context", seq=True, length=16)
    b.fifo_load(1, "MSG", seq=True, length=1 << 20, ext=True, last1=True)
    b.fifo_store(0, "MESSAGE_DATA", seq=True, length=33).store(2, "context", seq=True, length=32)
    commands = decode(b.words(), long_pointers=True)
    names = [c.name for c in commands]
    assert names == [
        "HEADER",
        "SEQ_IN_PTR",
        "SEQ_OUT_PTR",
        "SEQ_IN_PTR",
        "SEQ_KEY",
        "SEQ_LOAD",
        "SEQ_FIFO_LOAD",
        "SEQ_FIFO_STORE",
        "SEQ_STORE",
    ]
    assert commands[1].fields == {"flags": (), "length": 100, "pointer": 0x1_2345_6780}
    assert commands[1].words == (0xF0000064, 0x1, 0x23456780)
    assert commands[2].fields == {"flags": ("EXT",), "length": 0x12345, "pointer": 0x10}
    assert commands[3].fields == {"flags": ("PRE", "RJD"), "length": 5, "pointer": None}
    assert commands[4].fields["pointer"] is None and commands[4].fields["length"] == 20
    assert commands[6].fields["length"] == 1 << 20 and commands[6].fields["ext"]
    assert commands[6].words == (0x2A520000, 1 << 20)


def test_round_trip_jumps() -> None:
    b = DescriptorBuilder()
    b.jump(offset=-3, test="any", condition=("MATH_Z", "MATH_N"))
    b.jump(type="nonlocal", pointer=0xDEAD0000, jsl=True, condition=("SHRD",))
    b.jump(type="halt-user", cls=3, offset=0x7F)
    j1, j2, j3 = decode(b.words())[1:]
    assert j1.fields["offset"] == -3 and j1.fields["test_name"] == "any"
    assert j1.fields["condition_names"] == ("MATH_N", "MATH_Z") and j1.words == (0xA0020CFD,)
    assert j2.fields["pointer"] == 0xDEAD0000 and j2.fields["jsl"] and len(j2.words) == 2
    assert j2.fields["condition_names"] == ("SHRD",)
    assert j3.fields["type"] == "halt-user" and j3.fields["cls"] == 3


def test_round_trip_protocols_and_pk_flags() -> None:
    b = DescriptorBuilder().protocol("RSADEC_PRVKEY", form=3).protocol("DSASIGN", flags=("ECC",))
    b.protocol("BLOB", kind="encap").pkha("MOD_MULT", flags=("OUT_A", "TIME_EQ"))
    rsa, sign, blob, mult = decode(b.words())[1:]
    assert rsa.words == (0x80190002,) and rsa.fields["form"] == 3
    assert sign.words == (0x80150002,) and sign.fields["flags"] == ("ECC",)
    assert blob.fields["optype"] == "encap" and blob.fields["prot_name"] == "BLOB"
    assert (
        mult.fields["flags"] == ("TIME_EQ", "OUT_A") and mult.fields["function_name"] == "MOD_MULT"
    )


KINDS = st.sampled_from(
    [
        "key",
        "load",
        "store",
        "fifo_load",
        "fifo_store",
        "operation",
        "jump",
        "math",
        "move",
        "move_len",
        "seq_in_ptr",
        "seq_out_ptr",
    ]
)
LDST_REGS = {
    0: ["clear-written", "output-fifo", "cha-control"],
    1: ["context", "key", "mode", "icv-size"],
    2: ["context", "key", "data-size"],
    3: ["math0", "math3", "descbuf", "dpovrd", "decoctrl"],
}


def _ldst_spec(draw, kind: str, ptr: int):
    cls = draw(st.integers(0, 3))
    reg = draw(st.sampled_from(LDST_REGS[cls]))
    seq = draw(st.booleans())
    kw = {"offset": draw(st.integers(0, 255)), "seq": seq}
    if seq and draw(st.booleans()):
        kw["vlf"] = True
    elif not seq and draw(st.booleans()):
        kw["sgf"] = True
    if kind == "load" and draw(st.booleans()):
        kw["data"] = draw(st.binary(max_size=40))
    else:
        kw["length"] = draw(st.integers(0, 255))
        if not seq:
            kw["pointer"] = ptr
    return kind, (cls, reg), kw


@st.composite
def command_spec(draw):
    kind = draw(KINDS)
    ptr = draw(st.integers(0, 0xFFFFFFFF))
    if kind == "key":
        imm = draw(st.booleans())
        kw = {k: draw(st.booleans()) for k in ("sgf", "enc", "nwb", "ekt", "tk")}
        kw["dest"] = draw(st.sampled_from(["class-key", "pkha-e", "afha-sbox", "mdha-split"]))
        if imm:
            kw["data"] = draw(st.binary(max_size=64))
        else:
            kw.update(length=draw(st.integers(0, 1023)), pointer=ptr)
        return kind, (draw(st.integers(0, 3)),), kw
    if kind in ("load", "store"):
        return _ldst_spec(draw, kind, ptr)
    if kind == "fifo_load":
        ftype = draw(
            st.sampled_from(
                [
                    "MSG",
                    "IV",
                    "AAD",
                    "ICV",
                    "MSG1OUT2",
                    "BITDATA",
                    "PK_A",
                    "PK_N",
                    "PK_B3",
                    "NOINFOFIFO",
                ]
            )
        )
        seq = draw(st.booleans())
        kw = {"ext": draw(st.booleans()), "seq": seq}
        kw["vlf" if seq else "sgf"] = draw(st.booleans())
        if ftype in E.FIFOLD_DATA_TYPES.values():
            kw.update({f: draw(st.booleans()) for f in ("flush1", "last1", "last2")})
        if not seq and draw(st.booleans()):
            kw["data"] = draw(st.binary(max_size=40))
        else:
            kw["length"] = draw(st.integers(0, 0xFFFFFFFF if kw["ext"] else 0xFFFF))
            if not seq:
                kw["pointer"] = ptr
        return kind, (draw(st.integers(0, 3)), ftype), kw
    if kind == "fifo_store":
        ftype = draw(
            st.sampled_from(
                [
                    "MESSAGE_DATA",
                    "RNGSTORE",
                    "PKHA_B",
                    "SPLIT_KEK",
                    "SKIP",
                    "KEY_KEK",
                    "KEY_CCM_JKEK",
                ]
            )
        )
        seq = draw(st.booleans())
        kw = {"cont": draw(st.booleans()), "ext": draw(st.booleans()), "seq": seq}
        kw["vlf" if seq else "sgf"] = draw(st.booleans())
        if not seq:
            kw["pointer"] = ptr
        kw["length"] = draw(st.integers(0, 0xFFFFFFFF if kw["ext"] else 0xFFFF))
        return kind, (draw(st.integers(0, 3)), ftype), kw
    if kind == "operation":
        alg, aai = draw(
            st.sampled_from(
                [
                    ("AES", "CBC"),
                    ("AES", "GCM"),
                    ("AES", "XTS"),
                    ("AES", "CBC|DK"),
                    ("AES", "CTR"),
                    ("3DES", "ECB"),
                    ("SHA512", "HMAC"),
                    ("MD5", "SMAC"),
                    ("SHA1", "HMAC_PRECOMP"),
                    ("RNG", "SH1|PS|AI"),
                    ("RNG", "SH0|SK"),
                ]
            )
        )
        kw = {
            "aai": aai,
            "state": draw(st.sampled_from(["update", "init", "finalize", "initfinal"])),
            "encrypt": draw(st.booleans()),
        }
        kw["pr" if alg == "RNG" else "icv"] = draw(st.booleans())
        return kind, (draw(st.sampled_from([1, 2])), alg), kw
    if kind == "math":
        names = [
            st.sampled_from(sorted(set(t.values()) - {"unknown"}))
            for t in (E.MATH_FUNCTIONS, E.MATH_SRC0, E.MATH_SRC1, E.MATH_DEST)
        ]
        fun, src0, src1, dest = (draw(n) for n in names)
        length = draw(st.sampled_from([1, 2, 4, 8]))
        kw = {f: draw(st.booleans()) for f in ("ifb", "nfu", "stl")}
        wide = length == 8 and not kw["ifb"] and not (src0 == src1 == "IMM")
        if "IMM" in (src0, src1):
            kw["imm"] = draw(st.integers(0, (1 << 64) - 1 if wide else 0xFFFFFFFF))
        if src0 == src1 == "IMM":
            kw["imm1"] = draw(st.integers(0, 0xFFFFFFFF))
        return kind, (fun, src0, src1, dest, length), kw
    if kind in ("move", "move_len"):
        src = draw(st.sampled_from(sorted(E.MOVE_SOURCES.values())))
        dest = draw(st.sampled_from(sorted(E.MOVE_DESTS.values())))
        kw = {
            "offset": draw(st.integers(0, 255)),
            "waitcomp": draw(st.booleans()),
            "aux": draw(st.integers(0, 3)),
        }
        if kind == "move":
            kw["length"] = draw(st.integers(0, 255))
        else:
            kw["length_reg"] = draw(st.sampled_from(["MATH0", "MATH1", "MATH2", "MATH3"]))
        return kind, (src, dest), kw
    if kind in ("seq_in_ptr", "seq_out_ptr"):
        table = E.SEQ_IN_FLAGS if kind == "seq_in_ptr" else E.SEQ_OUT_FLAGS
        flags = draw(st.lists(st.sampled_from(sorted(table)), unique=True, max_size=4))
        kw = {"flags": tuple(n for n in table if n in flags)}
        kw["length"] = draw(st.integers(0, 0xFFFFFFFF if "EXT" in flags else 0xFFFF))
        if not {"PRE", "RTO"} & set(flags):
            kw["pointer"] = ptr
        return kind, (), kw
    jtype = draw(st.sampled_from(["local", "nonlocal", "halt", "halt-user", "gosub", "return"]))
    kw = {
        "type": jtype,
        "cls": draw(st.integers(0, 3)),
        "jsl": draw(st.booleans()),
        "test": draw(st.sampled_from(["all", "invall", "any", "invany", "not-all", "not-any"])),
        "condition": draw(st.integers(0, 255)),
        "offset": draw(st.integers(-128, 127)),
    }
    if jtype == "nonlocal":
        kw["pointer"] = ptr
    return kind, (), kw


def expected_fields(kind: str, args: tuple, kw: dict) -> dict:
    """The decoder's fields that the builder's named arguments must come back as."""
    skip = ("data", "aai", "state", "offset", "seq", "imm", "imm1", "sgf", "vlf")
    out = {k: v for k, v in kw.items() if k not in skip}
    if kind in ("key", "load", "store", "fifo_load", "fifo_store") and args:
        out["cls"] = args[0]
    if kind == "key" and "sgf" in kw:
        out["sgf"] = kw["sgf"]
    if kind in ("load", "store", "fifo_load", "fifo_store"):
        out["vlf" if kw.get("seq") else "sgf"] = bool(kw.get("vlf") or kw.get("sgf"))
    if "data" in kw:
        out.update(data=kw["data"], length=len(kw["data"]), imm=True, pointer=None)
    if kind in ("load", "store"):
        out.update(reg_name=args[1], offset=kw["offset"])
    if kind in ("fifo_load", "fifo_store"):
        out["type_name"] = args[1]
    if kind == "operation":
        out.update(alg_name=args[1], aai_name=kw["aai"], state_name=kw["state"])
    if kind == "jump":
        aliases = {"not-all": "invall", "not-any": "invany"}
        out.update(offset=kw["offset"], test_name=aliases.get(kw["test"], kw["test"]))
        out.pop("test")
    if kind == "math":
        fun, src0, src1, dest, length = args
        out.update(function_name=fun, src0_name=src0, src1_name=src1, dest_name=dest, length=length)
        if src0 == src1 == "IMM":
            out.update(src0_imm=kw["imm"], src1_imm=kw["imm1"])
        elif "IMM" in (src0, src1):
            out["src0_imm" if src0 == "IMM" else "src1_imm"] = kw["imm"]
    if kind in ("move", "move_len"):
        out.update(src_name=args[0], dest_name=args[1], offset=kw["offset"])
    if kind in ("seq_in_ptr", "seq_out_ptr"):
        out.setdefault("pointer", None)
    return out


@given(st.lists(command_spec(), min_size=1, max_size=6), st.sampled_from(["big", "little"]))
def test_decode_gives_back_the_builders_fields(specs, byteorder) -> None:
    b = DescriptorBuilder(byteorder=byteorder)
    for kind, args, kw in specs:
        getattr(b, kind)(*args, **kw)
    try:
        words = b.words()
    except ValueError as exc:  # more than 64 words of immediate data: refused, by design
        assert "at most 64 words" in str(exc)
        return
    commands = decode(words, byteorder=byteorder)
    assert commands[0].fields["length"] == len(words)
    assert [w for c in commands for w in c.words] == words
    assert len(commands) == len(specs) + 1
    for command, (kind, args, kw) in zip(commands[1:], specs, strict=True):
        assert command.name == _name(kind, kw), command
        assert "unknown_bits" not in command.fields, command
        for key, value in expected_fields(kind, args, kw).items():
            assert command.fields[key] == value, (key, command)


def _name(kind: str, kw: dict) -> str:
    if kind in ("seq_in_ptr", "seq_out_ptr"):
        return kind.upper()
    return ("SEQ_" if kw.get("seq") else "") + kind.upper()


HEADERS = st.one_of(
    st.fixed_dictionaries(
        {
            "kind": st.just("shared"),
            "share": st.sampled_from(["never", "wait", "serial", "always"]),
            "savectx": st.booleans(),
            "prop_dnr": st.booleans(),
            "clear_ififo": st.booleans(),
            "rif": st.booleans(),
            "dnr": st.booleans(),
            "start": st.integers(0, 63),
        }
    ),
    st.fixed_dictionaries(
        {
            "kind": st.just("job"),
            "share": st.sampled_from(["never", "wait", "serial", "always", "defer"]),
            "shared_pointer": st.integers(0, 0xFFFFFFFF),
            "shared_length": st.integers(1, 63),
            "reverse": st.booleans(),
            "trusted": st.booleans(),
            "make_trusted": st.booleans(),
            "rsls": st.booleans(),
            "dnr": st.booleans(),
        }
    ),
)


@given(HEADERS, st.booleans())
def test_headers_round_trip(header: dict, long_pointers: bool) -> None:
    if long_pointers and "shared_pointer" in header:
        header = {**header, "shared_pointer": header["shared_pointer"] << 32 | 0x40}
    b = DescriptorBuilder(long_pointers=long_pointers).header(**header)
    words = b.words()
    fields = decode(words, long_pointers=long_pointers)[0].fields
    want = {k: v for k, v in header.items() if k not in ("kind", "shared_pointer")}
    if "shared_pointer" in header:
        want.update(pointer=header["shared_pointer"], shared=True)
    for key, value in want.items():
        assert fields[key] == value, (key, fields)
    assert fields["one"] and not fields["zro"] and "unknown_bits" not in fields


# Bad fields -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda b: b.key(4, length=16, pointer=0), "cls"),
        (lambda b: b.key(1, dest="sbox", length=16, pointer=0), "dest"),
        (lambda b: b.key(1, length=1024, pointer=0), "length"),
        (lambda b: b.key(1, length=16, pointer=1 << 32), "pointer"),
        (lambda b: b.load(1, "clear-written", value=1), "reg"),
        (lambda b: b.load(0, "clear-written", offset=256, value=1), "offset"),
        (lambda b: b.load(0, "clear-written", value=1 << 32), "value"),
        (lambda b: b.fifo_load(1, "MESSAGE", length=1, pointer=0), "type"),
        (lambda b: b.fifo_load(1, "PK_A", last1=True, length=1, pointer=0), "flush1/last1"),
        (lambda b: b.fifo_load(1, "MSG", length=0x10000, pointer=0), "ext=True"),
        (lambda b: b.fifo_store(0, "RNG", length=1, pointer=0), "type"),
        (lambda b: b.operation(3, "AES"), "cls"),
        (lambda b: b.operation(1, "AES256"), "alg"),
        (lambda b: b.operation(1, "AES", aai="HMAC"), "aai"),
        (lambda b: b.operation(1, "RNG", aai="SH2"), "aai"),
        (lambda b: b.operation(1, "AES", state="final"), "state"),
        (lambda b: b.pkha("EXPO"), "function"),
        (lambda b: b.pkha("MOD_EXPO", flags=("OUT_C",)), "flags"),
        (lambda b: b.protocol("RSA"), "protid"),
        (lambda b: b.protocol("RSADEC_PRVKEY", form=4), "form"),
        (lambda b: b.protocol("DH", protinfo=0x10000), "protinfo"),
        (lambda b: b.jump(offset=128), "offset"),
        (lambda b: b.jump(type="call"), "type"),
        (lambda b: b.jump(type="local-inc"), "register"),
        (lambda b: b.jump(type="local", register="MATH0"), "register"),
        (lambda b: b.jump(type="halt-user", offset=256), "offset"),
        (lambda b: b.jump(test="some"), "test"),
        (lambda b: b.jump(type="nonlocal"), "pointer"),
        (lambda b: b.seq_in_ptr(length=1, flags=("XYZ",), pointer=0), "flags"),
        (lambda b: b.seq_in_ptr(length=0x10000, pointer=0), "length"),
        (lambda b: b.header(start=64), "start"),
        (lambda b: b.pdb("rsa-public", e_len=3, n_len=256, f=0, g=0, n=0, e=0), "f_len"),
        (lambda b: b.pdb("ecdh", l_len=1024, n_len=32, q=0, r=0, w=0, s=0, z=0, ab=0), "l_len"),
        (lambda b: b.pdb("rsa-pub"), "layout"),
    ],
)
def test_bad_field_values_raise_value_error_naming_the_field(call, field) -> None:
    with pytest.raises(ValueError, match=field.replace("/", ".")):
        call(DescriptorBuilder())


def test_error_lists_the_allowed_names() -> None:
    with pytest.raises(ValueError, match="MSG, MSG1OUT2, IV, BITDATA, AAD, ICV"):
        DescriptorBuilder().fifo_load(1, "DATA", length=1, pointer=0)


def test_too_long_descriptor_is_refused_and_length_can_be_forced() -> None:
    b = DescriptorBuilder()
    for _ in range(32):
        b.fifo_store(0, "MESSAGE_DATA", length=1, pointer=0)
    with pytest.raises(ValueError, match="at most 64 words"):
        b.words()
    assert DescriptorBuilder().pkha("MOD_EXPO").words(length=5) == [0xB0800005, 0x81800006]


def test_key_errors_do_not_show_the_key() -> None:
    with pytest.raises(ValueError) as info:
        DescriptorBuilder().key(1, data=b"\x5a" * 1100)
    assert "5a5a" not in str(info.value) and "ZZZZ" not in str(info.value)


# Unknown encodings and lengths -----------------------------------------------------------------


def test_unknown_opcodes_and_types_are_reported_not_guessed() -> None:
    words = with_header(
        [
            0x30000000,
            0xC8000000,
            0x22090004,
            0,
            0x602F0004,
            0,
            0x82990000,
            0x83000000,
            0x8210_0A00,
            0x81000006,
            0x801F0000,
        ]
    )
    c = decode(words)
    assert c[1].name == "UNKNOWN" and c[1].fields == {"reason": "unknown opcode 0x06"}
    assert c[2].name == "UNKNOWN" and c[2].fields == {"reason": "unknown opcode 0x19"}
    assert c[3].name == "FIFO_LOAD" and c[3].fields["type_name"] == "unknown"
    assert c[4].name == "FIFO_STORE" and c[4].fields["type_name"] == "unknown"
    assert c[5].fields["alg_name"] == "unknown" and c[5].fields["aai_name"] == "unknown"
    assert c[6].fields["optype"] == "unknown" and "reason" in c[6].fields
    assert c[7].fields["aai_name"] == "unknown"  # AES with AAI 0xA0
    assert c[8].fields["function_name"] == "unknown"  # PK without the function bit
    assert c[9].fields["prot_name"] == "unknown"


def test_unknown_bits_are_kept() -> None:
    fields = only(with_header([0x8210E10D]))  # OPERATION bits 15:13 set
    assert fields["unknown_bits"] == 0xE000 and fields["aai_name"] == "CBC"


def test_command_past_the_header_length_is_unknown() -> None:
    words = [hdr(3), 0x81800006, 0x02000010, P_KEY]  # the KEY's pointer is word 3, length 3
    c = decode(words)
    assert [x.name for x in c] == ["HEADER", "OPERATION", "UNKNOWN"]
    assert c[2].fields == {"reason": "runs past the descriptor length"}
    assert c[2].index == 2 and c[2].words == (0x02000010,)


def test_decoding_stops_at_the_header_length() -> None:
    words = [hdr(2), 0x81800006, 0x81800006, 0x81800006]
    assert [x.name for x in decode(words)] == ["HEADER", "OPERATION"]


def test_immediate_data_past_the_length_is_unknown() -> None:
    words = [hdr(3), 0x00800010, 1, 2, 3, 4]  # 16-byte immediate key in a 3-word descriptor
    assert decode(words)[1].fields == {"reason": "runs past the descriptor length"}


def test_pdb_past_the_length_is_unknown() -> None:
    c = decode([hdr(3, start=5), 1, 2, 0x80180000])
    assert c[1].name == "UNKNOWN" and c[1].fields["reason"] == "runs past the descriptor length"


def test_words_missing_from_the_input_are_reported() -> None:
    c = decode([hdr(9), 0x02000010])
    assert c[1].fields == {"reason": "runs past the end of the words given"}


def test_fragment_without_header_is_decoded_command_by_command() -> None:
    c = decode([0x81800006, 0x620D0100, 0x1000])
    assert [x.name for x in c] == ["OPERATION", "FIFO_STORE"]


def test_shared_descriptor_pointer_in_job_header() -> None:
    b = DescriptorBuilder().header(shared_pointer=0xABC0, start=5).seq_in_ptr(length=3, pointer=9)
    words = b.words()
    assert words[:2] == [0xB0851004, 0xABC0]
    c = decode(words)
    assert c[0].fields["pointer"] == 0xABC0 and c[0].fields["shared"]
    assert [x.name for x in c] == ["HEADER", "SEQ_IN_PTR"]


def test_words_bytes_round_trip() -> None:
    words = RECIPES["aes-gcm-enc"][1]
    assert to_bytes(words, "big")[:4] == bytes.fromhex("b080000e")
    assert to_bytes(words, "little")[:4] == bytes.fromhex("0e0080b0")
    for order in ("big", "little"):
        assert from_bytes(to_bytes(words, order), order) == words
    with pytest.raises(ValueError, match="multiple of 4"):
        from_bytes(b"\x00" * 5)
    with pytest.raises(ValueError, match="byteorder"):
        to_bytes(words, "middle")
    with pytest.raises(ValueError, match="word 1"):
        decode([hdr(2), 1 << 32])


# PDB recognition ------------------------------------------------------------------------------

PDBS = {
    # layout: (fields, OPERATION builder call, protocol name)
    "rsa-public": (
        dict(e_len=3, n_len=256, f=0x10, g=0x20, n=0x30, e=0x40, f_len=256),
        ("RSAENC_PUBKEY", {}),
        "RSAENC_PUBKEY",
    ),
    "rsa-private-form1": (
        dict(d_len=256, n_len=256, g=1, f=2, n=3, d=4),
        ("RSADEC_PRVKEY", {"form": 1}),
        "RSADEC_PRVKEY",
    ),
    "rsa-private-form2": (
        dict(d_len=256, n_len=256, g=1, f=2, d=3, p=4, q=5, tmp1=6, tmp2=7, q_len=128, p_len=128),
        ("RSADEC_PRVKEY", {"form": 2}),
        "RSADEC_PRVKEY",
    ),
    "rsa-private-form3": (
        dict(n_len=256, g=1, f=2, c=3, p=4, q=5, dp=6, dq=7, tmp1=8, tmp2=9, q_len=128, p_len=128),
        ("RSADEC_PRVKEY", {"form": 3}),
        "RSADEC_PRVKEY",
    ),
    "ecdsa-sign": (
        dict(l_len=32, n_len=32, q=1, r=2, g=3, s=4, f=5, c=6, d=7, ab=8),
        ("DSASIGN", {"flags": ("ECC",)}),
        "DSASIGN",
    ),
    "ecdsa-verify": (
        dict(l_len=66, n_len=66, q=1, r=2, g=3, w=4, f=5, c=6, d=7, tmp=8, ab=9),
        ("DSAVERIFY", {"flags": ("ECC",)}),
        "DSAVERIFY",
    ),
    "ecdh": (
        dict(l_len=48, n_len=48, q=1, r=2, w=3, s=4, z=5, ab=6),
        ("DH", {"flags": ("ECC",)}),
        "DH",
    ),
    "ff-dh": (dict(l_len=256, n_len=32, q=1, r=2, w=3, s=4, z=5), ("DH", {}), "DH"),
    "ecc-keypair": (
        dict(l_len=32, n_len=32, q=1, r=2, g=3, s=4, w=5, ab=6),
        ("PUBLICKEYPAIR", {"flags": ("ECC",)}),
        "PUBLICKEYPAIR",
    ),
}


@pytest.mark.parametrize("long_pointers", [False, True], ids=["ptr32", "ptr64"])
@pytest.mark.parametrize("layout", list(PDBS))
def test_pdb_is_named_by_the_protocol_that_follows(layout: str, long_pointers: bool) -> None:
    fields, (protid, kw), prot_name = PDBS[layout]
    if long_pointers:
        fields = {
            k: (v << 32 | v)
            if k not in ("l_len", "n_len", "e_len", "d_len", "f_len", "p_len", "q_len")
            else v
            for k, v in fields.items()
        }
    b = DescriptorBuilder(long_pointers=long_pointers).pdb(layout, **fields)
    words = b.protocol(protid, **kw).words()
    commands = decode(words, long_pointers=long_pointers)
    pdb = commands[1]
    assert commands[0].fields["start"] == 1 + len(pdb.words)
    assert pdb.name == "PDB" and pdb.fields["protocol"] == prot_name
    assert pdb.fields["layout"] == layout and pdb.fields["fields"] == fields
    assert commands[2].name == "OPERATION"
    # the same words read with the other pointer size do not fit the layout: left unnamed
    other = decode(words, long_pointers=not long_pointers)
    assert other[1].fields["layout"] is None and other[1].fields["fields"] == {}


def test_pdb_words_match_the_brief_layout() -> None:
    words = (
        DescriptorBuilder()
        .pdb("ecdsa-sign", l_len=32, n_len=32, q=1, r=2, g=3, s=4, f=5, c=6, d=7, ab=8)
        .protocol("DSASIGN", flags=("ECC",))
        .words()
    )
    assert words == [0xB08A000B, 32 << 7 | 32, 1, 2, 3, 4, 5, 6, 7, 8, 0x80150002]
    rsa = DescriptorBuilder().pdb("rsa-public", e_len=3, n_len=256, f=1, g=2, n=3, e=4, f_len=256)
    assert rsa.protocol("RSAENC_PUBKEY").words()[1] == 3 << 12 | 256


def test_pdb_that_does_not_match_is_left_unnamed() -> None:
    # ECDSA sign PDB one pointer short
    c = decode([hdr(10, start=9), 32 << 7 | 32, 1, 2, 3, 4, 5, 6, 7, 0x80150002])
    assert c[1].fields == {
        "words": (32 << 7 | 32, 1, 2, 3, 4, 5, 6, 7),
        "protocol": "DSASIGN",
        "layout": None,
        "fields": {},
    }
    # built-in curve selector (PD bit): a layout the brief does not give, not guessed
    c = decode([hdr(7, start=6), 1 << 22 | 2 << 7, 4, 5, 6, 7, 0x80150002])
    assert c[1].fields["layout"] is None and c[1].fields["protocol"] == "DSASIGN"
    # no protocol OPERATION follows
    c = decode([hdr(4, start=3), 0x3100, 0x1, 0x81800006])
    assert c[1].fields["protocol"] is None and c[1].fields["layout"] is None
    # DSA over finite fields (no ECC bit): not in the brief
    c = decode([hdr(10, start=9), 256 << 7 | 32, 1, 2, 3, 4, 5, 6, 7, 0x80150000])
    assert c[1].fields["layout"] is None
