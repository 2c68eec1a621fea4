"""`caam run`: descriptors with named buffers run on the model through a job ring, checked against
`cryptography`, hashlib and NIST vectors; status words, exit codes and the JSON shape."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from vectors.loaders import gcm_vectors

from cryptoffload.caam import status
from cryptoffload.caam.desc import sgtable
from cryptoffload.caam.tools.workbench import (
    Buffer,
    Ref,
    WorkbenchError,
    WorkbenchResult,
    parse_buffer,
    parse_table,
    parse_tokens,
    run_descriptor,
)
from cryptoffload.tools.cli import main


def split(text: str) -> list[str]:
    return text.split()


KEY = bytes(range(16))
IV = bytes(range(0xA0, 0xB0))
MSG = b"The CAAM workbench runs descriptors, 64 bytes of message here!!."
# The brief's AES-CBC encrypt recipe, pointers by buffer name; the next IV is stored back to iv.
CBC_WORDS = split(
    "b080000c 02200010 @key 12200010 @iv 82100101 22120040 @msg 60300040 @ct 52200010 @iv"
)
SHA256_WORDS = split("b0800006 8443000d 24140000 @msg 54200020 @digest")


def cbc_encrypt(key: bytes, iv: bytes, msg: bytes) -> bytes:
    enc = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    return enc.update(msg) + enc.finalize()


def cbc_args(*extra: str) -> list[str]:
    return [
        "caam",
        "run",
        *extra,
        "--in",
        f"key=hex:{KEY.hex()}",
        "--in",
        f"iv=hex:{IV.hex()}",
        "--in",
        f"msg=hex:{MSG.hex()}",
        "--out",
        "ct=64",
        *CBC_WORDS,
    ]


def run_cli(capsys: pytest.CaptureFixture[str], args: list[str]) -> tuple[int, str, str]:
    rc = main(args)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("part", ["t2080", "t1040", "imx7d"])
def test_aes_cbc_recipe_matches_cryptography(part: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run_cli(capsys, cbc_args("--part", part))
    want = cbc_encrypt(KEY, IV, MSG)
    assert rc == 0, err
    assert out.splitlines() == [
        "status 0x00000000: ok",
        f"output ct (64 bytes): {want.hex()}",
        f"changed iv (16 bytes): {want[-16:].hex()}",
    ]
    # Input buffers are not echoed: the key and the message appear nowhere.
    assert KEY.hex() not in out + err and MSG.hex() not in out + err


def test_long_pointers_with_a_short_header(capsys: pytest.CaptureFixture[str]) -> None:
    # Each @name became two words but the header still says 12: the FIFO STORE at word 11 runs
    # past the length.
    rc, out, _ = run_cli(capsys, cbc_args("--long-pointers", "--json"))
    data = json.loads(out)
    assert rc == 1 and data["long_pointers"] is True
    assert data["status"] == f"0x{status.deco(status.DECO_HDRLEN, 11):08x}"
    assert len(data["descriptor"]["words"]) == 17
    assert data["notes"] == ["5 word(s) after the header's length not decoded"]


def test_long_pointers_need_a_part_that_has_them(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run_cli(capsys, cbc_args("--long-pointers", "--part", "imx7d"))
    assert rc == 2 and "cannot use long pointers" in err


def test_long_pointer_descriptor_with_the_right_header(capsys: pytest.CaptureFixture[str]) -> None:
    words = ["b0800011", *CBC_WORDS[1:]]  # 12 words + 5 pointer high words
    args = cbc_args("--long-pointers")
    args[-len(CBC_WORDS) :] = words
    rc, out, _ = run_cli(capsys, args)
    assert rc == 0
    assert f"output ct (64 bytes): {cbc_encrypt(KEY, IV, MSG).hex()}" in out


def test_sha256_of_a_file_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    msg = bytes(range(256)) * 3
    path = tmp_path / "msg.bin"
    path.write_bytes(msg)
    words = SHA256_WORDS.copy()
    words[2] = f"{0x24140000 | len(msg):08x}"
    rc, out, _ = run_cli(
        capsys, ["caam", "run", "--in", f"msg=@{path}", "--out", "digest=32", *words]
    )
    assert rc == 0
    assert out.splitlines()[1] == f"output digest (32 bytes): {hashlib.sha256(msg).hexdigest()}"


def test_sha256_of_text_with_an_offset(capsys: pytest.CaptureFixture[str]) -> None:
    words = ["b0800006", "8443000d", "24140003", "@msg+4", "54200020", "@digest"]
    rc, out, _ = run_cli(
        capsys, ["caam", "run", "--in", "msg=text:skipabc", "--out", "digest=32", *words]
    )
    assert rc == 0
    assert hashlib.sha256(b"abc").hexdigest() in out


def gcm_vector() -> dict:
    return next(
        r
        for r in gcm_vectors(limit_per_section=3)
        if r["direction"] == "decrypt"
        and not r["fail"]
        and r["keylen"] == 128
        and r["ivlen"] == 96
        and r["ptlen"] == 128
        and r["aadlen"] == 128
        and r["taglen"] == 128
    )


def gcm_decrypt_args(v: dict, tag: bytes) -> list[str]:
    n = len(v["ct"])
    words = (
        f"b080000e 02200010 @key 8210090e 2221000c @iv 22310010 @aad "
        f"6030{n:04x} @pt 2211{n:04x} @ct 223a0010 @tag"
    )
    bufs = {"key": v["key"], "iv": v["iv"], "aad": v["aad"], "ct": v["ct"], "tag": tag}
    args = ["caam", "run"]
    for name, data in bufs.items():
        args += ["--in", f"{name}=hex:{data.hex()}"]
    return [*args, "--out", f"pt={n}", *words.split()]


def test_gcm_decrypt_of_a_nist_vector(capsys: pytest.CaptureFixture[str]) -> None:
    v = gcm_vector()
    rc, out, _ = run_cli(capsys, gcm_decrypt_args(v, v["tag"]))
    assert rc == 0
    assert f"output pt (16 bytes): {v['pt'].hex()}" in out


def test_gcm_bad_tag_shows_the_ccb_icv_status(capsys: pytest.CaptureFixture[str]) -> None:
    v = gcm_vector()
    bad = bytes([v["tag"][0] ^ 1]) + v["tag"][1:]
    rc, out, _ = run_cli(capsys, gcm_decrypt_args(v, bad))
    word = status.ccb(status.CHA_AES, status.ERR_ICVCHK, 12)
    assert rc == 1
    lines = out.splitlines()
    assert lines[0] == f"status 0x{word:08x}: CCB: AES: ICV check failed (word 12)"
    # The quirk: the plaintext is written before the tag compare fails.
    assert lines[1] == f"output pt (16 bytes): {v['pt'].hex()}"


RNG_WORDS = split("b0800004 82500000 60340020 @rnd")


def test_rng_generate_before_instantiation_is_ccb_0x54(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_cli(
        capsys, ["caam", "run", "--no-rng-instantiate", "--out", "rnd=32", *RNG_WORDS]
    )
    assert rc == 1
    assert out.splitlines()[0] == "status 0x20000154: CCB: RNG: RNG not instantiated (word 1)"
    assert out.splitlines()[1] == f"output rnd (32 bytes): {bytes(32).hex()}"


def test_rng_generate_after_instantiation_is_seeded(capsys: pytest.CaptureFixture[str]) -> None:
    outputs = []
    for seed in ("one", "one", "two"):
        rc, out, _ = run_cli(
            capsys, ["caam", "run", "--seed", seed, "--json", "--out", "rnd=32", *RNG_WORDS]
        )
        data = json.loads(out)
        assert rc == 0 and data["rdsta"] == "0x40000001"  # IF0 | SKVN
        outputs.append(data["outputs"]["rnd"])
    assert outputs[0] == outputs[1] != outputs[2]
    assert outputs[0] != bytes(32).hex()


def test_pkha_modexp(capsys: pytest.CaptureFixture[str]) -> None:
    n = (1 << 127) - 1  # a Mersenne prime: any odd modulus will do
    a, e = 0x1234567890ABCDEF1234567890ABCDEF % n, 0x10001
    nb, ab, eb = n.to_bytes(16, "big"), a.to_bytes(16, "big"), e.to_bytes(3, "big")
    words = split("b080000a 02010003 @e 220c0010 @a 22080010 @n 81800006 620d0010 @b")
    args = ["caam", "run", "--in", f"e=hex:{eb.hex()}", "--in", f"a=hex:{ab.hex()}"]
    args += ["--in", f"n=hex:{nb.hex()}", "--out", "b=16", *words]
    rc, out, _ = run_cli(capsys, args)
    assert rc == 0
    assert f"output b (16 bytes): {pow(a, e, n).to_bytes(16, 'big').hex()}" in out


def test_rsa_public_protocol(capsys: pytest.CaptureFixture[str]) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    pub = key.public_key().public_numbers()
    f = 0xC0FFEE << 900
    nb = pub.n.to_bytes(128, "big")
    eb = pub.e.to_bytes(3, "big")
    # PDB: (e_len << 12) | n_len, f, g, n, e, f_len; then OPERATION RSA encrypt.
    words = f"b0870008 {(3 << 12) | 128:08x} @f @g @n @e {128:08x} 80180000".split()
    args = ["caam", "run", "--in", f"f=hex:{f.to_bytes(128, 'big').hex()}"]
    args += ["--in", f"n=hex:{nb.hex()}", "--in", f"e=hex:{eb.hex()}", "--out", "g=128"]
    rc, out, _ = run_cli(capsys, [*args, "--json", *words])
    data = json.loads(out)
    assert rc == 0, data["status_text"]
    assert data["outputs"]["g"] == pow(f, pub.e, pub.n).to_bytes(128, "big").hex()
    assert data["counters"]["per_cha"] == {"PK": 1}


def test_json_shape(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_cli(capsys, cbc_args("--json", "--disasm"))
    data = json.loads(out)
    want = cbc_encrypt(KEY, IV, MSG)
    assert rc == 0
    assert {"part", "status", "status_text", "outputs", "changed", "counters"} <= set(data)
    assert data["part"] == "t2080" and data["byteorder"] == "big"
    assert data["status"] == "0x00000000" and data["status_text"] == "ok"
    assert data["outputs"] == {"ct": want.hex()}
    assert data["changed"] == {"iv": want[-16:].hex()}
    # The user's job only: the RNG instantiate job before it is not counted.
    assert data["counters"]["jobs"] == 1 and data["counters"]["per_cha"] == {"AES": 1}
    assert data["buffers"]["ct"]["direction"] == "out" and data["buffers"]["ct"]["length"] == 64
    key_addr = data["buffers"]["key"]["address"]
    assert data["descriptor"]["words"][2] == key_addr
    assert [c["name"] for c in data["disasm"]][:3] == ["HEADER", "KEY", "LOAD"]
    assert data["disasm"][1]["fields"]["pointer"] == int(key_addr, 16)
    assert data["notes"] == []
    assert KEY.hex() not in out and MSG.hex() not in out


def test_disasm_text_shows_addresses(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_cli(capsys, cbc_args("--disasm"))
    lines = out.splitlines()
    assert rc == 0
    key_line = next(line for line in lines if line.startswith("buffer key at "))
    addr = key_line.split()[3].rstrip(",")
    assert any("KEY" in line and f"pointer={addr}" in line for line in lines)
    assert lines[3].startswith("descriptor at 0x")


def test_unknown_buffer_name_is_bad_usage(capsys: pytest.CaptureFixture[str]) -> None:
    args = cbc_args()
    args[args.index("@msg")] = "@mgs"
    rc, out, err = run_cli(capsys, args)
    assert rc == 2 and out == ""
    assert "word 7 refers to @mgs" in err and "buffers: key, iv, msg, ct" in err
    assert KEY.hex() not in err


def test_malformed_hex_does_not_echo_the_value(capsys: pytest.CaptureFixture[str]) -> None:
    secret = "00112233445566778899aabbccddeeXX"
    rc, _, err = run_cli(capsys, ["caam", "run", "--in", f"key=hex:{secret}", "b0800001"])
    assert rc == 2 and "not a hex digit at position 30" in err and secret not in err
    rc, _, err = run_cli(capsys, ["caam", "run", "--in", "key=abc", "b0800001"])
    assert rc == 2 and "odd number of hex digits" in err


def test_malformed_word_is_bad_usage(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run_cli(capsys, ["caam", "run", "b0800002", "xyz"])
    assert rc == 2 and "token 1 ('xyz')" in err


def test_unknown_part_lists_the_parts(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run_cli(capsys, ["caam", "run", "--part", "t4240", "b0800001"])
    assert rc == 2
    for name in ("t2080", "t1040", "t2080-nosec", "imx7d"):
        assert name in err


def test_part_without_the_sec(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run_cli(capsys, cbc_args("--part", "t2080-nosec"))
    assert rc == 2 and out == ""
    assert "t2080-nosec has no SEC block (SVR 0x85300011" in err and "nothing ran" in err


def test_header_errors_come_back_as_status(capsys: pytest.CaptureFixture[str]) -> None:
    # A header of length 0: DECO header length error at word 0.
    rc, out, err = run_cli(capsys, ["caam", "run", "b0800000"])
    assert rc == 1
    assert out.splitlines()[0].startswith("status 0x40000013: DECO: descriptor header length")
    # Fewer words than the header says: a note on stderr, and the job's DMA read fails.
    rc, out, err = run_cli(capsys, ["caam", "run", "b0800003", "a2800000"])
    assert "note: the header says 3 words, only 2 given" in err
    assert rc == 1 and "DMA error" in out


def test_words_file_with_comments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "sha.desc"
    path.write_text(
        "b0800006            # header, 6 words\n"
        "8443000d            # SHA-256, init+final\n"
        "24140003, @msg      # FIFO LOAD message, last\n"
        "54200020, @digest   # STORE the digest\n"
    )
    rc, out, _ = run_cli(
        capsys,
        ["caam", "run", "--words-file", str(path), "--in", "msg=text:abc", "--out", "digest=32"],
    )
    assert rc == 0 and hashlib.sha256(b"abc").hexdigest() in out


def test_words_from_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    monkeypatch.setattr(sys, "stdin", io.StringIO(" ".join(RNG_WORDS)))
    rc, out, _ = run_cli(capsys, ["caam", "run", "--out", "rnd=32", "-"])
    assert rc == 0 and out.startswith("status 0x00000000: ok")


def test_words_twice_is_bad_usage(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run_cli(capsys, ["caam", "run", "--words-file", "-", "b0800001"])
    assert rc == 2 and "not both" in err


# The Python API underneath.


def test_buffer_repr_hides_the_data() -> None:
    buf = parse_buffer(f"key=hex:{KEY.hex()}", output=False)
    assert buf == Buffer("key", KEY) and KEY.hex() not in repr(buf) and str(KEY) not in repr(buf)
    assert parse_buffer("ct=0x40", output=True) == Buffer("ct", bytes(64), output=True)


@pytest.mark.parametrize(
    "spec, output, message",
    [
        ("key", False, "no '='"),
        ("9key=00", False, "must be a letter"),
        ("ct=0", True, "size from 1 to"),
        ("ct=0x2000000", True, "got 33554432"),
        ("ct=lots", True, "number of bytes"),
        ("msg=@/nonexistent/file", False, "cannot read /nonexistent/file"),
    ],
)
def test_bad_buffer_specs(spec: str, output: bool, message: str) -> None:
    with pytest.raises(WorkbenchError, match=message):
        parse_buffer(spec, output=output)


def test_tokens() -> None:
    assert parse_tokens("0xb0800002, @a+0x10 # note\n@b") == [0xB0800002, Ref("a", 16), Ref("b")]
    with pytest.raises(WorkbenchError, match=r"token 1 \('xyz'\) is neither a hex word"):
        parse_tokens("b08000 xyz")
    with pytest.raises(WorkbenchError, match="is not @NAME or @NAME"):
        parse_tokens("@a+b+c")
    with pytest.raises(WorkbenchError, match="does not fit 32 bits"):
        parse_tokens("100000000")
    with pytest.raises(WorkbenchError, match="no descriptor words"):
        parse_tokens("# only a comment")


def test_run_descriptor_api() -> None:
    result = run_descriptor(
        "imx7d",
        [0xB0800006, 0x8443000D, 0x24140003, "@msg", 0x54200020, Ref("digest")],
        [Buffer("msg", b"abc"), Buffer.output_of("digest", 32)],
    )
    assert result.ok and result.byteorder == "little"
    assert result.outputs["digest"] == hashlib.sha256(b"abc").digest()
    assert result.changed == {}
    with pytest.raises(WorkbenchError, match="past the end"):
        run_descriptor("t2080", ["b0800002", "@msg+4"], [Buffer("msg", b"abc")])
    with pytest.raises(WorkbenchError, match="given twice"):
        run_descriptor("t2080", ["b0800001"], [Buffer("a", b"1"), Buffer("a", b"2")])


def test_python_m_cryptoffload(tmp_path: Path) -> None:
    key = tmp_path / "key.bin"
    key.write_bytes(KEY)
    cmd = [sys.executable, "-m", "cryptoffload", "caam", "run", "--in", f"key=@{key}"]
    cmd += ["--in", f"iv=hex:{IV.hex()}", "--in", f"msg=hex:{MSG.hex()}", "--out", "ct=64"]
    proc = subprocess.run([*cmd, *CBC_WORDS], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert cbc_encrypt(KEY, IV, MSG).hex() in proc.stdout


# Long outputs: elided on the terminal, whole in JSON and in files.

BIG_MSG = bytes(range(256)) * 4
BIG_CBC_WORDS = split(
    "b080000c 02200010 @key 12200010 @iv 82100101 22120400 @msg 60300400 @ct 52200010 @iv"
)


def big_cbc_args(*extra: str, out: str = "ct=1024") -> list[str]:
    args = ["caam", "run", *extra, "--in", f"key=hex:{KEY.hex()}", "--in", f"iv=hex:{IV.hex()}"]
    return [*args, "--in", f"msg=hex:{BIG_MSG.hex()}", "--out", out, *BIG_CBC_WORDS]


def test_long_buffers_show_their_ends_on_the_terminal_unless_full(
    capsys: pytest.CaptureFixture[str],
) -> None:
    want = cbc_encrypt(KEY, IV, BIG_MSG)
    rc, out, err = run_cli(capsys, big_cbc_args())
    assert rc == 0
    assert out.splitlines()[1] == (
        f"output ct (1024 bytes): {want[:32].hex()} ... (960 bytes not shown) ... "
        f"{want[-32:].hex()}"
    )
    assert "--full prints them whole" in err and want.hex() not in out
    rc, out, err = run_cli(capsys, big_cbc_args("--full"))
    assert rc == 0 and out.splitlines()[1] == f"output ct (1024 bytes): {want.hex()}"
    assert "not shown" not in out + err


def test_json_keeps_long_buffers_whole(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run_cli(capsys, big_cbc_args("--json"))
    data = json.loads(out)
    assert rc == 0 and err == ""
    assert data["outputs"]["ct"] == cbc_encrypt(KEY, IV, BIG_MSG).hex()
    assert data["written"] == {}


def test_out_size_at_file_writes_the_buffer_to_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "ct.bin"
    want = cbc_encrypt(KEY, IV, BIG_MSG)
    rc, out, err = run_cli(capsys, big_cbc_args(out=f"ct=1024@{path}"))
    assert rc == 0 and path.read_bytes() == want
    assert out.splitlines()[1].startswith(f"output ct (1024 bytes, written to {path}): ")
    assert err == ""  # the only long buffer is in a file: no hint needed
    rc, out, _ = run_cli(capsys, big_cbc_args("--json", out=f"ct=1024@{path}"))
    assert json.loads(out)["written"] == {"ct": str(path)}


def test_out_file_is_written_whatever_the_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "x.bin"
    rc, out, _ = run_cli(capsys, ["caam", "run", "--out", f"x=4@{path}", "b0800000"])
    assert rc == 1 and path.read_bytes() == bytes(4)
    assert f"output x (4 bytes, written to {path}): 00000000" in out


def test_out_file_that_cannot_be_written_is_bad_usage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "missing-dir" / "ct.bin"
    rc, _, err = run_cli(capsys, big_cbc_args(out=f"ct=1024@{path}"))
    assert rc == 2 and f"--out ct: cannot write {path}: No such file or directory" in err


@pytest.mark.parametrize(
    "spec, message",
    [
        ("ct=16@", "no file after '@'; expected NAME=SIZE@FILE"),
        ("ct=@out.bin", r"number of bytes \(NAME=SIZE or NAME=SIZE@FILE\), got ''"),
        ("ct=0@out.bin", "size from 1 to"),
    ],
)
def test_bad_out_file_specs(spec: str, message: str) -> None:
    with pytest.raises(WorkbenchError, match=message):
        parse_buffer(spec, output=True)


def test_out_spec_with_a_file() -> None:
    buf = parse_buffer("ct=0x10@dir/ct@1.bin", output=True)
    assert buf == Buffer("ct", bytes(16), output=True, path="dir/ct@1.bin")


# Shared descriptors and S/G tables: what the Linux driver's descriptors need.

MSG48 = MSG[:48]


def kernel_cbc_shared(key: bytes, byteorder: str) -> list[str]:
    """caamalg_desc.c's cbc(aes) encrypt shared descriptor for AES-128 (notes §2.1): the key is
    inline, its bytes in memory order (so its words depend on the part's byte order)."""
    key_words = [f"{int.from_bytes(key[i : i + 4], byteorder):08x}" for i in range(0, 16, 4)]
    return [
        "b880120e",  # SHR HDR SAVECTX SERIAL, 14 words
        "a1004006",  # JUMP SHRD +6: key already loaded
        "02800010",  # KEY class 1 IMM 16
        *key_words,
        "1a200010",  # SEQ LOAD class-1 CONTEXT 16: the IV, from the input sequence
        "82100105",  # OPERATION AES CBC INIT encrypt
        "a8080b04",  # MATH VSOL = SIL + R0
        "a8080a04",  # MATH VSIL = SIL + R0
        "2b120000",  # SEQ FIFO LOAD class 1 VLF MSG|LAST1
        "69300000",  # SEQ FIFO STORE VLF MESSAGE_DATA
        "5a200010",  # SEQ STORE class-1 CONTEXT 16: the next IV, to the output sequence
    ]


def kernel_cbc_job(
    n: int, *, long_pointers: bool, src: str = "@src", dst: str = "@dst"
) -> list[str]:
    """init_skcipher_job: SHARED|REVERSE|DEFER header, SEQ IN/OUT PTR with SGF and EXT."""
    length = f"{n + 16:08x}"
    header = "b08e1c0b" if long_pointers else "b08e1c08"
    return [header, "@shared", "f1400000", src, length, "f9400000", dst, length]


def kernel_cbc_run(part: str, *, long_pointers: bool = False) -> WorkbenchResult:
    order = "little" if part == "imx7d" else "big"
    return run_descriptor(
        part,
        kernel_cbc_job(len(MSG48), long_pointers=long_pointers),
        [Buffer("iv", IV), Buffer("msg", MSG48), Buffer.output_of("ct", len(MSG48))],
        shared=kernel_cbc_shared(KEY, order),
        tables=["src=iv,msg", "dst=ct,iv"],
        long_pointers=long_pointers,
    )


def hexwords(words: list[int], byteorder: str) -> str:
    return "".join(w.to_bytes(4, byteorder).hex() for w in words)


@pytest.mark.parametrize(
    "part, long_pointers, order, len16, len48_fin",
    [
        ("imx7d", False, "little", "10000000", "30000040"),
        ("t2080", False, "big", "00000010", "40000030"),
        ("t2080", True, "big", "00000010", "40000030"),
    ],
)
def test_shared_descriptor_and_sg_table_bytes(
    part: str, long_pointers: bool, order: str, len16: str, len48_fin: str
) -> None:
    result = kernel_cbc_run(part, long_pointers=long_pointers)
    iv, msg, ct = (result.buffers[n][0] for n in ("iv", "msg", "ct"))
    src, dst = result.tables["src"], result.tables["dst"]

    def address(a: int) -> str:  # the 64-bit address: most significant word first (i.MX too)
        return "00000000" + a.to_bytes(4, order).hex()

    # 16-byte entries: address, length (FIN 0x40000000 on the last), offset 0; zeroed up to 4.
    assert src.image.hex() == (
        f"{address(iv)}{len16}00000000{address(msg)}{len48_fin}00000000" + "00" * 32
    )
    assert dst.image.hex() == (
        f"{address(ct)}{'30000000' if order == 'little' else '00000030'}00000000"
        f"{address(iv)}{'10000040' if order == 'little' else '40000010'}00000000" + "00" * 32
    )
    assert [e.final for e in src.entries] == [False, True]
    assert sgtable.decode_table(src.image, order)[:2] == list(src.entries)
    # The shared descriptor: its own region, its words in the part's byte order.
    shared = result.shared_address
    assert shared is not None and len(result.shared_words) == 14
    assert result.shared_image.hex() == hexwords(list(result.shared_words), order)
    assert result.shared_image[:4].hex() == ("0e1280b8" if order == "little" else "b880120e")
    assert result.shared_image[12:28] == KEY  # the inline key: raw bytes in memory order
    # The job: @shared and the tables' addresses, one word each or two (high first).
    n = f"{len(MSG48) + 16:08x}"
    if long_pointers:
        want = (
            f"b08e1c0b 0 {shared:x} f1400000 0 {src.address:x} {n} f9400000 0 {dst.address:x} {n}"
        )
    else:
        want = f"b08e1c08 {shared:x} f1400000 {src.address:x} {n} f9400000 {dst.address:x} {n}"
    assert list(result.words) == [int(w, 16) for w in want.split()]


def test_sg_slices_and_offsets_into_a_table() -> None:
    result = run_descriptor(
        "t2080",
        ["b0800005", "f1400000", "@t+16", "00000010", "a2800000"],
        [Buffer("a", bytes(64)), Buffer.output_of("b", 8)],
        tables=["t=a+8:16, a+0x20, b:0, b"],
    )
    t = result.tables["t"]
    a, b = result.buffers["a"][0], result.buffers["b"][0]
    assert [(e.address, e.length, e.final) for e in t.entries] == [
        (a + 8, 16, False),
        (a + 32, 32, False),
        (b, 0, False),
        (b, 8, True),
    ]
    assert [str(s) for s in t.slices] == ["a+8:16", "a+32:32", "b:0", "b:8"]
    assert len(t.image) == 64  # 4 entries: no padding needed
    assert result.words[2] == t.address + 16
    data = result.to_json()["tables"]["t"]
    assert data["address"] == f"0x{t.address:08x}" and data["bytes"] == t.image.hex()
    assert data["entries"][0] == {
        "buffer": "a",
        "offset": 8,
        "length": 16,
        "address": f"0x{a + 8:08x}",
        "fin": False,
    }


def test_sg_entry_layouts() -> None:
    entry = sgtable.SgEntry(0x1_2345_6780, 16, final=True)
    assert sgtable.encode_entry(entry, "big").hex() == "00000001234567804000001000000000"
    # i.MX: little-endian words, the most significant first.
    assert sgtable.encode_entry(entry, "little").hex() == "01000000806745231000004000000000"
    # Layerscape: the address as one little-endian u64.
    assert (
        sgtable.encode_entry(entry, "little", lsw_first=True).hex()
        == "80674523010000001000004000000000"
    )
    ext = sgtable.SgEntry(0x80000000, 0, extension=True, offset=0x1FFF, bpid=3)
    assert sgtable.encode_entry(ext, "big").hex() == "00000000800000008000000000031fff"
    for order, lsw in (("big", False), ("little", False), ("little", True)):
        image = sgtable.table_bytes([entry, ext], order, lsw_first=lsw)
        assert len(image) == 64
        assert sgtable.decode_table(image, order, lsw_first=lsw)[:2] == [entry, ext]
    assert [sgtable.padded_count(n) for n in (1, 4, 5, 8)] == [4, 4, 8, 8]
    with pytest.raises(ValueError, match="does not fit 30 bits"):
        sgtable.SgEntry(0, 1 << 30)
    with pytest.raises(ValueError, match="at least one entry"):
        sgtable.table_bytes([], "big")


@pytest.mark.parametrize(
    "spec, message",
    [
        ("t", "--sg takes NAME=BUF"),
        ("=a", "no '=' or no name"),
        ("9t=a", "the name must be a letter"),
        ("t=", "--sg t: the table is empty"),
        ("t= , ", "--sg t: the table is empty"),
        ("t=a,", r"entry 1 \(''\) is not BUF\[\+OFF\]\[:LEN\]"),
        ("t=a+x", r"entry 0 \('a\+x'\) is not BUF"),
        ("t=a:-1", r"entry 0 \('a:-1'\) is not BUF"),
        ("t=a+1+2", "is not BUF"),
    ],
)
def test_bad_table_specs(spec: str, message: str) -> None:
    with pytest.raises(WorkbenchError, match=message):
        parse_table(spec)


@pytest.mark.parametrize(
    "tables, message",
    [
        (["t=a,nope"], r"S/G table t: entry 1 \(nope\): no buffer has that name \(buffers: a, b\)"),
        (["t=a+8:9"], r"entry 0 \(a\+8:9\) runs past the end of 'a' \(16 bytes\)"),
        (["t=a+17"], r"entry 0 \(a\+17\) runs past the end of 'a' \(16 bytes\)"),
        (["t=b:5"], r"entry 0 \(b:5\) runs past the end of 'b' \(4 bytes\)"),
        (["t=a", "u=b,t"], "entry 1 names the S/G table 't': chained tables"),
        (["a=b"], "the name 'a' is given twice"),
        (["t=a", "t=b"], "the name 't' is given twice"),
    ],
)
def test_tables_refused_with_clear_errors(tables: list[str], message: str) -> None:
    with pytest.raises(WorkbenchError, match=message):
        run_descriptor(
            "t2080",
            ["b0800001"],
            [Buffer("a", bytes(16)), Buffer.output_of("b", 4)],
            tables=tables,
        )


def test_shared_descriptor_errors() -> None:
    with pytest.raises(WorkbenchError, match=r"shared word 2 refers to @nope.*@shared: the shared"):
        run_descriptor("t2080", ["b0800001"], [Buffer("a", b"1")], shared="b8800003 0 @nope")
    with pytest.raises(WorkbenchError, match="@shared is the shared descriptor's address"):
        run_descriptor("t2080", ["b0800001"], [Buffer("shared", b"1")], shared="b8800001")
    with pytest.raises(WorkbenchError, match="no descriptor words"):
        run_descriptor("t2080", ["b0800001"], shared="# nothing")
    with pytest.raises(WorkbenchError, match="--shared gives the shared descriptor"):
        run_descriptor("t2080", ["b0811802", "@shared"])
    # Without --shared, "shared" is an ordinary buffer name.
    result = run_descriptor("t2080", ["b0800002", "@shared"], [Buffer("shared", b"1")])
    assert result.shared_address is None and result.to_json()["shared"] is None


def test_cli_refuses_bad_tables(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["caam", "run", "--in", "a=hex:00112233", "b0800001"]
    for spec, message in (
        ("t=", "--sg t: the table is empty"),
        ("t=x", "S/G table t: entry 0 (x): no buffer has that name (buffers: a)"),
        ("t=a+2:4", "S/G table t: entry 0 (a+2:4) runs past the end of 'a' (4 bytes)"),
    ):
        rc, out, err = run_cli(capsys, [*base[:2], "--sg", spec, *base[2:]])
        assert rc == 2 and out == "" and message in err


def kernel_cbc_cli(part: str, *extra: str, long_pointers: bool = False) -> list[str]:
    order = "little" if part == "imx7d" else "big"
    args = ["caam", "run", "--part", part, *extra, "--in", f"iv=hex:{IV.hex()}"]
    args += ["--in", f"msg=hex:{MSG48.hex()}", "--out", f"ct={len(MSG48)}"]
    args += ["--sg", "src=iv,msg", "--sg", "dst=ct,iv"]
    args += ["--shared", " ".join(kernel_cbc_shared(KEY, order))]
    if long_pointers:
        args.append("--long-pointers")
    return [*args, *kernel_cbc_job(len(MSG48), long_pointers=long_pointers)]


def test_disasm_shows_the_shared_descriptor_and_the_tables(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, out, err = run_cli(capsys, kernel_cbc_cli("t2080", "--disasm"))
    lines = out.splitlines()
    shared_line = next(i for i, line in enumerate(lines) if line.startswith("shared descriptor"))
    shared_addr = lines[shared_line].split()[3].rstrip(",")
    assert lines[shared_line].endswith(", 14 words")
    job_header = next(line for line in lines if "b08e1c08" in line)
    assert f"pointer={shared_addr}" in job_header
    assert "SHARED_HEADER" in lines[shared_line + 1] and "b880120e" in lines[shared_line + 1]
    assert any("key bytes hidden" in line for line in lines[shared_line:])
    assert KEY.hex() not in out + err
    src = lines.index(next(line for line in lines if line.startswith("table src at ")))
    assert lines[src].endswith(", 4 entries (2 used), 64 bytes")
    assert lines[src + 1].startswith("  entry 0: iv, 16 bytes at 0x")
    assert lines[src + 2].startswith("  entry 1: msg, 48 bytes at 0x")
    assert lines[src + 2].endswith(", fin")
    assert "note:" not in err  # the header and the shared descriptor agree


def test_json_with_a_shared_descriptor(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run_cli(capsys, kernel_cbc_cli("imx7d", "--json", "--disasm"))
    data = json.loads(out)
    assert data["byteorder"] == "little"
    shared = data["shared"]["address"]
    assert data["descriptor"]["words"][1] == shared
    assert data["shared"]["words"][0] == "0xb880120e" and len(data["shared"]["words"]) == 14
    assert data["disasm"][0]["fields"]["pointer"] == int(shared, 16)
    assert data["shared_disasm"][0]["name"] == "SHARED_HEADER"
    assert set(data["tables"]) == {"src", "dst"}
    assert [e["buffer"] for e in data["tables"]["dst"]["entries"]] == ["ct", "iv"]
    assert data["notes"] == []
    assert KEY.hex() not in out


@pytest.mark.parametrize(
    "job, shared, note",
    [
        (
            "b0800001",
            "b8800001",
            "--shared given, but the job header has SHARED (0x1000) clear: it is not run",
        ),
        ("b0811002 80000000", None, "the job header has SHARED set but no --shared descriptor"),
        (
            "b0821002 @shared",
            "b8800001",
            "the job header gives the shared descriptor 2 words (bits 21:16); --shared has 1",
        ),
        ("b0811002 @shared+4", "b8800001", "the job header's pointer (the word after it) is not"),
        ("b0811002 @shared", "b8800002", "shared descriptor: the header says 2 words, only 1"),
    ],
)
def test_notes_on_the_job_header_and_the_shared_descriptor(
    capsys: pytest.CaptureFixture[str], job: str, shared: str | None, note: str
) -> None:
    args = ["caam", "run", *job.split()]
    if shared is not None:
        args += ["--shared", shared]
    _, _, err = run_cli(capsys, args)
    assert f"note: {note}" in err


def test_shared_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "shared.desc"
    path.write_text("b8800002   # SHR HDR, 2 words\na2800000   # HALT\n")
    _, out, _ = run_cli(
        capsys, ["caam", "run", "--shared-file", str(path), "--json", "b0821802", "@shared"]
    )
    data = json.loads(out)
    assert data["shared"]["words"] == ["0xb8800002", "0xa2800000"]
    assert data["descriptor"]["words"][1] == data["shared"]["address"]


def test_shared_file_and_words_both_from_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("b8800001"))
    rc, _, err = run_cli(capsys, ["caam", "run", "--shared-file", "-"])
    assert rc == 2 and "cannot both come from stdin" in err
    monkeypatch.setattr(sys, "stdin", io.StringIO("b8800002 a2800000"))
    rc, out, _ = run_cli(capsys, ["caam", "run", "--shared-file", "-", "--json", "b0800001"])
    assert json.loads(out)["shared"]["words"] == ["0xb8800002", "0xa2800000"]


def test_shared_and_shared_file_together_is_bad_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["caam", "run", "--shared", "b8800001", "--shared-file", "x", "b0800001"])
    assert exc.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


@pytest.mark.parametrize(
    "part, long_pointers", [("imx7d", False), ("t2080", False), ("t1040", False), ("t2080", True)]
)
def test_kernel_shaped_cbc_encrypt_matches_cryptography(
    part: str, long_pointers: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = run_cli(capsys, kernel_cbc_cli(part, long_pointers=long_pointers))
    want = cbc_encrypt(KEY, IV, MSG48)
    assert (
        out.splitlines()
        == [
            "status 0x00000000: ok",
            f"output ct (48 bytes): {want.hex()}",  # written through the dst table
            f"changed iv (16 bytes): {want[-16:].hex()}",  # the next IV, through both tables
        ]
    ), err
    assert rc == 0


def test_kernel_shaped_cbc_encrypt_in_place() -> None:
    # In place, as the kernel lays it out: one table [iv, buf, iv], the input from entry 0 and
    # the output from entry 1 (@t+16); only the last entry has FIN.
    n = len(MSG48)
    result = run_descriptor(
        "t2080",
        kernel_cbc_job(n, long_pointers=False, src="@t", dst="@t+16"),
        [Buffer("iv", IV), Buffer("buf", MSG48)],
        shared=kernel_cbc_shared(KEY, "big"),
        tables=["t=iv,buf,iv"],
    )
    want = cbc_encrypt(KEY, IV, MSG48)
    assert result.status_text == "ok"
    assert result.changed == {"iv": want[-16:], "buf": want}


def test_watchdog_stop_is_named_in_the_status(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_cli(capsys, ["caam", "run", "b0800002", "a0000000"])  # a jump to itself
    assert rc == 1
    assert "status 0x4000011c: DECO: watchdog timer timeout" in out and "error 0x1c" not in out
    assert "watchdog" in status.Status(status.deco(status.DECO_WATCHDOG, 1)).describe()
