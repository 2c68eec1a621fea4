"""Shared fixtures: every engine-taking test runs against each engine set present."""

from __future__ import annotations

import os
from collections.abc import Iterator

import cryptodev_standin
import hypothesis
import pytest
import softhsm
from doubles import ChaosEngine, TakeAllEngine

import cryptoffload
from cryptoffload import Provider

# No property test is timed: on a loaded shared machine (CI, parallel workers) hypothesis's
# default 200 ms deadline fails examples that are merely slow, not wrong.
hypothesis.settings.register_profile("untimed", deadline=None)
hypothesis.settings.load_profile("untimed")


def _software() -> Provider:
    return Provider([])


def _takeall() -> Provider:
    return Provider([TakeAllEngine()], policy=cryptoffload.Policy(min_size={"*": 0}))


def _chaos() -> Provider:
    return Provider([ChaosEngine(seed=1234)], policy=cryptoffload.Policy(min_size={"*": 0}))


def _caam(part: str):
    def make() -> Provider:
        return Provider([f"caam:model={part}"], policy=cryptoffload.Policy(min_size={"*": 0}))

    return make


#: Providers over a device process (caam:device=...), closed when the test that made them
#: ends, so that each device process is stopped by its pid (see the autouse fixture below).
_DEVICE_PROVIDERS: list[Provider] = []


def _caam_device(part: str):
    def make() -> Provider:
        provider = Provider([f"caam:device={part}"], policy=cryptoffload.Policy(min_size={"*": 0}))
        _DEVICE_PROVIDERS.append(provider)
        return provider

    return make


def _cryptodev() -> Provider:
    # The stand-in of /dev/crypto stays in place until the test ends (see the fixture below).
    cryptodev_standin.install()
    return Provider(["cryptodev"], policy=cryptoffload.Policy(min_size={"*": 0}))


def _cryptodev_device() -> Provider:
    return Provider(["cryptodev:any"], policy=cryptoffload.Policy(min_size={"*": 0}))


#: The PKCS#11 engines of the engine set, by spec: closed when the session ends.
_PKCS11_ENGINES: dict[str, object] = {}


def _pkcs11_softhsm() -> Provider:
    # One engine on this process's token for the whole session, whichever test comes first
    # (a file run alone, a test that calls the engine sets itself): each provider built on it
    # starts with zeroed counters; the engine probes the token once.
    spec = softhsm.shared().spec
    engine = _PKCS11_ENGINES.get(spec)
    if engine is None:
        engine = _PKCS11_ENGINES[spec] = cryptoffload.engines.from_spec(spec)
    return Provider([engine], policy=cryptoffload.Policy(min_size={"*": 0}))


def has_dev_crypto() -> bool:
    """True where /dev/crypto opens (cryptodev-linux loaded: a board, the rig's guest)."""
    try:
        os.close(os.open("/dev/crypto", os.O_RDWR))
    except OSError:
        return False
    return True


#: The engine sets every vector suite runs through: software alone, an engine that takes every
#: op it claims (RSA through the raw-exponent path), one that declines and faults at random, and
#: the CAAM engine on the model of a QorIQ part (big-endian) and of an i.MX part (little-endian),
#: the same model as a device process behind the board transport (caam:device=..., slow: a
#: process per test), the cryptodev engine over an in-process stand-in of /dev/crypto
#: (tests/cryptodev_standin.py), and, where SoftHSM is installed, the PKCS#11 engine on a
#: SoftHSM token (tests/softhsm.py).
ENGINE_SETS = {
    "software": _software,
    "takeall": _takeall,
    "chaos": _chaos,
    "caam-t2080": _caam("t2080"),
    "caam-imx7d": _caam("imx7d"),
    "caam-device-t2080": _caam_device("t2080"),
    "caam-device-imx7d": _caam_device("imx7d"),
    "cryptodev": _cryptodev,
}
if softhsm.why_missing() is None:  # a SoftHSM token through the PKCS#11 engine
    ENGINE_SETS["pkcs11-softhsm"] = _pkcs11_softhsm
if has_dev_crypto():  # and the real device, software drivers included, where there is one
    ENGINE_SETS["cryptodev-device"] = _cryptodev_device


@pytest.fixture(scope="session")
def softhsm_token() -> softhsm.SoftHsm:
    """The SoftHSM token of the session (skips without SoftHSM); its directory is removed when
    the process exits."""
    missing = softhsm.why_missing()
    if missing:
        pytest.skip(missing)
    return softhsm.shared()


@pytest.fixture(scope="session", autouse=True)
def _pkcs11_engines_closed() -> Iterator[None]:
    """The engine set's PKCS#11 engines are closed when the session ends."""
    yield
    while _PKCS11_ENGINES:
        _PKCS11_ENGINES.popitem()[1].close()  # type: ignore[attr-defined]


@pytest.fixture(params=list(ENGINE_SETS), ids=list(ENGINE_SETS))
def provider(request: pytest.FixtureRequest) -> Provider:
    """A fresh provider for each engine set; its counters start at zero."""
    return ENGINE_SETS[request.param]()


@pytest.fixture(autouse=True)
def _cryptodev_standin_removed() -> Iterator[None]:
    """Whatever a test installed in place of /dev/crypto is taken away when it ends."""
    yield
    cryptodev_standin.uninstall()


@pytest.fixture(autouse=True)
def _device_processes_stopped() -> Iterator[None]:
    """Every device process a test's engine sets started is stopped when the test ends."""
    yield
    while _DEVICE_PROVIDERS:
        _DEVICE_PROVIDERS.pop().close()


#: Vector suites that replay every record through the CAAM model, stream by stream: most of the
#: suite's time. Marked ``slow``: the README's test command leaves them out (about 2 minutes on 2
#: cores instead of 2.5), CI runs them (``-m ""``), and so does ``pytest -m slow``.
SLOW_ON_THE_MODEL = frozenset(
    {
        "test_gcm_cipher_context_every_tag_length_tag_in_mode_and_finalize_with_tag",
        "test_sha_monte_carlo_checkpoints_match",
        "test_uneven_chunks_match_vectors_both_ways",
        "test_update_into_uneven_chunks_matches_vectors_both_ways",
        "test_one_shot_update_finalize_matches_vectors_both_ways",
        "test_aesgcm_short_tag_records_through_tag_length",
    }
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        name = getattr(item, "originalname", item.name)
        if (name in SLOW_ON_THE_MODEL and "caam" in item.nodeid) or "caam-device" in item.nodeid:
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def default_software() -> Iterator[Provider]:
    """A provider of software alone as the process default, for the test's length."""
    provider = Provider([])
    cryptoffload.set_default_provider(provider)
    yield provider
    cryptoffload.set_default_provider(None)
