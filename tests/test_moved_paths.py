"""The machinery's old import paths (cryptoffload.ops, ...) give the very modules of the core."""

from __future__ import annotations

import importlib
import pathlib
import pickle
import subprocess
import sys
from importlib.machinery import PathFinder

import pytest

import cryptoffload
from cryptoffload import _MOVED_TO_CORE
from cryptoffload.core import ops, policy, provider

OLD_PATHS = sorted(_MOVED_TO_CORE)


def _fresh(code: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.splitlines()


def test_the_table_names_every_module_of_the_core_and_only_those():
    core = pathlib.Path(cryptoffload.core.__path__[0])
    here = {f"cryptoffload.core.{path.stem}" for path in core.glob("*.py")} - {
        "cryptoffload.core.__init__"
    }
    assert set(_MOVED_TO_CORE.values()) == here
    assert all(old == new.replace(".core.", ".", 1) for old, new in _MOVED_TO_CORE.items())


@pytest.mark.parametrize("old", OLD_PATHS)
def test_an_old_path_imports_the_same_module_object(old):
    module = importlib.import_module(old)
    assert module is importlib.import_module(_MOVED_TO_CORE[old])
    assert sys.modules[old] is module
    assert module.__name__ == module.__spec__.name == _MOVED_TO_CORE[old]


@pytest.mark.parametrize("old", OLD_PATHS)
def test_an_old_path_imports_first_in_a_fresh_interpreter(old):
    new = _MOVED_TO_CORE[old]
    code = (
        f"import sys, {old}\n"
        f"import {new}\n"
        f"print({old} is {new}, {old}.__spec__.name, {old}.__spec__.loader is not None)\n"
        f"print(sys.modules[{old!r}] is sys.modules[{new!r}])\n"
    )
    assert _fresh(code) == [f"True {new} True", "True"]


def test_names_import_from_an_old_path_as_the_writing_an_engine_page_shows():
    from cryptoffload.ops import CipherOp
    from cryptoffload.policy import Policy
    from cryptoffload.provider import Provider, using

    assert CipherOp is ops.CipherOp
    assert Policy is policy.Policy is cryptoffload.Policy
    assert Provider is provider.Provider is cryptoffload.Provider
    assert using is cryptoffload.using


def test_the_packages_attribute_for_an_old_name_is_the_core_module():
    assert cryptoffload.ops is ops
    from cryptoffload import provider as old_provider

    assert old_provider is provider


def test_state_set_through_an_old_path_is_seen_through_the_new_one(monkeypatch):
    import cryptoffload.counters as old_counters

    from cryptoffload.core import counters

    monkeypatch.setattr(old_counters, "_moved_paths_probe", 7, raising=False)
    assert counters._moved_paths_probe == 7


def test_the_public_classes_name_their_core_module_and_pickle_there():
    assert cryptoffload.Provider.__module__ == "cryptoffload.core.provider"
    assert cryptoffload.Policy.__module__ == "cryptoffload.core.policy"
    rule = cryptoffload.Policy(min_size={"aes-*-cbc": 256}, deny=["sha1"])
    data = pickle.dumps(rule)
    assert b"cryptoffload.core.policy" in data
    assert pickle.loads(data) == rule


def test_a_policy_pickled_before_the_move_still_loads():
    # Protocol 2 names a class as "module\nname\n" and has no frame lengths to fix up.
    data = pickle.dumps(cryptoffload.Policy(require=["aes-256-gcm"]), protocol=2)
    before = data.replace(b"ccryptoffload.core.policy\n", b"ccryptoffload.policy\n")
    assert before != data
    loaded = pickle.loads(before)
    assert type(loaded) is policy.Policy
    assert loaded == cryptoffload.Policy(require=["aes-256-gcm"])


def test_a_name_that_never_moved_is_not_found_by_the_old_path_table():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("cryptoffload.nosuch")
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("cryptoffload._directpath")  # the build's name moved, unaliased


def test_no_file_for_an_old_path_is_left_in_the_package_root():
    # One module, never a copy: a file at an old path would be a second module object.
    root = cryptoffload.__path__
    assert [old for old in OLD_PATHS if PathFinder.find_spec(old, root)] == []
    assert PathFinder.find_spec("cryptoffload._directpath", root) is None


def test_reloading_the_package_keeps_one_finder():
    code = (
        "import importlib, sys, cryptoffload\n"
        "importlib.reload(cryptoffload)\n"
        "import cryptoffload.lane, cryptoffload.core.lane\n"
        "names = [getattr(f, '__qualname__', '') for f in sys.meta_path]\n"
        "print(names.count('_MovedModuleFinder'), cryptoffload.lane is cryptoffload.core.lane)\n"
    )
    assert _fresh(code) == ["1 True"]
