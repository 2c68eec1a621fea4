"""The AEAD direct path's twins, compiled and pure Python, take the same decisions and record the
same sizes (cryptoffload.directpath), checked with stand-ins for OpenSSL, the lane and the
ordinary path; and the compiled twin is the one in use wherever it could be built."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import sysconfig
import weakref
from pathlib import Path

import pytest
from cryptography.exceptions import InvalidTag

import cryptoffload
from cryptoffload import directpath

try:
    from cryptoffload import _directpath as compiled
except ImportError:  # built nowhere here: only the pure twin is checked
    compiled = None
else:
    compiled.configure(directpath.CURRENT, directpath.DEFAULT_BOX, InvalidTag)

ROOT = Path(__file__).resolve().parents[1]


class Twin:
    """One implementation's four names."""

    def __init__(self, name: str, size_log, lane_core, aead_core, note_using) -> None:
        self.name = name
        self.SizeLog, self.LaneCore, self.AeadCore = size_log, lane_core, aead_core
        self.note_using = note_using
        lane_class = type("Lane", (lane_core,), {"__slots__": ("alg",)})
        self.Lane = lane_class
        self.Primitive = type(f"{name}Primitive", (aead_core, _Ordinary), {"__slots__": ("seen",)})


class _Ordinary:
    """The primitive's ordinary path: records that it ran, with what."""

    __slots__ = ()

    def _encrypt(self, *args, **kwargs):
        self.seen.append(("_encrypt", args, kwargs))
        return "ordinary"

    def _decrypt(self, *args, **kwargs):
        self.seen.append(("_decrypt", args, kwargs))
        return "ordinary"

    def _encrypt_into(self, *args, **kwargs):
        self.seen.append(("_encrypt_into", args, kwargs))
        return "ordinary"

    def _decrypt_into(self, *args, **kwargs):
        self.seen.append(("_decrypt_into", args, kwargs))
        return "ordinary"


class FakeOpenSSL:
    """Stands in for `cryptography`'s AESGCM: answers tagged by method, or raises ``fail``."""

    def __init__(self, fail: BaseException | None = None) -> None:
        self.fail = fail
        self.calls: list[str] = []

    def _run(self, name: str, result):
        self.calls.append(name)
        if self.fail is not None:
            raise self.fail
        return result

    def encrypt(self, nonce, data, aad):
        return self._run("encrypt", b"E" + data)

    def decrypt(self, nonce, data, aad):
        return self._run("decrypt", b"D" + data)

    def encrypt_into(self, nonce, data, aad, buf):
        buf[:] = b"\x07" * len(buf)  # written before it fails, as OpenSSL's GCM does
        return self._run("encrypt_into", len(buf))

    def decrypt_into(self, nonce, data, aad, buf):
        buf[:] = b"\x07" * len(buf)
        return self._run("decrypt_into", len(buf))


TWINS = [
    pytest.param(
        Twin(
            "pure",
            directpath.PureSizeLog,
            directpath.PureLaneCore,
            directpath.PureAeadCore,
            directpath.pure_note_using,
        ),
        id="pure",
    )
]
if compiled is not None:
    TWINS.append(
        pytest.param(
            Twin(
                "compiled",
                compiled.SizeLog,
                compiled.LaneCore,
                compiled.AeadCore,
                compiled.note_using,
            ),
            id="compiled",
        )
    )

TAG = 16


def make(twin: Twin, software=None, provider=None):
    """A primitive with its own provider on a software-only lane of that provider."""
    provider = provider if provider is not None else object()
    lane = twin.Lane()
    lane.provider = provider
    lane.direct_q = twin.SizeLog()
    lane.direct = lane.direct_q.append
    lane.direct_below, lane.direct_above, lane.direct_room = -1, -1, 8
    prim = twin.Primitive()
    prim.seen = []
    prim._lane, prim._provider = lane, provider
    prim._sw = software if software is not None else FakeOpenSSL()
    prim._tag_length = TAG
    return prim, lane


@pytest.mark.parametrize("twin", TWINS)
def test_an_op_software_takes_runs_in_openssl_and_is_recorded(twin):
    prim, lane = make(twin)
    assert prim.encrypt(b"n" * 12, b"x" * 64, None) == b"E" + b"x" * 64
    assert prim.decrypt(b"n" * 12, b"y" * 80, b"aad") == b"D" + b"y" * 80
    buf = bytearray(64 + TAG)
    assert prim.encrypt_into(b"n" * 12, b"x" * 64, None, buf) == 64 + TAG
    out = bytearray(64)
    assert prim.decrypt_into(b"n" * 12, b"y" * (64 + TAG), None, out) == 64
    assert prim.seen == []
    assert lane.direct_q.drain() == [64, 80 - TAG, 64, 64]


def _other_provider(prim, lane):
    prim._provider = object()


def _held_for_engines(prim, lane):
    lane.direct_below, lane.direct_above = 0, 1 << 20


def _record_full(prim, lane):
    lane.direct_room = 0


def _no_software(prim, lane):
    prim._sw = None


def _software_cannot(prim, lane):
    prim._sw = False


def _lane_of_no_provider(prim, lane):
    class Unbound:  # what a primitive holds before its first op: not a LaneCore
        provider = object()  # no provider's (the real one's check never passes)
        direct_below = direct_above = -1
        direct_q: list = []
        direct_room = 8

    prim._lane = Unbound()


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize(
    "change",
    [
        _other_provider,
        _held_for_engines,
        _record_full,
        _no_software,
        _software_cannot,
        _lane_of_no_provider,
    ],
)
def test_an_op_the_direct_path_cannot_take_goes_to_the_ordinary_path(twin, change):
    prim, lane = make(twin)
    change(prim, lane)
    nonce, data = b"n" * 12, b"x" * 64
    assert prim.encrypt(nonce, data, None) == "ordinary"
    assert prim.decrypt(nonce, data, None) == "ordinary"
    assert prim.encrypt_into(nonce, data, None, bytearray(80)) == "ordinary"
    assert prim.decrypt_into(nonce, data, None, bytearray(48)) == "ordinary"
    assert [name for name, _, _ in prim.seen] == [
        "_encrypt",
        "_decrypt",
        "_encrypt_into",
        "_decrypt_into",
    ]
    assert prim._sw in (None, False) or prim._sw.calls == []
    assert len(lane.direct_q) == 0


@pytest.mark.parametrize("twin", TWINS)
def test_arguments_other_than_bytes_in_place_go_to_the_ordinary_path_as_given(twin):
    prim, lane = make(twin)
    nonce = b"n" * 12
    assert prim.encrypt(nonce, bytearray(64), None) == "ordinary"
    assert prim.decrypt(nonce, b"x" * (TAG - 1), None) == "ordinary"  # shorter than a tag
    assert prim.encrypt_into(nonce, b"x" * 64, None, memoryview(bytearray(80))) == "ordinary"
    assert len(prim.seen) == 3
    assert len(lane.direct_q) == 0


@pytest.mark.parametrize("twin", TWINS)
def test_keyword_calls_are_answered_and_recorded_once_by_either_path(twin):
    """The pure twin binds keywords as any Python method; the compiled one hands a call with
    keywords to the ordinary path, which (in the library) answers and counts it the same."""
    prim, lane = make(twin)
    data = b"x" * 64
    out = prim.encrypt(b"n" * 12, data=data, associated_data=None)
    if twin.name == "pure":
        assert (out, prim.seen, lane.direct_q.drain()) == (b"E" + data, [], [64])
    else:
        assert out == "ordinary"
        assert prim.seen == [("_encrypt", (b"n" * 12,), {"data": data, "associated_data": None})]
        assert len(lane.direct_q) == 0


@pytest.mark.parametrize("twin", TWINS)
@pytest.mark.parametrize("error", [TypeError("bad nonce type"), ValueError("bad nonce length")])
def test_openssl_refusing_the_input_hands_it_to_the_ordinary_path_unrecorded(twin, error):
    prim, lane = make(twin, FakeOpenSSL(fail=error))
    assert prim.encrypt(b"n", b"x" * 64, None) == "ordinary"
    assert prim.decrypt(b"n", b"x" * 64, None) == "ordinary"
    assert prim.encrypt_into(b"n", b"x" * 64, None, bytearray(80)) == "ordinary"
    assert prim.decrypt_into(b"n", b"x" * 64, None, bytearray(48)) == "ordinary"
    assert len(prim.seen) == 4
    assert len(lane.direct_q) == 0


@pytest.mark.parametrize("twin", TWINS)
def test_other_errors_from_openssl_go_on_unrecorded(twin):
    prim, lane = make(twin, FakeOpenSSL(fail=RuntimeError("engine room on fire")))
    with pytest.raises(RuntimeError, match="on fire"):
        prim.encrypt(b"n", b"x" * 64, None)
    with pytest.raises(RuntimeError, match="on fire"):
        prim.decrypt(b"n", b"x" * 64, None)
    assert prim.seen == []
    assert len(lane.direct_q) == 0


@pytest.mark.parametrize("twin", TWINS)
def test_a_failed_tag_is_recorded_raised_and_releases_no_plaintext(twin):
    prim, lane = make(twin, FakeOpenSSL(fail=InvalidTag()))
    with pytest.raises(InvalidTag):
        prim.decrypt(b"n", b"x" * 64, None)
    buf = bytearray(48)
    with pytest.raises(InvalidTag):
        prim.decrypt_into(b"n", b"x" * 64, None, buf)
    assert buf == bytes(48)  # the fake wrote 0x07s before failing, as OpenSSL's GCM does
    assert prim.seen == []
    assert lane.direct_q.drain() == [64 - TAG, 64 - TAG]


@pytest.mark.parametrize("twin", TWINS)
def test_the_provider_in_force_is_the_primitives_then_the_using_blocks_then_the_default(twin):
    ambient = object()
    prim, lane = make(twin, provider=ambient)
    prim._provider = None
    data = b"x" * 64
    box, was = directpath.DEFAULT_BOX, directpath.DEFAULT_BOX[0]
    try:
        box[0] = object()
        assert prim.encrypt(b"n", data, None) == "ordinary"  # the default is another provider
        box[0] = ambient
        assert prim.encrypt(b"n", data, None) == b"E" + data  # the default is the lane's
        twin.note_using()
        token = directpath.CURRENT.set(object())
        try:
            assert prim.encrypt(b"n", data, None) == "ordinary"  # a using block's comes first
            prim._provider = ambient
            assert prim.encrypt(b"n", data, None) == b"E" + data  # the primitive's own first
        finally:
            directpath.CURRENT.reset(token)
        prim._provider = None
        assert prim.encrypt(b"n", data, None) == b"E" + data  # the block ended: the default
    finally:
        box[0] = was
    assert lane.direct_q.drain() == [64, 64, 64]


@pytest.mark.parametrize("twin", TWINS)
def test_a_bound_beyond_the_largest_size_means_never(twin):
    _, lane = make(twin)
    lane.direct_above = sys.maxsize + 1  # "_NEVER": no size is above it
    assert lane.direct_above >= sys.maxsize
    lane.direct_below = -1
    assert lane.direct_below == -1


@pytest.mark.parametrize("twin", TWINS)
def test_the_size_log_records_in_order_and_drains_exactly_what_it_holds(twin):
    log = twin.SizeLog()
    assert not log
    assert len(log) == 0
    for n in (0, 64, 1 << 40, ~16):  # ~size: an op held back from every engine
        log.append(n)
    assert log
    assert len(log) == 4
    assert log.drain() == [0, 64, 1 << 40, ~16]
    assert (len(log), log.drain()) == (0, [])
    for n in range(1000):
        log.append(n)
    assert log.drain_total() == (1000, sum(range(1000)))
    assert log.drain_total() == (0, 0)
    for n in (10, 20, 20, 30, 5000):
        log.append(n)
    edges = [20, 21, 0, sys.maxsize + 1]  # sys.maxsize + 1: "never", every size below it
    assert log.drain_below(edges) == (5, 5080, [1, 3, 0, 5])
    assert log.drain_below([1]) == (0, 0, [0])


@pytest.mark.parametrize("twin", TWINS)
def test_a_cycle_through_the_cores_is_collected(twin):
    class Provider:
        pass

    provider = Provider()
    prim, lane = make(twin, provider=provider)
    provider.lane, provider.primitive = lane, prim  # provider -> lane -> provider, and so on
    gone = weakref.ref(provider)
    del provider, prim, lane
    gc.collect()
    assert gone() is None


def _compiler_and_headers_present() -> bool:
    cc = (sysconfig.get_config_var("CC") or "").split()
    include = sysconfig.get_paths()["include"]
    return bool(cc) and os.path.exists(os.path.join(include, "Python.h")) and _on_path(cc[0])


def _on_path(program: str) -> bool:
    from shutil import which

    return which(program) is not None


@pytest.mark.skipif(
    os.environ.get("CRYPTOFFLOAD_PURE_PYTHON", "") not in ("", "0"),
    reason="CRYPTOFFLOAD_PURE_PYTHON keeps the pure twin",
)
def test_the_compiled_twin_is_in_use_wherever_it_could_be_built():
    if not _compiler_and_headers_present():
        pytest.skip("no C compiler or no Python headers here: the pure twin is right")
    assert directpath.COMPILED, (
        "a C compiler and Python.h are here but cryptoffload._directpath is not built: "
        "reinstall (pip install -e .) to build it"
    )
    assert directpath.AeadCore is compiled.AeadCore


def test_the_pure_twin_passes_the_direct_path_and_aead_suites():
    """The library with CRYPTOFFLOAD_PURE_PYTHON=1 (as on a machine with no compiler)."""
    env = dict(os.environ, CRYPTOFFLOAD_PURE_PYTHON="1")
    env.pop("PYTEST_XDIST_WORKER", None)
    files = [
        "tests/test_direct_path.py",
        "tests/test_adaptive.py",
        "tests/test_counters.py",
        "tests/test_vectors_aead.py",
        "tests/test_gcm_cipher_stream.py",
        "tests/test_caam_zerocopy.py",
    ]
    probe = "from cryptoffload import directpath; assert not directpath.COMPILED"
    subprocess.run([sys.executable, "-c", probe], env=env, check=True, cwd=ROOT)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", *files],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]


def test_a_build_left_from_other_sources_is_not_used(monkeypatch):
    """An editable install whose rebuild failed keeps the old extension: it must not run."""
    import types

    stale = types.ModuleType("cryptoffload._directpath")
    stale.API = directpath.API - 1
    monkeypatch.setitem(sys.modules, "cryptoffload._directpath", stale)
    monkeypatch.setattr(cryptoffload, "_directpath", stale, raising=False)
    monkeypatch.delenv("CRYPTOFFLOAD_PURE_PYTHON", raising=False)
    with pytest.warns(RuntimeWarning, match="built from other sources"):
        assert directpath.compiled_module() is None
