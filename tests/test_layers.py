"""The layers, read from the imports: tools -> primitives -> core -> engines -> blocks.

The machinery (provider, lanes, policy, counters, checks, the direct path) is ``cryptoffload.core``
and the public API modules sit above it in the package root. Primitives reach the provider
through its public surface (``resolve``, ``Provider.lane``, the Lane's methods) and never through
a private name of the provider or the counters; the core imports nothing of the API above it;
engines and building blocks import nothing above them.
"""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import pytest

import cryptoffload

PACKAGE = pathlib.Path(cryptoffload.__file__).parent
PRIMITIVES = (
    "aead",
    "ciphers",
    "hashes",
    "hmac",
    "cmac",
    "gmac",
    "rsa",
    "ec",
    "dh",
    "serialization",
    "drbg",
    "_keys",
    "_stream",
    "dsa",
    "ed25519",
    "ed448",
    "x25519",
    "x448",
    "_rawkeys",
    "poly1305",
    "ciphers.base",
    "kdf._base",
    "kdf.hkdf",
    "kdf.x963kdf",
    "kdf.concatkdf",
    "kdf.kbkdf",
)
#: What the core may import besides itself: the engines and building blocks below it, and the
#: two leaf modules that users, primitives, core and engines all share (errors, device keys).
BELOW_OR_SHARED = ("engines", "blocks", "errors", "devicekey")
#: Members of the provider's and counters' insides that a primitive once read directly.
PRIVATE_MEMBERS = frozenset(
    {"_direct", "_routes", "_lanes", "_routed", "_misses", "_default", "_current", "_sw_cells"}
    | {"pending", "_pending", "fold", "_cell", "FOLD_AT"}
)


def _module_tree(name: str) -> ast.Module:
    path = PACKAGE.joinpath(*name.split(".")).with_suffix(".py")
    if not path.exists():
        path = PACKAGE.joinpath(*name.split("."), "__init__.py")
    return ast.parse(path.read_text(), filename=str(path))


def _imports(tree: ast.Module) -> list[tuple[str, str | None, str]]:
    """(module imported from, name or None, alias) for every cryptoffload import."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("cryptoffload"):
            for alias in node.names:
                found.append((node.module, alias.name, alias.asname or alias.name))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("cryptoffload"):
                    found.append((alias.name, None, alias.asname or alias.name))
    return found


def _modules_under(folder: str) -> list[str]:
    root = PACKAGE / folder
    names = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def _targets(imports: list[tuple[str, str | None, str]]) -> set[str]:
    """The cryptoffload modules (relative names) that a module's imports reach."""
    out = set()
    for module, name, _ in imports:
        rel = module.removeprefix("cryptoffload").lstrip(".")
        if name is not None:  # from cryptoffload.caam import status: the submodule, if it is one
            candidate = f"{rel}.{name}" if rel else name
            path = PACKAGE.joinpath(*candidate.split("."))
            if path.with_suffix(".py").exists() or (path / "__init__.py").exists():
                rel = candidate
        if rel:
            out.add(rel)
    return out


@pytest.mark.parametrize("module", PRIMITIVES)
def test_primitives_use_no_private_name_of_the_provider_or_counters(module):
    tree = _module_tree(module)
    imports = _imports(tree)
    aliases = set()
    for source, name, alias in imports:
        inner = source in ("cryptoffload.core.provider", "cryptoffload.core.counters")
        whole = source == "cryptoffload.core" and name in ("provider", "counters")
        if inner:
            assert not (name or "").startswith("_"), f"{module} imports {source}.{name}"
        if whole or (name is None and inner):
            aliases.add(alias)
    assert "core.counters" not in _targets(imports), f"{module} reaches into the counters"
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in aliases:
            assert not node.attr.startswith("_"), f"{module} reads provider.{node.attr}"
        assert node.attr not in PRIVATE_MEMBERS, f"{module} reads .{node.attr}"


@pytest.mark.parametrize("module", _modules_under("engines"))
def test_engines_import_no_primitive_provider_or_tool(module):
    allowed = {"errors", "core.names", "core.ops", "modes", "devicekey", "dmabuffer"}
    for target in _targets(_imports(_module_tree(module))):
        top = target.split(".")[0]
        # caam: the driver, its recipes and transports (the model is one transport).
        ok = target in allowed or top in ("engines", "blocks") or target.startswith("caam.")
        assert ok, f"{module} imports {target}"


@pytest.mark.parametrize("module", _modules_under("blocks"))
def test_building_blocks_import_only_building_blocks_and_names(module):
    for target in _targets(_imports(_module_tree(module))):
        ok = target.split(".")[0] in ("blocks", "errors") or target == "core.names"
        assert ok, f"{module} imports {target}"


@pytest.mark.parametrize("module", [*_modules_under("core"), "errors"])
def test_the_core_imports_no_primitive_and_no_tool(module):
    for target in _targets(_imports(_module_tree(module))):
        top = target.split(".")[0]
        assert top not in PRIMITIVES and top != "tools", f"{module} imports {target}"


@pytest.mark.parametrize("module", _modules_under("core"))
def test_the_core_imports_nothing_of_the_api_above_it(module):
    for target in _targets(_imports(_module_tree(module))):
        ok = target.split(".")[0] in ("core", *BELOW_OR_SHARED)
        assert ok, f"{module} imports {target}"


def test_the_shared_leaf_modules_import_only_each_other():
    for module in ("errors", "devicekey"):
        assert _targets(_imports(_module_tree(module))) <= {"errors"}, module


def test_the_machinery_is_all_in_the_core():
    machinery = {"ops", "provider", "lane", "policy", "counters", "validate", "names"}
    machinery |= {"crosscheck", "adaptive", "directpath", "asyncio_lane", "_log"}
    root = {path.stem for path in PACKAGE.glob("*.py")}
    assert not machinery & root
    assert {f"core.{name}" for name in machinery} <= set(_modules_under("core"))


def test_the_public_api_keeps_cryptographys_module_paths():
    import importlib

    for name in (*PRIMITIVES[:11], "modes", "errors"):
        if not name.startswith("_"):
            importlib.import_module(f"cryptoffload.{name}")
    from cryptoffload import Policy, Provider, current, default_provider, using  # noqa: F401
    from cryptoffload.aead import AESCCM, AESGCM  # noqa: F401
    from cryptoffload.ciphers import Cipher, algorithms, modes  # noqa: F401
    from cryptoffload.hashes import SHA256, Hash, digest  # noqa: F401


@pytest.mark.parametrize("module", _modules_under("caam/model"))
def test_the_caam_model_reads_the_decoder_and_never_the_builder(module):
    # The model stands for the silicon: it shares registers, status words, encodings and the
    # decoder with the driver side, and nothing else.
    shared = {"caam.regs", "caam.status"} | {
        f"caam.desc.{m}" for m in ("encoding", "decoder", "words")
    }
    for target in _targets(_imports(_module_tree(module))):
        ok = target in shared or target.startswith(("caam.model", "blocks")) or target == "modes"
        assert ok, f"{module} imports {target}"


def _import_graph() -> dict[str, set[str]]:
    modules = _modules_under(".")
    known = set(modules)
    graph = {}
    for module in modules:
        targets = set()
        for target in _targets(_imports(_module_tree(module))):
            while target and target not in known:  # a name imported from a module
                target = target.rpartition(".")[0]
            if target and target != module and not module.startswith(target + "."):
                targets.add(target)
        graph[module] = targets
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_circle_finder_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]


def test_no_module_imports_itself_through_others():
    # Every import counts: module level, under TYPE_CHECKING, inside functions.
    assert _circles(_import_graph()) == []


def test_importing_the_package_loads_no_provider_engine_or_cryptography():
    # `run` and its children import the package first: its names load their modules when used.
    probe = (
        "import sys, cryptoffload\n"
        "print(sorted(m for m in sys.modules if m.startswith(('cryptoffload.', 'cryptography'))))\n"
        "cryptoffload.Provider, cryptoffload.InvalidTag\n"
        "print('cryptoffload.core.provider' in sys.modules, 'cryptoffload.errors' in sys.modules)\n"
        "from cryptoffload.core import lane, names\n"
        "print(lane.current is cryptoffload.current, names.__name__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.splitlines() == ["[]", "True True", "True cryptoffload.core.names"]


def test_the_packages_names_are_its_modules_own():
    from cryptoffload import errors
    from cryptoffload.core import policy, provider

    assert set(cryptoffload.__all__) <= set(dir(cryptoffload))
    assert cryptoffload.Provider is provider.Provider
    assert cryptoffload.using is provider.using
    assert cryptoffload.Policy is policy.Policy
    assert cryptoffload.OffloadRequired is errors.OffloadRequired
    with pytest.raises(AttributeError, match="no attribute 'nosuch'"):
        cryptoffload.nosuch  # noqa: B018
