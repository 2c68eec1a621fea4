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
from cryptoffload.caam.workbench import (
    Buffer,
    Ref,
    WorkbenchError,
    parse_buffer,
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
        assert rc == 0 and data["rdsta"] == "0x00000001"
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
