"""The import hook behind `cryptoffload run` and `install()`: what an application's imports of
`cryptography.hazmat.primitives.*` and `cryptography.fernet` resolve to.

Per importer, not per process: ``sys.modules`` is left alone, so `cryptography`'s own modules
(and cryptoffload, which is built on them) keep the real ones, while every other module (or only
the top-level packages named in ``only``) gets cryptoffload's mirror, module for module:

- a mirrored module (``cryptography.hazmat.primitives.hashes`` -> ``cryptoffload.hashes``) is
  returned as it is;
- a package on the way (``cryptography``, ``cryptography.hazmat``, the ``primitives``,
  ``asymmetric``, ``ciphers``, ``kdf``... packages) is a *view*: a module object whose
  attributes are the mirrored submodules and names where cryptoffload has them, the real ones
  otherwise, so ``import cryptography.hazmat.primitives.hashes`` followed by attribute access,
  ``from ... import X`` and ``import ... as`` all land on the mirror;
- anything cryptoffload does not mirror (``cryptography.x509``, private modules, a path a newer
  `cryptography` added) is the real module.

Both ``builtins.__import__`` (the import statement) and ``importlib.import_module`` are hooked.

Python's own ``hashlib`` and ``hmac`` are redirected the same way, to the views
:func:`cryptoffload.stdlib.views` builds when ``install()`` sets the provider, or under `run` at
the program's first import of either (see :meth:`ImportHook.mirror_stdlib` and
:meth:`ImportHook.mirror_stdlib_when_imported`), except for the standard library's own importers
(``hmac``, ``uuid``, ``multiprocessing``...), which keep Python's modules, as `cryptography`'s
and cryptoffload's do.
"""

from __future__ import annotations

import _thread  # not threading: `run` starts faster without it
import builtins
import importlib
import importlib.util
import os
import sys
import types
from collections.abc import Callable, Iterable, Mapping

#: `typing` is for type checkers only: importing it loads `re`, a cost `run` pays at start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ROOT = "cryptography"
PRIMITIVES = "cryptography.hazmat.primitives"
#: Modules outside ``primitives`` that are mirrored, and where.
OTHER_MIRRORS = {"cryptography.fernet": "cryptoffload.fernet"}
#: Importers that always see the real modules: `cryptography` itself, and this package.
NEVER = frozenset({"cryptography", "cryptoffload"})
#: The standard library's modules that redirected importers may see views of.
STDLIB_MIRRORED = ("hashlib", "hmac")
#: Stands for a view of the standard library decided at the first redirected import.
_UNDECIDED: Any = object()


def mirror_of(name: str) -> str | None:
    """The cryptoffload module standing for the `cryptography` module ``name``, or None."""
    try:
        return _MIRRORS[name]
    except KeyError:
        pass
    target: str | None = None
    if name == PRIMITIVES:
        target = "cryptoffload"
    elif name.startswith(PRIMITIVES + "."):
        rest = name[len(PRIMITIVES) + 1 :]
        if not any(part.startswith("_") for part in rest.split(".")):
            target = f"cryptoffload.{rest}"
    else:
        target = OTHER_MIRRORS.get(name)
    if target is not None and target != "cryptoffload":
        try:
            found = importlib.util.find_spec(target) is not None
        except ImportError:
            found = False
        target = target if found else None
    _MIRRORS[name] = target
    return target


_MIRRORS: dict[str, str | None] = {}


class PackageView(types.ModuleType):
    """A `cryptography` package as a redirected importer sees it: mirrored submodules and names
    first, the real package's attributes otherwise."""

    def __init__(self, hook: ImportHook, real: types.ModuleType) -> None:
        super().__init__(real.__name__, real.__doc__)
        for own in ("__package__", "__loader__", "__spec__"):  # the real package's, not None
            self.__dict__.pop(own, None)
        self.__dict__["_view_hook"] = hook
        self.__dict__["_view_real"] = real

    def __getattr__(self, attr: str) -> Any:
        real = self.__dict__["_view_real"]
        if attr.startswith("__"):
            return getattr(real, attr)
        child = f"{real.__name__}.{attr}"
        hook: ImportHook = self.__dict__["_view_hook"]
        if mirror_of(child) is not None or child in ("cryptography.hazmat", PRIMITIVES):
            try:
                return hook.module_for(child)
            except ImportError:
                pass
        mirror = mirror_of(real.__name__)
        if mirror is not None:
            mirrored = importlib.import_module(mirror)
            if mirror != "cryptoffload" and hasattr(mirrored, attr):
                return getattr(mirrored, attr)
        return getattr(real, attr)

    def __dir__(self) -> list[str]:
        names = set(dir(self.__dict__["_view_real"]))
        mirror = mirror_of(self.__name__)
        if mirror is not None and mirror != "cryptoffload":
            names |= set(dir(importlib.import_module(mirror)))
        return sorted(names)

    def __repr__(self) -> str:
        return f"<module {self.__name__!r} (cryptoffload's view)>"


class ImportHook:
    """Installs itself as ``builtins.__import__`` and ``importlib.import_module``."""

    def __init__(self) -> None:
        self.only: frozenset[str] | None = None
        self._views: dict[str, PackageView] = {}
        self._lock = _thread.allocate_lock()
        self._saved: tuple[Any, Any] | None = None
        self._stdlib: dict[str, types.ModuleType] = {}
        self._decide_stdlib: Callable[[], Mapping[str, types.ModuleType]] | None = None
        self._deciding = _thread.allocate_lock()
        #: The thread deciding the views, while it does.
        self._decider: int | None = None
        #: Module name -> what to call once it is imported (see call_when_imported).
        self._waiting: dict[str, Callable[[], None]] = {}
        #: What ``install`` put in ``builtins.__import__``.
        self._installed_import: Any = None

    # -- installing -------------------------------------------------------------------------
    @property
    def installed(self) -> bool:
        return self._saved is not None

    def install(self, only: Iterable[str] | None = None) -> None:
        """Hook the imports (again: only ``only`` changes); ``only`` names top-level packages."""
        self.only = None if only is None else frozenset(only)
        if self._saved is not None:
            return
        self._saved = (builtins.__import__, importlib.import_module)
        builtins.__import__ = self._installed_import = _import_filter(self)
        importlib.import_module = self._import_module

    def mirror_stdlib(self, views: Mapping[str, types.ModuleType]) -> None:
        """What a redirected importer gets for the standard library's modules named in
        ``views`` (``hashlib``, ``hmac``): the rest of the standard library stays Python's."""
        with self._deciding:
            self._decide_stdlib = None
            self._stdlib = dict(views)

    def mirror_stdlib_when_imported(
        self, decide: Callable[[], Mapping[str, types.ModuleType]]
    ) -> None:
        """As :meth:`mirror_stdlib` with the views ``decide()`` returns, called at the first
        import of ``hashlib`` or ``hmac`` by a redirected importer (so that a program that never
        imports them never pays for deciding them: building the provider, probing engines)."""
        with self._deciding:
            self._decide_stdlib = decide
            self._stdlib = dict.fromkeys(STDLIB_MIRRORED, _UNDECIDED)

    def call_when_imported(self, name: str, then: Callable[[], None]) -> None:
        """Call ``then()`` once, as soon as an import of the module ``name`` (an ``import``
        statement or ``importlib.import_module``, in any module) has completed; now, if it has
        been imported already."""
        if name in sys.modules:
            then()
        else:
            self._waiting[name] = then

    def uninstall(self) -> None:
        """Give imports back to Python; modules already imported keep what they got."""
        with self._deciding:
            self._decide_stdlib = None
            self._stdlib = {}
        self._waiting = {}
        if self._saved is None:
            return
        original_import, original_import_module = self._saved
        if builtins.__import__ == self._installed_import:
            builtins.__import__ = original_import
        if importlib.import_module == self._import_module:
            importlib.import_module = original_import_module
        self._saved = None

    # -- deciding ---------------------------------------------------------------------------
    def redirects(self, importer: str) -> bool:
        """Whether the module named ``importer`` sees cryptoffload's modules."""
        top = importer.partition(".")[0]
        if top in NEVER:
            return False
        return self.only is None or top in self.only

    def redirects_stdlib(self, importer: str) -> bool:
        """Whether the module named ``importer`` sees the views of ``hashlib`` and ``hmac``: as
        :meth:`redirects`, and not a module of the standard library (whose own uses of them,
        such as hmac's of hashlib, are Python's business)."""
        return importer.partition(".")[0] not in sys.stdlib_module_names and self.redirects(
            importer
        )

    def module_for(self, name: str) -> types.ModuleType:
        """What a redirected importer gets for the absolute module name ``name``."""
        real = sys.modules.get(name)
        if real is None:
            assert self._saved is not None
            real = self._saved[1](name)
        if hasattr(real, "__path__") and (name in (ROOT, "cryptography.hazmat") or mirror_of(name)):
            return self._view(real)
        mirror = mirror_of(name)
        return importlib.import_module(mirror) if mirror else real

    def _view(self, real: types.ModuleType) -> PackageView:
        view = self._views.get(real.__name__)
        if view is None:
            with self._lock:
                view = self._views.setdefault(real.__name__, PackageView(self, real))
        return view

    def _stdlib_view(self, name: str) -> types.ModuleType | None:
        """The view of ``name`` once decided (deciding it now if it is not): None for Python's
        own module, which an import made while deciding gets too."""
        if self._decider == _thread.get_ident():
            return None
        with self._deciding:
            decide = self._decide_stdlib
            if decide is not None:
                self._decider = _thread.get_ident()
                try:
                    self._stdlib = dict(decide())
                    self._decide_stdlib = None
                finally:
                    self._decider = None
            view = self._stdlib.get(name)
        return None if view is _UNDECIDED else view

    def _imported(self, name: str) -> None:
        """Call what waits for ``name``, whose import has just completed."""
        then = self._waiting.pop(name, None)
        if then is not None:
            then()

    # -- the hooks --------------------------------------------------------------------------
    def _import(
        self,
        name: str,
        globals: dict[str, Any] | None = None,
        locals: Any = None,
        fromlist: Any = (),
        level: int = 0,
    ) -> Any:
        assert self._saved is not None
        result = self._saved[0](name, globals, locals, fromlist, level)
        if self._waiting and not level:
            self._imported(name)
        if level:
            return result
        if not _is_cryptography(name):
            view = self._stdlib.get(name)
            if view is not None and self.redirects_stdlib(_importer(globals)):
                if view is _UNDECIDED:
                    view = self._stdlib_view(name)
                return result if view is None else view
            return result
        if not self.redirects(_importer(globals)):
            return result
        if not fromlist:
            return self._view(sys.modules[ROOT])
        target = self.module_for(name)
        for item in fromlist:
            if item != "*" and not _has(target, item):
                sub = mirror_of(f"{name}.{item}")
                if sub is not None:
                    importlib.import_module(sub)
        return target

    def _import_module(self, name: str, package: str | None = None) -> types.ModuleType:
        assert self._saved is not None
        module = self._saved[1](name, package)
        absolute = module.__name__
        if self._waiting:
            self._imported(absolute)
        if not _is_cryptography(absolute):
            view = self._stdlib.get(absolute)
            if view is not None and self.redirects_stdlib(_importer(None)):
                if view is _UNDECIDED:
                    view = self._stdlib_view(absolute)
                return module if view is None else view
            return module
        if not self.redirects(_importer(None)):
            return module
        return self.module_for(absolute)


def _import_filter(hook: ImportHook) -> Any:
    """What stands for ``builtins.__import__`` while ``hook`` is installed: the compiled
    filter (``_directpath.ImportFilter``), which calls Python's import itself and the hook's
    ``_import`` only for an import the hook may answer otherwise, else that ``_import``."""
    # The extension alone: cryptoffload.core.directpath would load `cryptography` at start-up.
    if os.environ.get("CRYPTOFFLOAD_PURE_PYTHON", "") not in ("", "0"):
        return hook._import
    try:
        from cryptoffload.core._directpath import ImportFilter
    except ImportError:  # not built here, or built from sources without it
        return hook._import
    assert hook._saved is not None
    return ImportFilter(hook._saved[0], hook, hook._import)


def _is_cryptography(name: str) -> bool:
    return name == ROOT or name.startswith("cryptography.")


def _has(module: types.ModuleType, attr: str) -> bool:
    try:
        getattr(module, attr)
    except AttributeError:
        return False
    return True


def _importer(globals: dict[str, Any] | None) -> str:
    """The importing module's name (for a ``__main__``, the name it was run as, if any); without
    ``globals``, the module of the frame that called the hook."""
    if globals is None:
        globals = sys._getframe(2).f_globals
    name = globals.get("__name__") or ""
    if name == "__main__":
        spec = globals.get("__spec__")
        if spec is not None and getattr(spec, "name", None):
            return spec.name
    return name


HOOK = ImportHook()
