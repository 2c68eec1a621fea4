"""`caam disasm`: text and JSON disassembly of descriptors, from Python and the command line."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from cryptoffload.caam.desc.builder import DescriptorBuilder
from cryptoffload.caam.desc.decoder import decode
from cryptoffload.caam.desc.disasm import disassemble_text, format_command, parse_words, to_json
from cryptoffload.tools.cli import main

GCM_DEC = (
    "b080000e 02200010 00001000 8210090e 2221000c 00002000 22310014 00005000 "
    "60300040 00004000 22110040 00003000 223a0010 00006000"
)
GCM_DEC_TEXT = """\
  0  b080000e  HEADER         start=0 length=14 one
  1  02200010  KEY            class=1 dest=class-key length=16 pointer=0x00001000 nwb
  3  8210090e  OPERATION      optype=class1 alg=AES(0x10) aai=GCM(0x90) state=initfinal(3) icv
  4  2221000c  FIFO_LOAD      class=1 type=IV(0x21) length=12 pointer=0x00002000 flush1
  6  22310014  FIFO_LOAD      class=1 type=AAD(0x31) length=20 pointer=0x00005000 flush1
  8  60300040  FIFO_STORE     class=0 type=MESSAGE_DATA(0x30) length=64 pointer=0x00004000
 10  22110040  FIFO_LOAD      class=1 type=MSG(0x11) length=64 pointer=0x00003000 flush1
 12  223a0010  FIFO_LOAD      class=1 type=ICV(0x3a) length=16 pointer=0x00006000 last1
"""


def words_of(text: str) -> list[int]:
    return [int(t, 16) for t in text.split()]


def test_text_names_every_field_of_a_recipe() -> None:
    assert disassemble_text(words_of(GCM_DEC)) == GCM_DEC_TEXT


def test_text_of_rng_instantiate_shows_immediate_data_and_jumps() -> None:
    text = disassemble_text(
        words_of("b0800007 82500004 a2000001 10880004 00000001 82501000 a2800000")
    )
    lines = text.splitlines()
    assert "aai=SH0(0x0) state=init(1)" in lines[1]
    assert lines[2].endswith(
        "JUMP           class=1 type=local test=all(0) condition=0x00 offset=1"
    )
    assert "reg=clear-written(0x8) offset=0 length=4 data=00000001 imm" in lines[3]
    assert "aai=SH0|SK(0x100) state=update(0)" in lines[4]
    assert "type=halt" in lines[5]


def test_text_of_a_pdb_names_its_fields() -> None:
    words = (
        DescriptorBuilder()
        .pdb("rsa-public", e_len=3, n_len=256, f=0x10, g=0x20, n=0x30, e=0x40, f_len=256)
        .protocol("RSAENC_PUBKEY")
        .words()
    )
    lines = disassemble_text(words).splitlines()
    assert lines[1] == (
        "  1  00003100  PDB            protocol=RSAENC_PUBKEY layout=rsa-public e_len=3 n_len=256 "
        "f=0x00000010 g=0x00000020 n=0x00000030 e=0x00000040 f_len=256"
    )
    assert lines[2].endswith(
        "OPERATION      optype=protocol protocol=RSAENC_PUBKEY(0x18) protinfo=0x0"
    )


def test_unknown_encodings_are_printed_as_such() -> None:
    text = disassemble_text([0xB0800005, 0x30000000, 0x8210E10D, 0x22090000, 0])
    lines = text.splitlines()
    assert lines[1] == '  1  30000000  UNKNOWN        reason="unknown opcode 0x06" words=0x30000000'
    assert "unknown_bits=0xe000" in lines[2]
    assert "type=unknown(0x9)" in lines[3]


def test_notes_for_short_input_extra_words_and_no_header() -> None:
    assert "; the header says 9 words, only 2 given" in disassemble_text([0xB0800009, 0x81800006])
    assert "; 1 word(s) after the header's length not decoded" in disassemble_text(
        [0xB0800002, 0x81800006, 0x81800006]
    )
    text = disassemble_text([0x81800006])
    assert "first word is not a header" in text
    past = disassemble_text([0xB0800002, 0x02000010, 0x1000])
    assert 'UNKNOWN        reason="runs past the descriptor length" words=0x02000010' in past


def test_immediate_key_bytes_are_hidden_unless_asked_for() -> None:
    words = [0xB0800003, 0x02800004, 0xA1B2C3D4]
    command = decode(words)[1]
    assert "a1b2c3d4" not in format_command(command)
    assert "<4 key bytes hidden: --show-keys>" in format_command(command)
    assert "data=a1b2c3d4" in format_command(command, show_keys=True)
    assert "a1b2c3d4" not in repr(command)
    hidden = to_json(decode(words))[1]
    assert "a1b2c3d4" not in json.dumps(hidden) and hidden["words"] == ["0x02800004", None]
    assert to_json(decode(words), show_keys=True)[1]["fields"]["data"] == "a1b2c3d4"


def test_immediate_load_into_a_key_register_is_hidden_too() -> None:
    words = [0xB0800003, 0x12C00004, 0xA1B2C3D4]  # LOAD class 1, IMM, key register, 4 bytes
    command = decode(words)[1]
    assert command.fields["reg_name"] == "key"
    assert "a1b2c3d4" not in disassemble_text(words)


def test_show_keys_flag_on_the_command_line(capsys) -> None:
    from cryptoffload.tools import cli

    assert cli.main(["caam", "disasm", "b0800003", "02800004", "a1b2c3d4"]) == 0
    assert "a1b2c3d4" not in capsys.readouterr().out
    assert cli.main(["caam", "disasm", "--show-keys", "b0800003", "02800004", "a1b2c3d4"]) == 0
    assert "data=a1b2c3d4" in capsys.readouterr().out


def test_json_form() -> None:
    commands = decode(words_of("b0800006 10880004 00000001 82500000 60340020 00004000"))
    out = to_json(commands)
    json.dumps(out)  # serialisable as is
    assert out[0] == {
        "index": 0,
        "name": "HEADER",
        "words": ["0xb0800006"],
        "fields": {
            "start": 0,
            "length": 6,
            "rsls": False,
            "dnr": False,
            "one": True,
            "zro": False,
            "trusted": False,
            "make_trusted": False,
            "shared": False,
            "reverse": False,
        },
    }
    assert out[1]["words"] == ["0x10880004", "0x00000001"]
    assert (
        out[1]["fields"]["data"] == "00000001" and out[1]["fields"]["reg_name"] == "clear-written"
    )
    assert out[3]["name"] == "FIFO_STORE" and out[3]["fields"]["type_name"] == "RNGSTORE"


def test_json_pdb_words_are_hex_and_fields_nested() -> None:
    words = (
        DescriptorBuilder()
        .pdb("ff-dh", l_len=256, n_len=32, q=1, r=2, w=3, s=4, z=5)
        .protocol("DH")
        .words()
    )
    pdb = to_json(decode(words))[1]
    assert pdb["fields"]["words"] == ["0x00008020", *[f"0x{i:08x}" for i in range(1, 6)]]
    assert pdb["fields"]["fields"] == {
        "l_len": 256,
        "n_len": 32,
        "q": 1,
        "r": 2,
        "w": 3,
        "s": 4,
        "z": 5,
    }
    assert pdb["fields"]["layout"] == "ff-dh" and pdb["fields"]["protocol"] == "DH"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("b0800002 81800006", [0xB0800002, 0x81800006]),
        ("0xB0800002,0x81800006", [0xB0800002, 0x81800006]),
        ("b0800002,\n  81800006 # modexp\n", [0xB0800002, 0x81800006]),
        ("0X1 , 2", [1, 2]),
    ],
)
def test_parse_words(text: str, words: list[int]) -> None:
    assert parse_words(text) == words


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("b0800002 xyz", r"word 1 \('xyz'\) is not a hex number"),
        ("0x", "not a hex number"),
        ("-5", "not a hex number"),
        ("1ffffffff", "does not fit 32 bits"),
        ("  # nothing\n", "no descriptor words"),
    ],
)
def test_parse_words_rejects_malformed_input(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_words(text)


# The command line ---------------------------------------------------------------------------------


def test_cli_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["caam", "disasm", *GCM_DEC.split()]) == 0
    assert capsys.readouterr().out == GCM_DEC_TEXT


def test_cli_json_long_pointers_and_little_endian(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["caam", "disasm", "--json", "--long-pointers", "--byteorder", "little", "--show-keys"]
    assert main([*args, "b0800006,02800003,00ccbbaa,22100000,00000001,00002000"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [c["name"] for c in out] == ["HEADER", "KEY", "FIFO_LOAD"]
    assert out[1]["fields"]["data"] == "aabbcc"
    assert out[2]["fields"]["pointer"] == 0x1_0000_2000


def test_cli_reads_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(GCM_DEC.replace(" ", "\n")))
    assert main(["caam", "disasm", "-"]) == 0
    assert capsys.readouterr().out == GCM_DEC_TEXT
    monkeypatch.setattr(sys, "stdin", io.StringIO("b0800001\n"))
    assert main(["caam", "disasm"]) == 0
    assert "HEADER" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["caam", "disasm", "b0800002", "nothex"],
        ["caam", "disasm", "b0800002", "-"],
        ["caam", "disasm", "123456789"],
    ],
)
def test_cli_malformed_input_exits_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("cryptoffload caam: ")


def test_cli_empty_stdin_exits_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    assert main(["caam", "disasm"]) == 2
    assert "no descriptor words given" in capsys.readouterr().err


def test_cli_needs_a_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["caam"])
    assert info.value.code == 2


def test_module_entry_point_in_a_subprocess() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cryptoffload", "caam", "disasm", "-"],
        input=GCM_DEC,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == GCM_DEC_TEXT
    bad = subprocess.run(
        [sys.executable, "-m", "cryptoffload", "caam", "disasm", "b08000zz"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "is not a hex number" in bad.stderr


# Shared descriptors, MATH, MOVE, DECO registers, SEQ pointer flags ------------------------------

SKCIPHER_DEC = (
    "b8801211 a1004006 02800010 00010203 04050607 08090a0b 0c0d0e0f 1a200010 a1004003 "
    "82100104 a0000002 82101104 a8080b04 a8080a04 2b120000 69300000 5a200010"
)
SKCIPHER_DEC_TEXT = "".join(
    line + "\n"
    for line in (
        "  0  b8801211  SHARED_HEADER  start=0 length=17 share=serial one savectx",
        "  1  a1004006  JUMP           class=0 type=local test=all(0) condition=0x40(SHRD) "
        "offset=6 jsl",
        "  2  02800010  KEY            class=1 dest=class-key length=16 "
        "data=<16 key bytes hidden: --show-keys> imm",
        "  7  1a200010  SEQ_LOAD       class=1 reg=context(0x20) offset=0 length=16",
        "  8  a1004003  JUMP           class=0 type=local test=all(0) condition=0x40(SHRD) "
        "offset=3 jsl",
        "  9  82100104  OPERATION      optype=class1 alg=AES(0x10) aai=CBC(0x10) state=init(1)",
        " 10  a0000002  JUMP           class=0 type=local test=all(0) condition=0x00 offset=2",
        " 11  82101104  OPERATION      optype=class1 alg=AES(0x10) aai=CBC|DK(0x110) state=init(1)",
        " 12  a8080b04  MATH           function=ADD(0x0) src0=SEQINLEN(0x8) src1=MATH0(0x0) "
        "dest=VARSEQOUTLEN(0xb) length=4",
        " 13  a8080a04  MATH           function=ADD(0x0) src0=SEQINLEN(0x8) src1=MATH0(0x0) "
        "dest=VARSEQINLEN(0xa) length=4",
        " 14  2b120000  SEQ_FIFO_LOAD  class=1 type=MSG(0x12) length=0 vlf last1",
        " 15  69300000  SEQ_FIFO_STORE class=0 type=MESSAGE_DATA(0x30) length=0 vlf",
        " 16  5a200010  SEQ_STORE      class=1 reg=context(0x20) offset=0 length=16",
    )
)


def test_text_of_the_kernels_cbc_decrypt_shared_descriptor() -> None:
    assert disassemble_text(words_of(SKCIPHER_DEC)) == SKCIPHER_DEC_TEXT


def test_math_immediates_are_part_of_the_command() -> None:
    # Before MATH was decoded its immediate word read as the next command.
    words = [0xB0800006, 0xA80C4304, 0x0000000D, 0xA8040308, 0x11223344, 0x55667788]
    lines = disassemble_text(words).splitlines()
    assert [line.split()[2] for line in lines] == ["HEADER", "MATH", "MATH"]
    assert lines[1].endswith("src1_imm=0xd")
    assert lines[2].endswith("length=8 src0_imm=0x1122334455667788")
    little = disassemble_text(words, byteorder="little").splitlines()  # low word first there
    assert little[2].endswith("src0_imm=0x5566778811223344")
    ifb = disassemble_text([0xB0800003, 0xAC040308, 0xF7FFFFFF]).splitlines()
    assert ifb[1].endswith("length=8 src0_imm=0xf7ffffff ifb")
    both = disassemble_text([0xB0800004, 0xA8444F04, 1, 2]).splitlines()
    assert both[1].endswith("dest=NONE(0xf) length=4 src0_imm=0x1 src1_imm=0x2")


def test_move_deco_registers_and_flags() -> None:
    words = [0xB080000B, 0x16860300, 0x1E0B0404, 0x79438404, 0x70210002, 0x16860800,
             0xA1000201, 0xF0A00010, 0xF8900000, 0xA0C0000E, 0x82500002]  # fmt: skip
    lines = disassemble_text(words).splitlines()
    assert lines[1].endswith(
        "LOAD           class=3 reg=decoctrl(0x6) offset=3 length=0 data=(empty) "
        "share_change=ok-no-propagate controls=- imm"
    )
    assert lines[2].endswith("SEQ_LOAD       class=3 reg=math3(0xb) offset=4 length=4")
    assert lines[3].endswith(
        "MOVE           aux=0 src=MATH0(0x4) dest=DESCBUF(0x3) offset=132 length=4 waitcomp"
    )
    assert lines[4].endswith(
        "MOVE_LEN       aux=0 src=OUTFIFO(0x2) dest=CLASS2CTX(0x1) offset=0 length_reg=MATH2"
    )
    assert "controls=disable-auto-info-fifo" in lines[5]
    assert lines[6].endswith("condition=0x02(NOP) offset=1 jsl")
    assert lines[7].endswith("SEQ_IN_PTR     flags=PRE|RTO length=16")
    assert lines[8].endswith("SEQ_OUT_PTR    flags=PRE|RST length=0")
    assert "type=halt-user" in lines[9] and "offset=14" in lines[9]
    assert lines[10].endswith("aai=SH0(0x0) state=update(0) pr")  # bit 1 of an RNG: PR, not ICV


def test_job_header_pointing_at_a_shared_descriptor_with_long_pointers() -> None:
    words = [0xB08E1C0B, 0x1, 0x23456780, 0xF1400000, 0, 0x80000010, 80]
    lines = disassemble_text(words, long_pointers=True).splitlines()
    assert lines[0] == (
        "  0  b08e1c0b  HEADER         shared_length=14 length=11 share=defer "
        "pointer=0x123456780 one shared reverse"
    )
    assert lines[1].endswith("flags=SGF|EXT length=80 pointer=0x80000010")


def test_words_not_exactly_8_hex_digits_are_warned_about_one_by_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["caam", "disasm", "b080006", "0x1", "0xa0000000"]) == 0
    _, err = capsys.readouterr()
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert len(warnings) == 2
    assert "word 0 ('b080006') has 7 hex digit(s), not 8: read as 0x0b080006" in warnings[0]
    assert "word 1 ('0x1') has 1 hex digit(s)" in warnings[1]
    assert main(["caam", "disasm", "b0800002", "a0000000"]) == 0
    assert "warning" not in capsys.readouterr().err
