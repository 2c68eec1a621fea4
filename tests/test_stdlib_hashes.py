"""Python's own `hashlib` and `hmac` as an application sees them after `install()` / under `run`:
the algorithms an engine of the provider claims go through it (counted) with Python's objects'
behaviour and errors; the others are Python's own functions, untouched."""

from __future__ import annotations

import _hashlib
import builtins
import copy
import hashlib
import hmac
import io
import json
import subprocess
import sys
import textwrap
import types

import pytest
from doubles import TakeAllEngine

import cryptoffload
from cryptoffload.tools.install import install, uninstall

#: Python's names of the fixed-size hashes cryptoffload has (SHAKE is left to Python).
NAMES = [
    "sha1", "sha224", "sha256", "sha384", "sha512", "sha512_224", "sha512_256",
    "sha3_224", "sha3_256", "sha3_384", "sha3_512", "blake2b", "blake2s", "sm3", "md5",
]  # fmt: skip
#: The hashes hashlib has a named constructor for, among them.
NAMED = ["sha1", "sha224", "sha256", "sha384", "sha512", "sha3_224", "sha3_256", "sha3_384",
         "sha3_512", "md5"]  # fmt: skip
#: Our names of the same hashes (the counters' spelling).
OURS = {n: n.replace("sha512_", "sha512-").replace("sha3_", "sha3-") for n in NAMES}

KEY, MSG = b"k" * 20, b"packet" * 11


def app(source: str, importer: str = "someapp") -> dict:
    """Run ``source`` as the module ``importer`` would; its namespace."""
    namespace = {"__name__": importer, "__builtins__": builtins}
    exec(compile(source, f"<{importer}>", "exec"), namespace)
    return namespace


@pytest.fixture
def installed():
    """install(engines) for a test, undone after it (hook and default provider)."""

    def do(engines, **kwargs):
        return install(engines, **kwargs)

    try:
        yield do
    finally:
        uninstall()
        cryptoffload.set_default_provider(None)


@pytest.fixture
def passthrough(installed):
    provider = installed(["passthrough"])
    ns = app("import hashlib, hmac")
    return provider, ns["hashlib"], ns["hmac"]


def ops(provider, alg: str, engine: str = "passthrough") -> int:
    return provider.counters.snapshot().get(engine, {}).get(alg, {}).get("ops", 0)


def outcome(call):
    """What ``call()`` gives: its value, or its exception's class and words."""
    try:
        return call()
    except Exception as exc:
        return type(exc), str(exc)


# -- the application's hashlib under an engine that claims every hash --------------------------


@pytest.mark.parametrize("name", NAMES)
def test_hashlib_new_of_a_claimed_hash_is_pythons_answer_and_counted(passthrough, name):
    provider, app_hashlib, _ = passthrough
    ours, theirs = app_hashlib.new(name, MSG), hashlib.new(name, MSG)
    assert type(ours) is not type(theirs)  # routed, not Python's object
    assert (ours.name, ours.digest_size, ours.block_size) == (
        theirs.name,
        theirs.digest_size,
        theirs.block_size,
    )
    assert ours.hexdigest() == theirs.hexdigest()
    assert ops(provider, OURS[name]) == 1


@pytest.mark.parametrize("name", NAMED)
def test_the_named_constructors_of_claimed_hashes_are_routed(passthrough, name):
    provider, app_hashlib, _ = passthrough
    constructor = getattr(app_hashlib, name)
    assert constructor is not getattr(hashlib, name)
    assert constructor(MSG).digest() == getattr(hashlib, name)(MSG).digest()
    keywords = constructor(string=MSG, usedforsecurity=False)
    assert keywords.digest() == hashlib.new(name, MSG).digest()
    assert ops(provider, OURS[name]) == 2


def test_constructors_kept_as_class_attributes_are_called_as_pythons_are(passthrough):
    provider, app_hashlib, _ = passthrough
    ns = app(
        "import hashlib\n"
        "class Kex:\n"
        "    hash_algo = hashlib.sha256\n"
        "    derive = hashlib.pbkdf2_hmac\n"
        "    def shared(self, data):\n"
        "        return self.hash_algo(data).digest(), self.derive('sha256', data, b's', 2)\n"
    )
    assert ns["Kex"]().shared(MSG) == (
        hashlib.sha256(MSG).digest(),
        hashlib.pbkdf2_hmac("sha256", MSG, b"s", 2),
    )
    assert ns["Kex"].hash_algo is app_hashlib.sha256  # no method made of it, as of Python's
    assert ops(provider, "sha256") == ops(provider, "pbkdf2-hmac-sha256") == 1


def test_a_hash_objects_copy_and_digests_continue_independently(passthrough):
    provider, app_hashlib, _ = passthrough
    h = app_hashlib.sha256(b"a")
    twin = h.copy()
    assert h.digest() == hashlib.sha256(b"a").digest()  # digest does not end the message
    h.update(b"b")
    twin.update(memoryview(b"c"))
    assert h.hexdigest() == hashlib.sha256(b"ab").hexdigest()
    assert twin.hexdigest() == hashlib.sha256(b"ac").hexdigest()
    assert twin.copy().name == "sha256"
    assert ops(provider, "sha256") == 3
    with pytest.raises(TypeError, match="cannot pickle"):
        copy.copy(h)  # as Python's: a shallow copy would share the running state


def test_a_buffer_of_wider_items_is_hashed_and_counted_as_its_bytes(passthrough):
    import array

    provider, app_hashlib, _ = passthrough
    items = array.array("I", range(10))
    assert app_hashlib.sha256(items).digest() == hashlib.sha256(items).digest()
    assert provider.counters.snapshot()["passthrough"]["sha256"]["bytes"] == 40


@pytest.mark.parametrize(
    "source",
    [
        "hashlib.sha256('text')",
        "hashlib.sha256(None)",
        "hashlib.sha256().update(5)",
        "hashlib.new('sha512', 'text')",
        "hashlib.new('no-such-hash')",
        "hashlib.new('sha256', b'', bogus=1)",
        "hashlib.pbkdf2_hmac('sha256', b'p', b's', 0)",
        "hashlib.pbkdf2_hmac('sha256', b'p', b's', 1, 0)",
        "hashlib.pbkdf2_hmac('sha256', 'p', b's', 1)",
        "hashlib.pbkdf2_hmac('sha256', b'p', b's', 1.5)",
        "hashlib.pbkdf2_hmac('no-such-hash', b'p', b's', 1)",
        "hmac.new(b'key')",
        "hmac.new('key', b'', 'sha256')",
        "hmac.new(memoryview(b'key'), b'', 'sha256')",
        "hmac.new(b'key', 'text', 'sha256')",
        "hmac.new(b'key', b'', 'no-such-hash')",
        "hmac.new(b'key', b'', 'sha256').update(5)",
        "hmac.digest(b'key', 'text', 'sha256')",
        "hmac.digest('key', b'', 'sha256')",
    ],
)
def test_bad_input_is_pythons_error(passthrough, source):
    _, app_hashlib, app_hmac = passthrough
    mine = outcome(lambda: eval(source, {"hashlib": app_hashlib, "hmac": app_hmac}))
    pythons = outcome(lambda: eval(source, {"hashlib": hashlib, "hmac": hmac}))
    assert isinstance(pythons, tuple)  # every case is an error in Python
    assert mine == pythons


def test_other_spellings_python_takes_are_routed_and_named_as_python_names_them(passthrough):
    provider, app_hashlib, app_hmac = passthrough
    for spelling in ("SHA256", "sha-256", "SHA2-256"):
        h = app_hashlib.new(spelling, MSG)
        assert (h.name, h.digest()) == ("sha256", hashlib.sha256(MSG).digest())
        assert app_hmac.new(KEY, MSG, spelling).name == "hmac-sha256"
    assert ops(provider, "sha256") == 3
    assert ops(provider, "hmac-sha256") == 0  # made, never finalized


def test_hashes_cryptoffload_does_not_have_stay_pythons(passthrough):
    _, app_hashlib, _ = passthrough
    assert app_hashlib.shake_128 is hashlib.shake_128
    assert app_hashlib.blake2b is hashlib.blake2b  # a class with parameters of its own
    assert type(app_hashlib.new("ripemd160")) is type(hashlib.new("ripemd160"))
    keyed = app_hashlib.new("blake2b", MSG, digest_size=16, key=KEY)
    assert keyed.digest() == hashlib.blake2b(MSG, digest_size=16, key=KEY).digest()
    assert app_hashlib.scrypt is hashlib.scrypt


def test_file_digest_by_name_and_by_constructor_is_routed(passthrough, tmp_path):
    provider, app_hashlib, _ = passthrough
    path = tmp_path / "f.bin"
    path.write_bytes(MSG * 1000)
    with open(path, "rb") as f:
        by_name = app_hashlib.file_digest(f, "sha256")
    by_constructor = app_hashlib.file_digest(io.BytesIO(MSG), app_hashlib.sha512)
    assert by_name.hexdigest() == hashlib.sha256(MSG * 1000).hexdigest()
    assert by_constructor.digest() == hashlib.sha512(MSG).digest()
    assert ops(provider, "sha256") == ops(provider, "sha512") == 1


@pytest.mark.parametrize("name", NAMES)
def test_pbkdf2_hmac_of_a_claimed_hash_is_pythons_answer_and_counted(passthrough, name):
    provider, app_hashlib, _ = passthrough
    for dklen in (None, 5, 70):
        ours = app_hashlib.pbkdf2_hmac(name, b"password", bytearray(b"salt"), 3, dklen)
        assert ours == hashlib.pbkdf2_hmac(name, b"password", b"salt", 3, dklen)
    assert ops(provider, f"pbkdf2-hmac-{OURS[name]}") == 3


# -- the application's hmac ---------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_hmac_of_a_claimed_hash_is_pythons_answer_and_counted(passthrough, name):
    provider, _, app_hmac = passthrough
    ours, theirs = app_hmac.new(KEY, MSG, name), hmac.new(KEY, MSG, name)
    assert (ours.name, ours.digest_size, ours.block_size) == (
        theirs.name,
        theirs.digest_size,
        theirs.block_size,
    )
    assert ours.digest() == theirs.digest()
    assert app_hmac.digest(KEY, MSG, name) == hmac.digest(KEY, MSG, name)
    assert ops(provider, f"hmac-{OURS[name]}") == 2


def test_hmac_takes_every_digestmod_python_takes(passthrough):
    provider, app_hashlib, app_hmac = passthrough
    expected = hmac.new(KEY, MSG, "sha256").digest()
    with_module = types.ModuleType("somehash")
    with_module.new = hashlib.sha256
    forms = {
        "name": "sha256",
        "the application's constructor": app_hashlib.sha256,
        "python's constructor": _hashlib.openssl_sha256,
        "a module with new": with_module,
    }
    for form, digestmod in forms.items():
        assert app_hmac.new(KEY, MSG, digestmod=digestmod).digest() == expected, form
        assert app_hmac.digest(KEY, MSG, digestmod) == expected, form
    blake = app_hmac.new(KEY, MSG, hashlib.blake2b)
    assert (blake.name, blake.digest()) == ("hmac-blake2b", hmac.new(KEY, MSG, "blake2b").digest())
    assert ops(provider, "hmac-sha256") == 6  # the module's new is Python's: not counted
    assert ops(provider, "hmac-blake2b") == 1


def test_an_hmac_objects_copy_continues_independently_and_is_pythons_hmac(passthrough):
    provider, app_hashlib, app_hmac = passthrough
    h = app_hmac.new(KEY, digestmod=app_hashlib.sha384)
    assert isinstance(h, hmac.HMAC)
    h.update(b"a")
    twin = h.copy()
    assert h.hexdigest() == hmac.new(KEY, b"a", "sha384").hexdigest()
    h.update(b"b")
    twin.update(bytearray(b"c"))
    assert h.digest() == hmac.new(KEY, b"ab", "sha384").digest()
    assert twin.digest() == hmac.new(KEY, b"ac", "sha384").digest()
    assert (twin.name, twin.digest_size, twin.block_size) == ("hmac-sha384", 48, 128)
    assert ops(provider, "hmac-sha384") == 3


def test_keys_of_every_length_python_takes_give_pythons_tag(passthrough):
    _, _, app_hmac = passthrough
    for key in (b"", b"k", bytes(64), bytes(65), bytearray(200)):
        assert app_hmac.new(key, MSG, "sha256").digest() == hmac.new(key, MSG, "sha256").digest()


def test_compare_digest_is_pythons(passthrough):
    _, _, app_hmac = passthrough
    assert app_hmac.compare_digest is hmac.compare_digest


def test_calling_the_hmac_class_is_routed_as_paramiko_calls_it(passthrough):
    provider, app_hashlib, app_hmac = passthrough
    tag = app_hmac.HMAC(KEY, MSG, app_hashlib.sha1).digest()
    assert tag == hmac.HMAC(KEY, MSG, hashlib.sha1).digest()
    assert ops(provider, "hmac-sha1") == 1
    unclaimed = app_hmac.HMAC(KEY, MSG, digestmod="ripemd160")
    assert type(unclaimed) is hmac.HMAC
    assert unclaimed.digest() == hmac.new(KEY, MSG, "ripemd160").digest()
    for obj in (unclaimed, app_hmac.HMAC(KEY, MSG, "sha1")):
        assert isinstance(obj, app_hmac.HMAC) and isinstance(obj, hmac.HMAC)
    assert not isinstance(b"", app_hmac.HMAC)
    assert issubclass(app_hmac.HMAC, hmac.HMAC)


def test_a_class_derived_from_the_hmac_class_is_pythons_hmac(passthrough):
    provider, _, app_hmac = passthrough
    derived = app("import hmac\nclass Mine(hmac.HMAC):\n    pass\n")["Mine"]
    assert derived.__mro__[1] is app_hmac.HMAC
    obj = derived(KEY, MSG, "sha256")
    assert type(obj) is derived and isinstance(obj, hmac.HMAC)
    assert not isinstance(hmac.new(KEY, MSG, "sha256"), derived)
    assert obj.digest() == hmac.new(KEY, MSG, "sha256").digest()
    assert ops(provider, "hmac-sha256") == 0


def test_a_python_hmac_given_a_routed_constructor_gives_pythons_tag(passthrough):
    _, app_hashlib, _ = passthrough
    assert hmac.new(KEY, MSG, app_hashlib.sha256).digest() == hmac.new(KEY, MSG, "sha256").digest()


def test_an_ssh_mac_loop_is_counted_packet_by_packet(passthrough):
    provider, _, _ = passthrough
    ns = app(
        "import hmac\nfrom hashlib import sha256\n"
        "tags = [hmac.new(b'k' * 32, seq.to_bytes(4, 'big') + b'p' * 48, sha256).digest()"
        " for seq in range(100)]\n"
    )
    expected = [
        hmac.new(b"k" * 32, seq.to_bytes(4, "big") + b"p" * 48, "sha256").digest()
        for seq in range(100)
    ]
    assert ns["tags"] == expected
    assert ops(provider, "hmac-sha256") == 100
    assert provider.counters.snapshot()["passthrough"]["hmac-sha256"]["bytes"] == 5200


# -- deciding per algorithm when install builds the provider ----------------------------------


def test_with_no_engine_claiming_the_application_gets_pythons_own_modules(installed):
    installed(["software"])
    ns = app("import hashlib, hmac\nfrom hashlib import sha256")
    assert ns["hashlib"] is hashlib and ns["hmac"] is hmac
    assert ns["sha256"] is _hashlib.openssl_sha256


def test_only_the_claimed_hashes_are_routed(installed):
    engine = TakeAllEngine(algorithms={"sha256", "hmac-sha512"})
    provider = installed([engine], policy=cryptoffload.Policy(min_size={"*": 0}))
    ns = app("import hashlib, hmac")
    app_hashlib, app_hmac = ns["hashlib"], ns["hmac"]
    assert app_hashlib.sha256 is not hashlib.sha256
    assert app_hashlib.md5 is _hashlib.openssl_md5
    assert app_hashlib.pbkdf2_hmac is hashlib.pbkdf2_hmac
    assert type(app_hashlib.new("sha384")) is _hashlib.HASH
    assert type(app_hmac.new(KEY, MSG, "sha256")) is hmac.HMAC
    app_hashlib.new("sha256", MSG).digest()
    app_hmac.new(KEY, MSG, "sha512").digest()
    assert ops(provider, "sha256", "takeall") == ops(provider, "hmac-sha512", "takeall") == 1
    assert set(provider.counters.snapshot()["takeall"]) == {"sha256", "hmac-sha512"}


def test_installing_again_decides_again(installed):
    installed(["passthrough"])
    assert app("import hashlib")["hashlib"] is not hashlib
    installed(["software"])
    assert app("import hashlib")["hashlib"] is hashlib


def test_uninstall_gives_the_application_pythons_modules_back(installed):
    installed(["passthrough"])
    uninstall()
    ns = app("import hashlib, hmac")
    assert ns["hashlib"] is hashlib and ns["hmac"] is hmac


# -- under `cryptoffload run` -------------------------------------------------------------------

PROGRAM = textwrap.dedent(
    """
    import hashlib, hmac, json, sys
    from hashlib import sha256

    h = hashlib.sha256(b"abc")
    twin = h.copy()
    twin.update(b"def")
    out = {
        "sha256": hashlib.sha256(b"abc").hexdigest(),
        "sha512": hashlib.new("sha512", b"x" * 1000).hexdigest(),
        "copy": [h.hexdigest(), twin.hexdigest()],
        "hmac-name": hmac.new(b"k", b"m", "sha256").hexdigest(),
        "hmac-constructor": hmac.new(b"k", digestmod=hashlib.sha256).hexdigest(),
        "hmac-digest": hmac.digest(b"k", b"m", "sha256").hex(),
        "ssh": [hmac.new(b"k" * 32, n.to_bytes(4, "big") + b"p" * 48, sha256).hexdigest()
                for n in range(10)],
        "untouched": [hashlib.sha256 is __import__("_hashlib").openssl_sha256,
                      hmac.new is sys.modules["hmac"].new],
    }
    print(json.dumps(out))
    """
)


def expected_program_output() -> dict:
    h = hashlib.sha256(b"abc")
    return {
        "sha256": h.hexdigest(),
        "sha512": hashlib.sha512(b"x" * 1000).hexdigest(),
        "copy": [h.hexdigest(), hashlib.sha256(b"abcdef").hexdigest()],
        "hmac-name": hmac.new(b"k", b"m", "sha256").hexdigest(),
        "hmac-constructor": hmac.new(b"k", b"", "sha256").hexdigest(),
        "hmac-digest": hmac.digest(b"k", b"m", "sha256").hex(),
        "ssh": [
            hmac.new(b"k" * 32, n.to_bytes(4, "big") + b"p" * 48, "sha256").hexdigest()
            for n in range(10)
        ],
    }


def run(tmp_path, *args: str) -> tuple[dict, dict]:
    script = tmp_path / "app.py"
    script.write_text(PROGRAM)
    counters = tmp_path / "counters.json"
    done = subprocess.run(
        [sys.executable, "-m", "cryptoffload", "run", *args, "--counters", str(counters),
         str(script)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = {row["name"]: row for row in json.loads(counters.read_text())["engines"]}
    return json.loads(done.stdout), rows


def test_under_run_passthrough_the_applications_hashes_and_hmacs_are_pythons_and_counted(
    tmp_path,
):
    out, rows = run(tmp_path, "--engines", "passthrough")
    assert out.pop("untouched") == [False, False]
    assert out == expected_program_output()
    counted = rows["passthrough"]["counters"]
    assert counted["sha256"]["ops"] == 3  # sha256(b"abc").hexdigest(), h's and twin's digests
    assert counted["sha512"] == {"ops": 1, "bytes": 1000, "declined": {}, "faults": 0}
    assert counted["hmac-sha256"]["ops"] == 13


def test_under_run_software_the_applications_hashlib_and_hmac_are_pythons_own(tmp_path):
    out, rows = run(tmp_path, "--engines", "software")
    assert out.pop("untouched") == [True, True]
    assert out == expected_program_output()
    assert not {"sha256", "sha512", "hmac-sha256"} & set(rows["software"]["counters"])


def test_under_run_only_other_packages_the_applications_hashlib_is_pythons(tmp_path):
    out, rows = run(tmp_path, "--engines", "passthrough", "--only", "elsewhere")
    assert out.pop("untouched") == [True, True]
    assert out == expected_program_output()
    assert rows["passthrough"]["counters"] == {}
