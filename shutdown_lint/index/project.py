"""The project index: what rules may know about *other* modules of the project.

``ProjectIndex`` maps module names to files under the project's roots (the paths being
linted, their ``src/`` folders, the package root above each file found through its
``__init__.py`` chain, and each file's own folder for scripts importing siblings), and
builds a module's ``summary`` (``index/summary.py``, with ``ast``) only when a rule asks about
it, reading it from the cache (``index/store.py``) when the file's content is unchanged.

Names resolve through relative imports, ``from pkg import mod``, aliases, re-exports in
``__init__.py`` (and ``from x import *``), module-level variables with a plain type
(``env = SandboxEnv(...)``), ``self.x = Cls(...)`` attributes and parameter annotations;
methods resolve through the class hierarchy, bases in other modules included.

A rule reaches it as ``self.facts.project`` (a ``ProjectView``: the index seen from one
file), which records every other module whose summary a finding may depend on: the
engine stores those dependencies with the file's result, and a change to one of them
re-lints the file.
"""

from __future__ import annotations

import ast
import keyword
import os
import re
from dataclasses import dataclass, field
from typing import Iterator, Optional

from .summary import IN_CLEANUP

from .text_facts import (_IDENT, _STAR_IMPORT, _def_names, _file_bytes, _indented_clause,
                         _plain_names, _registers, _stat_and_read, may_define, may_import)

_MAX_DEPTH = 12


@dataclass
class ProjectFunction:
    """A function or method found in another module."""

    module: str
    path: str
    qualname: str  # ``SandboxEnv.rollout`` / ``run_agent``
    info: dict  # its summary (see summary.py)
    cls: Optional["ProjectClass"] = None

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]

    def where(self, line: Optional[int] = None) -> str:
        """``sandbox/env.py:41`` (relative to the working directory when under it)."""
        return f"{display(self.path)}:{line if line is not None else self.info['line']}"


@dataclass
class ProjectClass:
    module: str
    path: str
    name: str
    info: dict


def display(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


@dataclass
class _Root:
    dir: str
    #: top-level names this root may provide (a package root found above a file provides only
    #: that package: ``site-packages`` must not make every installed package "the project")
    only: Optional[frozenset[str]] = None


class ProjectIndex:
    """Module names -> files, and summaries on demand. One per run; shared by forked workers."""

    def __init__(self, paths: list[str], files: Optional[list[str]] = None, store=None) -> None:
        self.roots: list[_Root] = []
        self._listings: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
        self._root_keys: set[tuple[str, Optional[frozenset[str]]]] = set()
        seen_dirs: set[str] = set()
        cwd = os.getcwd()
        for p in paths:
            # abspath asks the OS for the working directory each time, and isdir stats: one
            # getcwd and one listing per folder serve a list of 8,670 files (pre-commit, CI)
            p = os.path.normpath(os.path.join(cwd, p))
            d = p if self._isdir(p) else os.path.dirname(p)
            if d in seen_dirs:
                continue  # pre-commit passes many files of the same folders: one look per folder
            seen_dirs.add(d)
            if d != p and self._isfile(os.path.join(d, "__init__.py")):
                # a file inside a package: only the package's root is a root (its folder is not
                # on sys.path; making every folder of a file list a root made each lookup scan
                # hundreds of roots)
                self._package_root(p)
                continue
            self._add_root(d)
            if self._isdir(os.path.join(d, "src")):
                self._add_root(os.path.join(d, "src"))
            # a package (or a file in one) given by path: its top package's parent is a root too
            self._package_root(os.path.join(d, "__init__.py"))
        #: the project's files (for finding a module's importers); None: walk the roots lazily
        self.files = files
        #: the roots ``project_files`` walked (None: the files were given)
        self._walked: Optional[list] = None
        self._project_stamp: Optional[tuple] = None
        self.store = store
        self._find: dict[str, Optional[str]] = {}
        self._summaries: dict[str, tuple[Optional[dict], list]] = {}
        self._module_names: dict[str, list[str]] = {}
        self._bytes: dict[str, bytes] = {}
        self._imports_text: dict[str, list[bytes]] = {}
        self._imported: dict[str, list[str]] = {}
        self._imported_files: dict[str, list[str]] = {}
        self._text_has: dict[tuple[str, tuple[str, ...]], bool] = {}
        #: path -> (the names after ``def``,) when ``no_teardown_path`` may hold, () when not
        self._teardown_text: dict[str, tuple] = {}
        #: (path, name, words) -> the text stamp when ``no_function_in`` holds, else None; also
        #: text_facts' decisions, keyed by a word no name can be (``ray.remote``, ``tail:<word>``)
        self._no_match: dict[tuple[str, str, tuple[str, ...]], Optional[list]] = {}
        #: path -> its text's names are plain and it has no star import (``_plain_without_star``)
        self._plain_text: dict[str, bool] = {}
        #: import statement text -> the names it imports as written (``import
        #: torch.distributed as dist`` recurs in hundreds of files)
        self._statement_names: dict[bytes, list[str]] = {}
        #: import statement text -> ``_simple_names`` of it (None: not a simple shape)
        self._simple: dict[bytes, Optional[list[str]]] = {}
        self._relative: dict[str, list[str]] = {}
        #: last words (encoded, sorted) -> ``_spelling``'s files and statements
        self._spellings: dict[tuple[bytes, ...], list[list]] = {}
        #: identifier word -> project files with an import statement naming it (built once), in
        #: parts of the project's files (``_import_word_parts``)
        self._import_words: Optional[list[dict[bytes, list[str]]]] = None
        #: summaries computed here that the store does not have yet (sent back by workers)
        self.new_entries: dict[str, list] = {}
        #: the run's pool workers' shared log (``index/shared.py``; set by the runner), or None
        self.shared = None
        #: the roots are complete (``_settle``): every project file's package root is among them
        self._settled = False
        #: folder -> (position, root) of the roots there; top-level name -> roots that provide it
        self._roots_at: dict[str, list[tuple[int, _Root]]] = {}
        self._providers: dict[str, list[_Root]] = {}

    # ------------------------------------------------------------------ roots and names
    def _has_root(self, d: str, only: Optional[frozenset[str]]) -> bool:
        """A root of ``d`` that provides at least what ``only`` names is already there."""
        return (d, None) in self._root_keys or (d, only) in self._root_keys

    def _add_root(self, d: str, only: Optional[frozenset[str]] = None) -> None:
        if self._has_root(d, only):
            return
        self._root_keys.add((d, only))
        self.roots.append(_Root(d, only))

    def _package_root_of(self, path: str) -> _Root:
        """The folder above the top package containing ``path`` (its ``__init__.py`` chain),
        providing that package only; the file's own folder when it is in no package."""
        d = os.path.dirname(os.path.abspath(path))
        top = None
        while self._isfile(os.path.join(d, "__init__.py")):
            top = d
            d = os.path.dirname(d)
        if top is None:
            return _Root(os.path.dirname(os.path.abspath(path)))
        return _Root(d, frozenset({os.path.basename(top)}))

    def _package_root(self, path: str) -> None:
        r = self._package_root_of(path)
        self._add_root(r.dir, r.only)

    def settle(self) -> None:
        """Settle the roots now (``_settle``): the runner does it before its pool forks."""
        self._settle()

    def _settle(self) -> None:
        """Make the roots complete before any name is resolved: the package root of every
        project file (in the files' order). Added as files were met instead, a module's names
        and importers depended on which files a worker had linted before it (a namespace
        sub-package ``pkg/sub/`` without ``__init__.py`` is ``pkg.sub`` only once some file of
        ``pkg`` has added ``pkg``'s root): the same run gave other findings at -j2 than at -j1,
        or with ``--select``. Once settled the roots do not change."""
        if self._settled:
            return
        self._settled = True
        seen: set[str] = set()
        for f in self.project_files():  # walks the roots given by the paths only
            d = os.path.dirname(f)
            if d not in seen:
                seen.add(d)
                self._package_root(f)
        for i, r in enumerate(self.roots):
            self._roots_at.setdefault(r.dir, []).append((i, r))
            files, dirs = self._entries(r.dir)
            tops = r.only if r.only is not None else dirs | {f[:-3] for f in files if f.endswith(".py")}
            for top in tops:
                if top in dirs or top + ".py" in files:
                    self._providers.setdefault(top, []).append(r)

    def _roots_above(self, path: str) -> list[_Root]:
        """The roots ``path`` is under, in the roots' order; for a file outside the project's
        files (a skipped folder), its own package root too (not added: the roots stay settled)."""
        found: list[tuple[int, _Root]] = []
        d = os.path.dirname(path)
        while True:
            found += self._roots_at.get(d, ())
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
        found.sort(key=lambda x: x[0])
        roots = [r for _, r in found]
        own = self._package_root_of(path)
        if not self._has_root(own.dir, own.only):
            roots.append(own)
        return roots

    def module_names(self, path: str) -> list[str]:
        """The dotted names ``path`` is importable as from the project's roots, best first."""
        found = self._module_names.get(path)
        if found is not None:
            return found
        given = path
        path = os.path.abspath(path)
        if path in self._module_names:
            self._module_names[given] = self._module_names[path]
            return self._module_names[path]
        self._settle()
        names: list[str] = []
        for r in self._roots_above(path):
            if not path.startswith(r.dir + os.sep):
                continue
            rel = path[len(r.dir) + 1:]
            if not rel.endswith(".py"):
                continue
            parts = rel[:-3].split(os.sep)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if not parts or not all(p.isidentifier() for p in parts):
                continue
            if r.only is not None and parts[0] not in r.only:
                continue
            name = ".".join(parts)
            if name not in names:
                names.append(name)
        # the package-chain name first (``pkg.sub.mod``), then shorter ones (``mod`` for scripts)
        names.sort(key=lambda n: -n.count("."))
        self._module_names[path] = self._module_names[given] = names
        return names

    def find(self, module: str) -> Optional[str]:
        """The file of ``module`` (``pkg/__init__.py`` for a package, ``pkg/`` for a namespace
        package), or None when it is not part of the project."""
        if module in self._find:
            return self._find[module]
        found = None
        parts = module.split(".")
        if all(p.isidentifier() for p in parts):
            self._settle()
            rel = os.path.join(*parts)
            # only the roots that hold ``parts[0]``: most names looked up are another project's
            # (torch.nn, numpy), and a project of scripts has hundreds of roots
            for r in self._providers.get(parts[0], ()):
                base = os.path.join(r.dir, rel)
                if self._isfile(base + ".py"):
                    found = base + ".py"
                elif self._isfile(os.path.join(base, "__init__.py")):
                    found = os.path.join(base, "__init__.py")
                elif self._isdir(base) and r.only is None and not self._isfile(os.path.join(r.dir, "__init__.py")):
                    found = base + os.sep  # a namespace package
                if found:
                    break
        self._find[module] = found
        return found

    def _entries(self, d: str) -> tuple[frozenset[str], frozenset[str]]:
        """(files, folders) in folder ``d``, listed once per run: resolving the imports of a
        few hundred modules asked ``isfile`` ~600,000 times of ~1,000 folders."""
        found = self._listings.get(d)
        if found is None:
            files: set[str] = set()
            dirs: set[str] = set()
            try:
                with os.scandir(d) as it:
                    for e in it:
                        try:  # like os.path.isfile/isdir: symbolic links followed
                            if e.is_file():
                                files.add(e.name)
                            elif e.is_dir():
                                dirs.add(e.name)
                        except OSError:
                            continue
            except OSError:
                pass
            found = self._listings[d] = (frozenset(files), frozenset(dirs))
        return found

    def _isfile(self, path: str) -> bool:
        d, name = os.path.split(path)
        return name in self._entries(d)[0]

    def _isdir(self, path: str) -> bool:
        d, name = os.path.split(path)
        if not name:
            return os.path.isdir(path)  # "/" or a path ending in a separator
        return name in self._entries(d)[1]

    # ------------------------------------------------------------------ summaries
    def summary(self, path: str, deps: Optional[dict] = None) -> Optional[dict]:
        if path.endswith(os.sep):
            return None  # namespace package: no code of its own
        if path not in self._summaries:
            self._summaries[path] = self._load(path)
        summary, stamp = self._summaries[path]
        if deps is not None and stamp:
            deps[path] = stamp
        return summary

    def _load(self, path: str) -> tuple[Optional[dict], list]:
        from .store import load_summary

        shared = self.shared
        if shared is not None:
            found = _shared_summary(shared, path)
            if found is not None:
                return found  # another worker of this run summarised it (and sends it to the parent)
        new: dict = {}
        found = load_summary(path, self.store, new)
        if new:
            self.new_entries.update(new)
            if shared is not None:
                shared.put("s" + path, (new[path], found[1]))
        return found

    def read(self, path: str) -> bytes:
        if path not in self._bytes:
            self._bytes[path] = _file_bytes(path)
        return self._bytes[path]

    def import_lines(self, path: str) -> list[bytes]:
        """The file's import statements, a parenthesised one whole (read and extracted once)."""
        if path not in self._imports_text:
            self._imports_text[path] = import_statements(self.read(path))
            self._bytes.pop(path, None)  # the text itself is not needed again
        return self._imports_text[path]

    def imported_names(self, path: str) -> list[str]:
        """What the file's import statements name, as written (``pkg.sub.mod``,
        ``.env.SandboxEnv``, ``pkg.sub`` for a star import), from its import statements
        alone: finding a module's importers must not summarise every file that mentions it
        (in vLLM two hops from ``parallel_state`` reach 1,900 of 3,231 files)."""
        if path in self._imported:
            return self._imported[path]
        out = self._imported[path] = self._names_of_statements(self.import_lines(path))
        return out

    def _names_of_statements(self, statements: list[bytes]) -> list[str]:
        """``names_of_statements(statements)``, each statement text read by ``_simple_names``
        once per run (the 395 files whose imports ray+torch resolves have 8,780 statements,
        4,614 texts)."""
        simple = self._simple
        out: list[str] = []
        for st in statements:
            names = simple.get(st, False)
            if names is False:
                names = simple[st] = _simple_names(st)
            if names is None:
                return _names_imported(statements)
            out += names
        return out

    def text_has(self, path: str, words: tuple[str, ...]) -> bool:
        """The file's text contains one of ``words`` (read again: the index keeps no text)."""
        key = (path, words)
        if key not in self._text_has:
            data = _file_bytes(path)
            self._text_has[key] = any(w.encode() in data for w in words)
        return self._text_has[key]

    def no_function_in(self, path: str, name: str, words: tuple[str, ...] = ()) -> Optional[list]:
        """Decided from the bytes of ``path`` alone, without its summary (an ``ast`` parse):
        looking ``name`` up in that module (the last step of a resolution) cannot give a
        function (with ``words``: a function whose calls spell one of them). Returns the stamp
        of the module's text (the dependency to record: the decision holds while the text is
        the same), or None.

        It holds when the text has no star import, no import statement can bind ``name``
        (``may_import``), and no ``def`` can define it (``may_define``) or, with ``words``, it
        spells none of them: then the summary binds ``name`` to a class or a variable (not a
        function), a function of this module (its calls are spelled here: none spells a word),
        or nothing (a submodule is a module). A text whose identifiers Python may normalise
        (NFKC) or that declares an encoding is not decided."""
        key = (path, name, words)
        if key in self._no_match:
            return self._no_match[key]
        found = None
        # (a text that is not plain or has a star import decides nothing for any name: not read again)
        st, data = _stat_and_read(path) if self._plain_text.get(path) is not False else (None, None)
        if data is not None and self._plain_without_star(path, data) \
                and not may_import(data, name) \
                and (not may_define(data, name) or (words and not any(w.encode() in data for w in words))):
            from .store import stamp_text

            found = stamp_text(st, data)
        self._no_match[key] = found
        return found

    def no_teardown_path(self, path: str, is_cleanup_name) -> bool:
        """Decided from the bytes of ``path`` alone, without its summary (an ``ast`` parse): no
        call the summary records can be on a teardown path (``on_teardown_path``) and the module
        registers nothing, so ``teardown_elsewhere`` finds nothing in it (nor through it: it
        resolves callees only of calls on a teardown path).

        A recorded call is in a ``finally``/``except`` block (``IN_CLEANUP``) only inside a
        function: that clause starts a logical line, indented (a module-level ``try`` is at
        column 0, a function's body is not; ``_indented_clause``); a function named as
        ``is_cleanup_name`` accepts is a ``def`` of that name; a registration
        (``summary._registration``, ``ProjectView.registered``) is a call whose last name ends
        in ``register`` or ``signal``, or is ``add_signal_handler`` (``_REGISTRATION``:
        ``register_buffer`` is none). So it holds when the names are the bytes
        (``_plain_names``), no ``except``/``finally`` word can be an indented clause, no word
        after ``def`` is a cleanup name, and no word can name a registration. The caller's
        result then depends on the text of ``path``: an importer, one of the project's files
        (``depend_on_files``)."""
        facts = self._teardown_text.get(path)
        if facts is None:
            data = _file_bytes(path)  # not kept (``read`` keeps the bytes): only the facts are
            if _registers(data) or _indented_clause(data) \
                    or not _plain_names(data):
                facts = self._teardown_text[path] = ()
            else:
                facts = self._teardown_text[path] = (_def_names(data),)
        return bool(facts) and not any(is_cleanup_name(n) for n in facts[0])

    def _plain_without_star(self, path: str, data: bytes) -> bool:
        """``_plain_names(data)`` and no star import in ``data``, the text of ``path``: asked once
        per file (``no_function_in`` asks 344 times of 163 files on ray+torch)."""
        found = self._plain_text.get(path)
        if found is None:
            found = self._plain_text[path] = _plain_names(data) and not _STAR_IMPORT.search(data)
        return found

    def _may_have_submodules(self, path: str) -> bool:
        """A module ``<mod>.<x>`` may exist, ``<mod>`` being the name the index gives ``path``'s
        functions (``ProjectView.functions_in``): some root that provides its top name has a
        folder ``<mod>`` (``find`` needs one)."""
        names = self.module_names(path)
        mod = names[0] if names else os.path.splitext(os.path.basename(path))[0]
        parts = mod.split(".")
        if not all(p.isidentifier() for p in parts):
            return True
        return any(self._isdir(os.path.join(r.dir, *parts)) for r in self._providers.get(parts[0], ()))

    def imports_text_with(self, path: str, words: tuple[str, ...], deps: Optional[dict] = None) -> bool:
        """A project module that ``path`` imports contains one of ``words``. ``deps`` gets the
        text stamp of each module read that is not one of the project's files (those are in
        ``project_stamp``): a folder walked for files skips some (``build/``) that ``find`` finds."""
        for target in self.imported_files(path):
            if deps is not None and target not in deps and target not in self._file_set():
                from .store import text_stamp

                stamp = text_stamp(target)
                deps[target] = stamp if stamp is not None else [0, 0, "-"]
            if self.text_has(target, words):
                return True
        return False

    def _file_set(self) -> frozenset:
        found = self.__dict__.get("_files_frozen")
        if found is None:
            found = self._files_frozen = frozenset(self.project_files())
        return found

    def imported_files(self, path: str) -> list[str]:
        """The project files ``path`` imports (a module, or the module an imported name is
        defined in), resolved once per run: the searches of one run ask for the same
        importers again (two hops from vLLM's and transformers' hubs: ~1,400 files)."""
        found = self._imported_files.get(path)
        if found is not None:
            return found
        names = self.module_names(path)
        mod = names[0] if names else ""
        is_pkg = path.endswith("__init__.py")
        out: list[str] = []
        for written in self.imported_names(path):
            full = self.absolute(written, mod, is_pkg)
            target = self.find(full) or (self.find(full.rsplit(".", 1)[0]) if "." in full else None)
            if target and not target.endswith(os.sep) and target != path and target not in out:
                out.append(target)
        self._imported_files[path] = out
        return out

    def _import_word_parts(self) -> list[dict[bytes, list[str]]]:
        """Word -> files whose import statements contain it: one pass over the project's
        import statements, so an importer search looks up its words instead of scanning
        every file again (a project of N files with M searches: N, not N x M, regex scans).
        In parts of the project's files, in order (a word's files are those of its lists):
        one part in a serial run; ``IMPORT_WORD_PARTS`` in pool workers (``SharedLog.parts``),
        so that the workers that ask for it at the same time build it together (ray+torch at
        -j2: both asked within ~0.05 s, and the one that waited for the other's whole table
        sat idle 0.28-0.72 s). A search unions its words' files (no joined table: joining
        the 16 parts cost a worker 0.04-0.10 CPU-s)."""
        if self._import_words is None:
            shared = self.shared
            if shared is None:
                self._import_words = [self._import_word_part(self.project_files())]
            else:
                n = IMPORT_WORD_PARTS
                cuts: list = []  # the files and where each part starts, once a part is built here

                def part(i: int) -> dict[bytes, list[str]]:
                    if not cuts:
                        files = self.project_files()
                        cuts.extend((files, [len(files) * k // n for k in range(n + 1)]))
                    files, cut = cuts
                    return self._import_word_part(files[cut[i]:cut[i + 1]])

                self._import_words = shared.parts("w", n, part)
        return self._import_words

    def _files_importing_word(self) -> dict[bytes, list[str]]:
        """The parts joined: the table one pass over the project's files builds."""
        table: dict[bytes, list[str]] = {}
        for part in self._import_word_parts():
            for w, files in part.items():
                table[w] = table.get(w, []) + files
        return table

    def _import_word_part(self, files: list[str]) -> dict[bytes, list[str]]:
        """``_import_word_parts``'s table of ``files``. (A part built in another worker
        leaves the import statements it read there: this worker reads those of its
        candidates again, as it did when another worker built the whole table.)"""
        table: dict[bytes, list[str]] = {}
        get = table.get
        known = self._imports_text
        for f in files:
            for w in _import_words(known.get(f) or self.import_lines(f)):
                found = get(w)  # (not setdefault: it made a list for each of 129,038 pairs)
                if found is None:
                    table[w] = [f]
                else:
                    found.append(f)
        return table

    # ------------------------------------------------------------------ resolution
    def absolute(self, name: str, module: str, is_package: bool) -> str:
        """``.env.SandboxEnv`` seen from ``pkg.agents.runner`` -> ``pkg.agents.env.SandboxEnv``."""
        if name.startswith("<module>."):
            return f"{module}.{name[len('<module>.'):]}"
        if not name.startswith("."):
            return name
        level = len(name) - len(name.lstrip("."))
        parts = module.split(".")
        if not is_package:
            parts = parts[:-1]
        if level > 1:
            parts = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
        rest = name[level:]
        return ".".join([*parts, rest] if rest else parts)

    def resolve(self, qualified: str, deps: Optional[dict] = None, depth: int = 0,
                words: Optional[tuple[str, ...]] = None):
        """What an absolute dotted name refers to: a ``ProjectFunction``, a ``ProjectClass``, a
        module path (str), or None when it is not (visibly) part of the project.

        ``words`` (not None): only a function matters to the caller (with words: one whose
        calls spell one of them, for a teardown search): a module whose text shows that its
        binding of the last name cannot be one (``no_function_in``) is not summarised, and None
        is returned there; the result then depends on that module's text (in ``deps``)."""
        if depth > _MAX_DEPTH or not qualified:
            return None
        parts = qualified.split(".")
        for i in range(len(parts), 0, -1):
            mod = ".".join(parts[:i])
            path = self.find(mod)
            if path is not None:
                return self._in_module(path, mod, parts[i:], deps, depth, words)
        return None

    def _in_module(self, path: str, mod: str, rest: list[str], deps, depth: int,
                   words: Optional[tuple[str, ...]] = None):
        if not rest:
            return path
        if words is not None and len(rest) == 1 and not path.endswith(os.sep):
            stamp = self.no_function_in(path, rest[0], words)
            if stamp is not None:
                if deps is not None and path not in deps:
                    deps[path] = stamp  # (a summary's stamp, when read for another step, says more)
                return None
        s = self.summary(path, deps)
        name = rest[0]
        if s is not None:
            is_pkg = path.endswith("__init__.py")
            if name in s["functions"]:
                return ProjectFunction(mod, path, name, s["functions"][name]) if len(rest) == 1 else None
            if name in s["classes"]:
                return self._in_class(ProjectClass(mod, path, name, s["classes"][name]), rest[1:], deps, depth)
            if name in s["vars"]:
                cls = self._type(s["vars"][name], mod, is_pkg, deps, depth)
                return self._in_class(cls, rest[1:], deps, depth) if cls is not None and rest[1:] else None
            if name in s["imports"]:
                target = self.absolute(s["imports"][name], mod, is_pkg)
                return self.resolve(".".join([target, *rest[1:]]), deps, depth + 1, words)
        sub = self.find(f"{mod}.{name}")
        if sub is not None:
            return self._in_module(sub, f"{mod}.{name}", rest[1:], deps, depth + 1, words)
        if s is not None:
            for star in s["star"]:
                hit = self.resolve(".".join([self.absolute(star, mod, path.endswith("__init__.py")), *rest]),
                                   deps, depth + 1, words)
                if hit is not None:
                    return hit
        return None

    def _type(self, written: str, mod: str, is_pkg: bool, deps, depth: int) -> Optional[ProjectClass]:
        if written.endswith("()"):
            return None  # made by a factory function: its type is not plain
        s_imports = None
        path = self.find(mod)
        if path is not None:
            s = self.summary(path, deps)
            s_imports = s["imports"] if s else None
        first, _, rest = written.partition(".")
        if s_imports and first in s_imports:
            full = self.absolute(s_imports[first], mod, is_pkg) + ("." + rest if rest else "")
        else:
            full = f"{mod}.{written}"
        hit = self.resolve(full, deps, depth + 1)
        return hit if isinstance(hit, ProjectClass) else None

    def _in_class(self, cls: Optional[ProjectClass], rest: list[str], deps, depth: int):
        if cls is None:
            return None
        if not rest:
            return cls
        name = rest[0]
        for c in self.mro(cls, deps):
            if name in c.info["methods"]:
                if len(rest) == 1:
                    return ProjectFunction(c.module, c.path, f"{c.name}.{name}", c.info["methods"][name], c)
                return None
            if name in c.info["attrs"]:
                typ = self._type(c.info["attrs"][name], c.module, c.path.endswith("__init__.py"), deps, depth)
                return self._in_class(typ, rest[1:], deps, depth + 1)
        return None

    def mro(self, cls: ProjectClass, deps=None) -> Iterator[ProjectClass]:
        """``cls`` and its bases (depth first, each once), bases in other modules included."""
        seen: set[tuple[str, str]] = set()
        stack = [cls]
        while stack and len(seen) < 64:
            c = stack.pop(0)
            if (c.path, c.name) in seen:
                continue
            seen.add((c.path, c.name))
            yield c
            for base in c.info["bases"]:
                b = self._type(base, c.module, c.path.endswith("__init__.py"), deps, 0)
                if b is not None:
                    stack.append(b)

    # ------------------------------------------------------------------ importers
    def project_files(self) -> list[str]:
        if self.files is None:
            from .store import walk_roots

            self._walked = [(r.dir, r.only) for r in self.roots]
            self.files = walk_roots(self._walked)
        return self.files

    def project_stamp(self) -> tuple:
        """The dependency stamp of the project's files (``store.project_key``), taken once per
        run, before the first importer search reads any of them: ``(key, stamp)``."""
        if self._project_stamp is None:
            from .store import PROJECT, PROJECT_UNKNOWN, UNSTAMPED, project_digest, project_key

            self.project_files()
            shared = self.shared
            found = shared.get("p") if shared is not None else None
            if found is not None:  # another worker of this run took it (same roots: the walk costs)
                self._project_stamp = found
            elif self._walked is None:  # a file list given by the caller: a warm run cannot rebuild it
                self._project_stamp = (PROJECT, [0, 0, PROJECT_UNKNOWN])
            elif self.store is not None and not self.store.stamped:
                # a run that keeps no result (``--no-cache``: ``SummaryStore.stamped``) has no use
                # for the digest, a walk of the roots and a stat of every file (ray+torch: 0.04-0.07
                # CPU-s in each -j2 worker that searched importers)
                self._project_stamp = (project_key(self._walked), [0, 0, UNSTAMPED])
            else:  # the walk again, as a warm run checks it (a file changed since the first walk: re-lint)
                key = project_key(self._walked)
                # the snapshot of this walk goes to the cache folder: the next warm run lists no folder
                snap_dir = self.store.dir if self.store is not None else None
                self._project_stamp = (key, [0, 0, project_digest(key, snap_dir=snap_dir, hold=False)])
                if shared is not None:
                    shared.put("p", self._project_stamp)
        return self._project_stamp

    def depend_on_files(self, deps: Optional[dict]) -> None:
        """Record in ``deps`` that a result depends on the set and the texts of the project's
        files (a search of importers: any file may come to import a module, or stop)."""
        if deps is not None:
            key, stamp = self.project_stamp()
            deps[key] = stamp

    def importers(self, path: str, deps: Optional[dict] = None, depth: int = 2) -> list[str]:
        """Project files that import the module in ``path`` (directly, or through up to
        ``depth`` - 1 intermediate modules), nearest first. The answer depends on every project
        file (``depend_on_files``, recorded in ``deps``)."""
        self.depend_on_files(deps)
        out: list[str] = []
        frontier = [path]
        seen = {path}
        for _ in range(depth):
            nxt: list[str] = []
            for target in frontier:
                for f in self._direct_importers(target, deps):
                    if f not in seen:
                        seen.add(f)
                        nxt.append(f)
            # nearest first: same folder as the module, then the longest shared path
            nxt.sort(key=lambda f: (-len(os.path.commonpath([f, path])), f))
            out += nxt
            # a widely imported module (transformers' training_args: hundreds of importers)
            # would make the next hop the whole project: go on from the nearest ones only
            frontier = nxt[:_HOP_FRONTIER]
        return out

    def _direct_importers(self, path: str, deps) -> list[str]:
        names = self.module_names(path)
        if not names:
            return []
        words = {n.rsplit(".", 1)[-1] for n in names}
        # only files with an import statement that can name the module are summarised: it has
        # the module's last word and either its parent package (``from pkg.sub import mod``,
        # ``import pkg.sub.mod``) or is relative (``from . import mod``); a bare word such as
        # `base` or `utils` occurs in the imports of most files of a large project
        parents = [n.rsplit(".", 1)[0].encode() for n in names if "." in n]
        top_level = any("." not in n for n in names)
        modules = set(names)
        below = tuple(n + "." for n in names)
        out = []
        for entry in self._spelling(tuple(sorted(w.encode() for w in words))):
            f, spelled, absolute = entry
            if f == path:
                continue
            if not any(top_level or _RELATIVE.match(st) or any(p in st for p in parents) for st in spelled):
                continue
            # an absolute import names the module only if it spells its last word (``import
            # pkg.mod``, ``from pkg import mod``); a relative one may import it as a parent
            # package (``from ..x import y`` imports ``pkg``): those two kinds find the same
            # importers as the file's whole import block, parsed once per statement text
            if absolute is None:
                absolute = entry[2] = self._absolute_names(f, spelled)
            if any(full in modules or full.startswith(below) for full in absolute + self._relative_names(f)):
                out.append(f)
        return out

    def _spelling(self, encoded: tuple[bytes, ...]) -> list[list]:
        """``[file, its import statements that spell one of the words (\\b-bounded), their
        absolute names or None until asked]`` for each project file with such a statement, in
        path order: found once per run for a set of words, not per module searched (vLLM and
        transformers have dozens of ``utils`` modules, and most files import some ``utils``)."""
        found = self._spellings.get(encoded)
        if found is not None:
            return found
        pattern = re.compile(rb"\b(" + b"|".join(re.escape(w) for w in encoded) + rb")\b")
        parts = self._import_word_parts()
        found = []
        for f in sorted({f for table in parts for w in encoded for f in table.get(w, ())}):
            # statements that spell one of the words (``in`` first: a regex search per
            # statement of every candidate file cost more than the rest of the search)
            stmts = self.import_lines(f)
            if len(encoded) == 1:
                spelled = [st for st in stmts if encoded[0] in st]
            else:
                spelled = [st for st in stmts if any(w in st for w in encoded)]
            spelled = [st for st in spelled if pattern.search(st)]
            if spelled:  # (a file none spells is no importer of any module with these last words)
                found.append([f, spelled, None])
        self._spellings[encoded] = found
        return found

    def _absolute_names(self, path: str, stmts: list[bytes]) -> list[str]:
        """The absolute names ``stmts`` (import statements of ``path``) import."""
        names = self.module_names(path)
        mod = names[0] if names else ""
        is_pkg = path.endswith("__init__.py")
        out = []
        for stmt in stmts:
            written_names = self._statement_names.get(stmt)
            if written_names is None:
                written_names = _simple_names(stmt)
                if written_names is None:
                    written_names = _names_imported([stmt])
                self._statement_names[stmt] = written_names
            out += [self.absolute(w, mod, is_pkg) for w in written_names]
        return out

    def _relative_names(self, path: str) -> list[str]:
        """The absolute names the relative import statements of ``path`` import."""
        found = self._relative.get(path)
        if found is None:
            found = self._relative[path] = self._absolute_names(
                path, [st for st in self.import_lines(path) if _RELATIVE.match(st)])
        return found

    def view(self, path: str) -> "ProjectView":
        return ProjectView(self, os.path.abspath(path))


#: pool workers build ``_import_word_parts`` in this many parts of the project's files
#: (``SharedLog.parts``): ray+torch, 4,864 files, ~0.35 CPU-s in all
IMPORT_WORD_PARTS = 16


def _shared_summary(shared, path: str) -> Optional[tuple[Optional[dict], list]]:
    """(summary, dependency stamp) another worker computed for ``path`` in this run, when the
    file's stat is still the one it summarised (as ``store.load_summary`` trusts a cache entry)."""
    hit = shared.get("s" + path)
    if hit is None:
        return None
    from .store import current

    entry, stamp = hit
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (entry[3], stamp) if current(entry, st) else None


#: an import statement: its line, and a parenthesised name list over several lines whole
_IMPORT_STATEMENT = re.compile(rb"^[ \t]*(?:from|import)[ \t][^\n(]*(?:\([^)]*\))?[^\n]*", re.M)
_RELATIVE = re.compile(rb"[ \t]*from[ \t]+\.")
_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


#: every byte that is no identifier byte -> a space
_WORD_BYTES_ONLY = bytes(c if c in _IDENT else 0x20 for c in range(256))


def _import_words(statements: list[bytes]) -> set[bytes]:
    """``{w for st in statements for w in _WORD.findall(st)}`` without a regex: the runs of
    identifier bytes (``translate``, ``split``), a run's leading digits dropped (``_WORD``
    starts at its first letter or ``_``). 4,864 rt files: 0.060 -> 0.050 CPU-s."""
    words = set(b" ".join(statements).translate(_WORD_BYTES_ONLY).split())
    for w in [w for w in words if w[0] < 0x41]:  # a digit first (every other byte < "A" is a space now)
        words.discard(w)
        w = w.lstrip(b"0123456789")
        if w:
            words.add(w)
    return words


def import_statements(data: bytes) -> list[bytes]:
    """``_IMPORT_STATEMENT.findall(data)``, 4x cheaper: a match starts a line that holds
    ``import`` or ``from``, and ``bytes.find`` reaches those lines faster than the regex
    engine tries every line start (1.5 -> 0.4 CPU-s over 8,670 files; the same matches,
    tests/engine/test_project_index.py). The occurrences of both words are walked in order,
    each line tried once, and those inside the statement found last are skipped (``find``
    again from its end: a ``from`` line's ``import``, a parenthesised list's lines), not
    collected and sorted first (4,864 rt files: ~0.19 -> ~0.18 CPU-s)."""
    out: list[bytes] = []
    find = data.find
    match = _IMPORT_STATEMENT.match
    at_from = find(b"from")
    at_import = find(b"import")
    tried = -1  # the line start tried last
    while True:
        if at_from < 0:
            if at_import < 0:
                return out
            i = at_import
            at_import = find(b"import", i + 6)
        elif at_import < 0 or at_from < at_import:
            i = at_from
            at_from = find(b"from", i + 4)
        else:
            i = at_import
            at_import = find(b"import", i + 6)
        start = data.rfind(b"\n", 0, i) + 1
        if start == tried:
            continue
        tried = start
        m = match(data, start)
        if m:
            out.append(m.group())
            end = m.end()
            if 0 <= at_from < end:
                at_from = find(b"from", end)
            if 0 <= at_import < end:
                at_import = find(b"import", end)


def names_of_statements(statements: list[bytes]) -> list[str]:
    """``_names_imported(statements)``, without ``ast`` when every statement has one of the
    shapes ``_simple_names`` reads: such statements joined by newlines parse one by one (each
    ends its own lines: no bracket, string or backslash runs on into the next), so the block
    imports what each of them does, in order."""
    out: list[str] = []
    for st in statements:
        names = _simple_names(st)
        if names is None:
            return _names_imported(statements)
        out += names
    return out


def _names_imported(statements: list[bytes]) -> list[str]:
    """What import statements name, as written (``pkg.sub.mod``, ``.env.SandboxEnv``,
    ``pkg.sub`` for a star import)."""
    stmts = [st.strip() for st in statements]
    trees: list[ast.Module] = []
    try:
        trees.append(ast.parse(b"\n".join(stmts)))
    except (SyntaxError, ValueError):
        for st in stmts:  # one odd line (a backslash continuation, a `;`) loses only itself
            try:
                trees.append(ast.parse(st))
            except (SyntaxError, ValueError):
                continue
    out: list[str] = []
    for tree in trees:
        for node in tree.body:
            if isinstance(node, ast.Import):
                out += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = "." * (node.level or 0) + (node.module or "")
                for a in node.names:
                    out.append(base if a.name == "*" else
                               f"{base}.{a.name}" if base and not base.endswith(".") else f"{base}{a.name}")
    return out


# ``_simple_names``: an import statement of the common shapes, read without ``ast``. The
# shapes are a subset of Python's grammar (one statement; ASCII; dotted names without spaces
# around their dots; ``as`` between spaces; a parenthesised name list over several lines, with
# comments and a trailing comma; a comment at the end); anything else (``;``, a backslash, a
# string, ``\r``, a form feed, a keyword as a name...) is left to ``ast``.
_S_NAME = rb"[A-Za-z_][A-Za-z0-9_]*"
_S_DOTTED = _S_NAME + rb"(?:\." + _S_NAME + rb")*"
_S_COMMENT = rb"(?:#[\t -~]*)?"
_S_GAP = rb"(?:[ \t\n]|#[\t -~]*\n)"  # inside parentheses: spaces, newlines, comment lines


def _s_list(name: bytes, gap: bytes, gap1: bytes) -> bytes:
    alias = name + rb"(?:" + gap1 + rb"as" + gap1 + _S_NAME + rb")?"
    return alias + rb"(?:" + gap + rb"," + gap + alias + rb")*"


_SIMPLE_IMPORT = re.compile(rb"import[ \t]+(" + _s_list(_S_DOTTED, rb"[ \t]*", rb"[ \t]+") + rb")[ \t]*"
                            + _S_COMMENT)
_SIMPLE_FROM = re.compile(
    rb"from[ \t]+(\.*)(" + _S_DOTTED + rb")?[ \t]+import(?:[ \t]*(\*)|[ \t]+("
    + _s_list(_S_NAME, rb"[ \t]*", rb"[ \t]+") + rb")|[ \t]*\((" + _S_GAP + rb"*"
    + _s_list(_S_NAME, _S_GAP + rb"*", _S_GAP + rb"+") + rb"(?:" + _S_GAP + rb"*,)?" + _S_GAP + rb"*)\))[ \t]*"
    + _S_COMMENT)
_S_COMMENTS = re.compile(rb"#[^\n]*")


def _simple_names(statement: bytes) -> Optional[list[str]]:
    """``_names_imported([statement])`` for a statement of the shapes above, without parsing
    it; None for any other text (then ``ast`` decides). tests/engine/test_s6_import_scanner.py
    compares the two on every import statement of the installed packages and on near misses."""
    st = statement.strip()
    if not st.isascii() or b"coding" in st:  # (a comment line can declare the text's encoding)
        return None
    m = _SIMPLE_IMPORT.fullmatch(st)
    if m is not None:
        return _s_names(m.group(1).decode())
    m = _SIMPLE_FROM.fullmatch(st)
    if m is None:
        return None
    dots, module, star, flat, grouped = m.groups()
    if module is not None:
        base = dots.decode() + module.decode()
        if not _HARD_KEYWORDS.isdisjoint(module.decode().split(".")):
            return None
    elif dots:
        base = dots.decode()
    else:
        return None
    if star is not None:
        return [base]
    if flat is None:
        flat = _S_COMMENTS.sub(b"", grouped) if b"#" in grouped else grouped
    names = _s_names(flat.decode())
    if names is None:
        return None
    if base.endswith("."):
        return [base + n for n in names]
    return [f"{base}.{n}" for n in names]


#: Python's keywords (not the soft ones): none can be a name in an import statement
_HARD_KEYWORDS = frozenset(keyword.kwlist)


def _s_names(text: str) -> Optional[list[str]]:
    """The names of a matched ``name [as alias], ...`` list (comments removed); None when a
    name or an alias is a keyword (Python rejects the statement)."""
    names = []
    words = []
    for item in text.split(","):
        parts = item.split()
        if parts:  # (empty: the trailing comma of a parenthesised list)
            names.append(parts[0])
            words.append(parts[0])
            words.append(parts[-1])
    if not _HARD_KEYWORDS.isdisjoint(".".join(words).split(".")):
        return None
    return names


def _all_functions(s: dict) -> Iterator[dict]:
    yield from s["functions"].values()
    for c in s["classes"].values():
        yield from c["methods"].values()


def functions_of(s: dict) -> Iterator[tuple[str, dict]]:
    """(qualname, summary) of every top-level function and method of a module summary."""
    for name, fn in s["functions"].items():
        yield name, fn
    for cname, c in s["classes"].items():
        for name, fn in c["methods"].items():
            yield f"{cname}.{name}", fn


@dataclass
class ProjectView:
    """The project index seen from one file; records what the file's findings depend on."""

    index: ProjectIndex
    path: str
    #: other modules' files this file's analysis read: abspath -> [mtime_ns, size, summary digest]
    deps: dict = field(default_factory=dict)

    @property
    def module(self) -> str:
        names = self.index.module_names(self.path)
        return names[0] if names else os.path.splitext(os.path.basename(self.path))[0]

    @property
    def is_package(self) -> bool:
        return self.path.endswith("__init__.py")

    def resolve(self, name: str, words: Optional[tuple[str, ...]] = None):
        """``name`` as qualified by ``ModuleFacts`` (relative, ``<module>.X`` or absolute);
        ``words``: see ``ProjectIndex.resolve``."""
        full = self.index.absolute(name, self.module, self.is_package)
        hit = self.index.resolve(full, self.deps, 0, words)
        self.deps.pop(self.path, None)  # the file itself is not a dependency
        return hit

    def function(self, name: str, words: tuple[str, ...] = ()) -> Optional[ProjectFunction]:
        """The function in ANOTHER module of the project that ``name`` refers to (with
        ``words``: None, too, for a function whose calls surely spell none of them). A module
        whose text shows that it cannot give a function is not summarised (``no_function_in``)."""
        hit = self.resolve(name, words)
        if isinstance(hit, ProjectFunction) and hit.path != self.path:
            return hit
        return None

    def callee(self, fn: ProjectFunction, written: str, words: tuple[str, ...] = ()) -> Optional[ProjectFunction]:
        """What the call ``written`` (as recorded in ``fn``'s summary) calls, if in the project
        (with ``words``: None, too, for a function whose calls surely spell none of them). A
        module whose text shows that it cannot give a function is not summarised."""
        first, _, rest = written.partition(".")
        is_pkg = fn.path.endswith("__init__.py")
        if first in ("self", "cls") and fn.cls is not None and rest:
            full = f"{fn.cls.module}.{fn.cls.name}.{rest}"
        else:
            imports = fn.info.get("imports", {})
            s = self.index.summary(fn.path, self.deps)
            mod_imports = s["imports"] if s else {}
            table = imports if first in imports else mod_imports
            if first in table:
                full = self.index.absolute(table[first], fn.module, is_pkg) + ("." + rest if rest else "")
            else:
                full = f"{fn.module}.{written}"
        hit = self.index.resolve(full, self.deps, 0, words)
        self.deps.pop(self.path, None)
        return hit if isinstance(hit, ProjectFunction) else None

    def importers(self) -> list[str]:
        """Files of the project that import this module (up to two hops), nearest first."""
        found = self.index.importers(self.path, self.deps)
        self.deps.pop(self.path, None)
        return found

    def summary_of(self, path: str) -> Optional[dict]:
        s = self.index.summary(path, self.deps)
        self.deps.pop(self.path, None)
        return s

    def functions_in(self, path: str) -> Iterator[ProjectFunction]:
        s = self.summary_of(path)
        if s is None:
            return
        names = self.index.module_names(path)
        mod = names[0] if names else os.path.splitext(os.path.basename(path))[0]
        for name, fn in s["functions"].items():
            yield ProjectFunction(mod, path, name, fn)
        for cname, c in s["classes"].items():
            pc = ProjectClass(mod, path, cname, c)
            for name, fn in c["methods"].items():
                yield ProjectFunction(mod, path, f"{cname}.{name}", fn, pc)

    def registered(self, path: str) -> set[str]:
        """Names a module registers as ``atexit``/signal handlers (module level and in functions)."""
        s = self.summary_of(path)
        out: set[str] = set()
        if s is None:
            return out
        out.update(n.rsplit(".", 1)[-1] for n in s.get("registered", []))
        for fn in _all_functions(s):
            for call in fn["calls"]:
                if len(call) > 3 and call[0].rsplit(".", 1)[-1] in ("register", "signal", "add_signal_handler"):
                    out.update(a.rsplit(".", 1)[-1] for a in call[3])
        return out


def on_teardown_path(fn: ProjectFunction, flags: int, registered: set[str], is_cleanup_name) -> bool:
    """A call in ``fn`` runs when the program stops: it sits in a ``finally``/``except`` block,
    or ``fn`` is a cleanup function (``is_cleanup_name(name)``, the rules' vocabulary) or a
    registered ``atexit``/signal handler."""
    return bool(flags & IN_CLEANUP) or fn.name in registered or is_cleanup_name(fn.name)


#: At most this many importers are read (summarised) per search, nearest first. A module with
#: a huge fan-in (vLLM's ``parallel_state``: 1,900 files two imports away) would otherwise cost
#: more than the whole lint.
_SCAN_WITH_WORDS = 160
#: importers of one hop whose own importers are searched (the nearest ones)
_HOP_FRONTIER = 32


def teardown_elsewhere(view: "ProjectView", matches, is_cleanup_name,
                       words: tuple[str, ...] = ()) -> tuple[Optional[str], list[str]]:
    """Search the modules that import this one (two hops) for a call on a teardown path that
    ``matches(written, args)`` (directly, or inside the project function it calls).

    ``words``: text a match must contain (``destroy_process_group``, the attribute name): every
    call ``matches`` accepts spells one of them, as written or in its arguments.
    Only importers that contain one, or import a module that does (the teardown may be a call
    to a function defined there), are read: a summary costs an ``ast`` parse, a text search
    a read. A callee is not looked for in a module whose text shows it cannot be a function
    that spells a word (``ProjectIndex.no_function_in``; the result then depends on that text). A function re-exported through a package ``__init__`` that lacks the word is not
    followed (the finding then stays, as without the index).

    Returns (``path:line`` of the teardown found or None, the files looked in). The importers'
    text tests run as the search reaches them: a search that finds a teardown stops there, and
    ``looked`` is then the importers tested so far (the rules read it only when none is found);
    one that finds none tests importers until it knows whether more than ``_SCAN_WITH_WORDS``
    pass (the files looked in are then the same as with every importer tested first). The
    importers past that point change neither answer, so their texts are not dependencies."""
    importers = view.importers()
    if not _is_test(view.path):
        # a test's teardown (a fixture's destroy, a test actor's cleanup) is not the shutdown
        # path of the code it tests
        importers = [p for p in importers if not _is_test(p)]
    scan = _scanned(view, importers, words)
    passed: list[str] = []
    for path in scan:
        passed.append(path)
        if len(passed) > _SCAN_WITH_WORDS:
            break
        if view.index.no_teardown_path(path, is_cleanup_name):
            continue  # nothing there runs on a teardown path: not summarised (its text decides)
        registered = view.registered(path)
        s = view.summary_of(path) or {}
        for written in s.get("registered", []):
            if matches(written, []):
                return f"{display(path)} (registered handler)", importers[:importers.index(path) + 1]
        for fn in view.functions_in(path):
            for call in fn.info["calls"]:
                written, line, flags = call[0], call[1], call[2]
                args = call[3] if len(call) > 3 else []
                if not on_teardown_path(fn, flags, registered, is_cleanup_name):
                    continue
                if matches(written, args):
                    return f"{display(path)}:{line}", importers[:importers.index(path) + 1]
                callee = view.callee(fn, written, words)
                if callee is not None and any(matches(c[0], c[3] if len(c) > 3 else []) for c in callee.info["calls"]):
                    return f"{display(path)}:{line}", importers[:importers.index(path) + 1]
    else:
        # the importers whose text cannot hold a match count as looked in: they have no teardown
        return None, importers
    return None, passed[:_SCAN_WITH_WORDS]


def _scanned(view: "ProjectView", importers: list[str], words: tuple[str, ...]) -> Iterator[str]:
    """The importers whose text contains one of ``words`` or that import a module that does, in
    order, tested as they are asked for (each importer's text is in the dependency on the
    project's files, ``importers``); every importer without ``words``."""
    if not words:
        yield from importers
        return
    index = view.index
    for p in importers:
        hit = index.text_has(p, words) or index.imports_text_with(p, words, view.deps)
        view.deps.pop(view.path, None)
        if hit:
            yield p


def looked_in(looked: Optional[list[str]], missing: str) -> str:
    """Message suffix: where the project index looked for ``missing`` ("teardown", "shutdown")."""
    if looked is None:
        return ""  # no project index (a snippet, stdin)
    if not looked:
        return " (no other module of the project imports this one)"
    names = ", ".join(looked[:3]) + (f" and {len(looked) - 3} more" if len(looked) > 3 else "")
    return f" (no {missing} in this module or in the modules that import it: {names})"


def _is_test(path: str) -> bool:
    name = os.path.basename(path)
    parts = path.replace(os.sep, "/").split("/")
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py" or "tests" in parts[:-1]


# ---------------------------------------------------------------------- the run's index
_current: Optional[ProjectIndex] = None


def set_current(index: Optional[ProjectIndex]) -> None:
    """Install the run's index (before the pool forks: workers inherit it)."""
    global _current
    _current = index


def current() -> Optional[ProjectIndex]:
    return _current


def view_for(path: str) -> Optional[ProjectView]:
    """The index seen from ``path``, or None when the run has no index (stdin, the API)."""
    if _current is None or not path or path in ("-", "<string>"):
        return None
    return _current.view(path)
