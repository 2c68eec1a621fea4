"""The import hook: a redirected importer's `cryptography.hazmat.primitives` imports land on
cryptoffload's modules in every import form; `cryptography` itself and others keep theirs."""

from __future__ import annotations

import builtins
import importlib
import sys

import pytest

import cryptoffload
from cryptoffload.core import directpath
from cryptoffload.tools.redirect import HOOK, mirror_of


@pytest.fixture
def hook():
    saved = builtins.__import__, importlib.import_module
    HOOK.install()
    try:
        yield HOOK
    finally:
        HOOK.uninstall()
    assert (builtins.__import__, importlib.import_module) == saved


def run_as(module_name: str, source: str) -> dict:
    """Execute ``source`` as if it were the module ``module_name``; its namespace."""
    namespace = {"__name__": module_name, "__builtins__": builtins}
    exec(compile(source, f"<{module_name}>", "exec"), namespace)
    return namespace


IMPORT_FORMS = {
    "from-module": ("from cryptography.hazmat.primitives import hashes", "hashes"),
    "from-name": ("from cryptography.hazmat.primitives.hashes import Hash as x", "x"),
    "import-as": ("import cryptography.hazmat.primitives.asymmetric.rsa as x", "x"),
    "dotted": (
        "import cryptography.hazmat.primitives.hmac\nx = cryptography.hazmat.primitives.hmac",
        "x",
    ),
    "package-then-attribute": (
        "from cryptography.hazmat.primitives import asymmetric\nx = asymmetric.ec",
        "x",
    ),
    "from-subpackage": ("from cryptography.hazmat.primitives.ciphers import aead as x", "x"),
    "import_module": (
        "import importlib\nx = importlib.import_module('cryptography.hazmat.primitives.cmac')",
        "x",
    ),
}
EXPECTED = {
    "from-module": "cryptoffload.hashes",
    "from-name": "cryptoffload.hashes",
    "import-as": "cryptoffload.asymmetric.rsa",
    "dotted": "cryptoffload.hmac",
    "package-then-attribute": "cryptoffload.asymmetric.ec",
    "from-subpackage": "cryptoffload.ciphers.aead",
    "import_module": "cryptoffload.cmac",
}


@pytest.mark.parametrize("form", sorted(IMPORT_FORMS))
def test_every_import_form_of_an_application_lands_on_the_mirror(hook, form):
    source, name = IMPORT_FORMS[form]
    value = run_as("someapp.module", source)[name]
    module = value if isinstance(value, type(sys)) else sys.modules[value.__module__]
    assert module.__name__ == EXPECTED[form]


def test_names_cryptoffload_does_not_mirror_stay_real(hook):
    ns = run_as(
        "someapp",
        "import cryptography.x509\nfrom cryptography import exceptions\n"
        "import cryptography\nv = cryptography.__version__\nx = cryptography.x509",
    )
    assert ns["x"] is sys.modules["cryptography.x509"]
    assert ns["exceptions"] is sys.modules["cryptography.exceptions"]
    assert ns["v"] == sys.modules["cryptography"].__version__
    private = run_as("someapp", "from cryptography.hazmat.primitives import _serialization as p")
    assert private["p"] is sys.modules["cryptography.hazmat.primitives._serialization"]


def test_cryptography_and_cryptoffload_keep_the_real_modules(hook):
    for importer in ("cryptography.x509.base", "cryptoffload.rsa"):
        ns = run_as(importer, "from cryptography.hazmat.primitives import hashes")
        assert ns["hashes"] is sys.modules["cryptography.hazmat.primitives.hashes"]


def test_only_limits_the_redirect_to_the_named_packages(hook):
    HOOK.install(only=["chosen"])
    try:
        chosen = run_as("chosen.sub", "from cryptography.hazmat.primitives import hashes")
        other = run_as("other", "from cryptography.hazmat.primitives import hashes")
    finally:
        HOOK.install()
    assert chosen["hashes"].__name__ == "cryptoffload.hashes"
    assert other["hashes"].__name__ == "cryptography.hazmat.primitives.hashes"


def test_install_twice_is_one_hook_and_uninstall_restores(hook):
    first = builtins.__import__
    HOOK.install()
    assert builtins.__import__ == first
    HOOK.uninstall()
    assert not HOOK.installed
    ns = run_as("someapp", "from cryptography.hazmat.primitives import hashes")
    assert ns["hashes"].__name__ == "cryptography.hazmat.primitives.hashes"


def test_the_mirror_table_follows_cryptoffloads_modules():
    assert mirror_of("cryptography.hazmat.primitives.kdf.hkdf") == "cryptoffload.kdf.hkdf"
    assert mirror_of("cryptography.hazmat.primitives._asymmetric") is None
    assert mirror_of("cryptography.x509") is None
    assert mirror_of("cryptography.hazmat.primitives.no_such_module") is None


def test_redirected_crypto_is_counted_by_the_provider(hook):
    provider = cryptoffload.Provider(["passthrough"])
    ns = run_as("someapp", "from cryptography.hazmat.primitives.ciphers.aead import AESGCM")
    with cryptoffload.using(provider):
        ns["AESGCM"](bytes(16)).encrypt(bytes(12), b"data", None)
    assert provider.counters.snapshot()["passthrough"]["aes-128-gcm"]["ops"] == 1


@pytest.fixture
def passthrough_installed():
    cryptoffload.install(["passthrough"])
    try:
        yield
    finally:
        cryptoffload.uninstall()
        cryptoffload.set_default_provider(None)


def test_pythons_hashlib_and_hmac_are_mirrored_for_an_application_only(passthrough_installed):
    hashlib, hmac = sys.modules["hashlib"], sys.modules["hmac"]
    application = run_as("someapp.mac", "import hashlib, hmac")
    assert application["hashlib"] is not hashlib and application["hmac"] is not hmac
    for importer in ("cryptography.hazmat.x", "cryptoffload.engines.x", "uuid", "json.decoder"):
        ns = run_as(importer, "import hashlib, hmac\nfrom hashlib import sha256")
        assert (ns["hashlib"], ns["hmac"], ns["sha256"]) == (hashlib, hmac, hashlib.sha256)


def test_every_import_form_of_hashlib_lands_on_the_mirror(passthrough_installed):
    hashlib = sys.modules["hashlib"]
    ns = run_as(
        "someapp",
        "import hashlib as h\nfrom hashlib import new\nimport importlib\n"
        "m = importlib.import_module('hashlib')\nb = __import__('hashlib')",
    )
    assert ns["h"] is ns["m"] is ns["b"] is not hashlib
    assert ns["new"] is ns["h"].new is not hashlib.new


def test_only_limits_the_hashlib_mirror_to_the_named_packages(passthrough_installed):
    hashlib = sys.modules["hashlib"]
    HOOK.install(only=["chosen"])
    chosen = run_as("chosen.sub", "import hashlib")
    other = run_as("other", "import hashlib")
    assert chosen["hashlib"] is not hashlib
    assert other["hashlib"] is hashlib


@pytest.fixture
def modules_here(tmp_path, monkeypatch):
    """A folder on sys.path for the test's modules, which are forgotten after it."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        del sys.modules[name]


@pytest.mark.parametrize(
    "source",
    ["import waited", "import outer", "import importlib\nimportlib.import_module('waited')"],
    ids=["import", "imported by another module", "import_module"],
)
def test_what_waits_for_a_module_is_called_once_it_is_imported_whole(hook, modules_here, source):
    (modules_here / "waited.py").write_text("import json\nWHOLE = True\n")
    (modules_here / "outer.py").write_text("import waited\n")
    calls = []
    hook.call_when_imported("waited", lambda: calls.append(sys.modules["waited"].WHOLE))
    run_as("someapp", "import json")
    assert calls == []
    run_as("someapp", source)
    run_as("someapp", "import waited")
    assert calls == [True]


def test_what_waits_for_a_module_already_imported_is_called_at_once(hook):
    calls = []
    hook.call_when_imported("json", lambda: calls.append("json"))
    assert calls == ["json"]


def test_hashlib_views_decided_at_the_first_redirected_import_only(hook):
    decided = []

    def decide():
        decided.append(1)
        return {"hashlib": cryptoffload}  # any module: what the importer gets

    hook.mirror_stdlib_when_imported(decide)
    run_as("cryptography.x", "import hashlib")  # not a redirected importer
    run_as("json.x", "import hashlib")  # the standard library's
    assert decided == []
    assert run_as("someapp", "import hashlib, hmac")["hashlib"] is cryptoffload
    assert run_as("someapp", "import hmac")["hmac"] is sys.modules["hmac"]
    assert run_as("other", "import hashlib")["hashlib"] is cryptoffload
    assert decided == [1]


@pytest.mark.skipif(not directpath.COMPILED, reason="the compiled filter is not built here")
def test_the_compiled_import_filter_asks_the_hook_only_where_it_may_answer_otherwise():
    from cryptoffload.core._directpath import ImportFilter

    class Hook:
        _waiting: dict = {}
        _stdlib: dict = {}

    asked, done = [], []

    def original(name, globals=None, locals=None, fromlist=(), level=0):
        done.append(name)
        return name

    def slow(*args, **kwargs):
        asked.append(args[0])
        return "hook"

    hook = Hook()
    filtered = ImportFilter(original, hook, slow)
    inside = {"__name__": "cryptography.hazmat.primitives.asymmetric.ec"}
    ours = {"__name__": "cryptoffload.ec"}
    app = {"__name__": "__main__"}
    assert (
        filtered("cryptography.hazmat.backends", inside, None, ("backend",), 0)
        == "cryptography.hazmat.backends"
    )
    assert filtered("cryptography", ours, None, (), 0) == "cryptography"
    assert filtered("cryptographyx", app, None, (), 0) == "cryptographyx"
    assert filtered("json", app, None, (), 0) == "json"
    assert filtered("cryptography.hazmat", app, None, (), 1) == "cryptography.hazmat"  # relative
    assert asked == []
    assert filtered("cryptography.hazmat.primitives", app, None, (), 0) == "hook"
    assert filtered("cryptography", {"__name__": "cryptographer"}, None, (), 0) == "hook"
    hook._stdlib = {"hashlib": object()}
    assert filtered("hashlib", app, None, (), 0) == "hook"
    hook._stdlib = {}
    hook._waiting = {"ssl": print}
    assert filtered("json", app, None, (), 0) == "hook"
    hook._waiting = {}
    assert filtered("json", globals=app) == "hook"  # not the import statement's shape
    assert asked == ["cryptography.hazmat.primitives", "cryptography", "hashlib", "json", "json"]


def test_run_installs_the_compiled_import_filter_where_it_is_built():
    from cryptoffload.tools.redirect import ImportHook

    hook = ImportHook()
    hook.install()
    try:
        installed = builtins.__import__
        if directpath.COMPILED:
            assert type(installed).__name__ == "ImportFilter"
        else:
            assert installed == hook._import
    finally:
        hook.uninstall()
    assert builtins.__import__ is not installed
