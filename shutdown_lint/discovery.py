"""Finding the files to lint.

- Directories are walked for ``*.py``; ``.pyi`` stubs are always skipped (they have no
  runtime behaviour to stop badly).
- ``.gitignore`` files are honoured at every level (a deeper file overrides a shallower
  one, ``!pattern`` re-includes), read from the enclosing git work tree's top down.
- ``exclude`` patterns (gitignore syntax, relative to the project root) and a fixed set
  of tool/venv directories are pruned.
- A file named on the command line is always linted, unless ``force_exclude``.
- Symlinked directories are followed once: a loop is never walked twice.
- A walked file is stat'ed through its directory listing (``DirEntry.stat``, relative to the open
  directory): the stamp the warm path compares with the cache, so a file costs one ``stat``
  whether it was named or found. The listing also says where no ``.gitignore`` or configuration
  file can be (``Ignorer.listed``, ``Discovery.plain_dirs``): nothing is opened or stat'ed for them.
"""

from __future__ import annotations

import os
import stat
from operator import itemgetter

from .record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterable, Optional

DEFAULT_EXCLUDED_DIRS = frozenset({
    ".git", ".hg", ".svn", ".bzr", ".venv", "venv", ".tox", ".nox", "__pycache__", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".shutdown_lint_cache", "node_modules", "site-packages",
    "__pypackages__", ".eggs", ".direnv", ".ipynb_checkpoints", "buck-out", "_build", "build", "dist",
})


class SourceFile(tuple):
    """One file to lint: ``(display, abspath, mtime_ns, size)``, a tuple (discovery makes one
    per file, thousands for pre-commit) with named fields."""

    __slots__ = ()

    def __new__(cls, display: str, abspath: str, mtime_ns: Optional[int] = None,
                size: Optional[int] = None) -> "SourceFile":
        return tuple.__new__(cls, (display, abspath, mtime_ns, size))

    #: what the user sees (relative to the working directory when inside it)
    display: str = property(itemgetter(0))  # type: ignore[assignment]
    #: absolute, for the cache
    abspath: str = property(itemgetter(1))  # type: ignore[assignment]
    #: its stat stamp when discovery took it (a file named on the command line): the warm
    #: path's cache check uses it instead of a second ``stat``. Only these two numbers are
    #: kept: thousands of retained ``os.stat_result`` objects (~16 values each) cost more
    #: than the ``stat`` calls themselves
    mtime_ns: Optional[int] = property(itemgetter(2))  # type: ignore[assignment]
    size: Optional[int] = property(itemgetter(3))  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SourceFile(display={self[0]!r}, abspath={self[1]!r}, mtime_ns={self[2]!r}, size={self[3]!r})"


class Discovery(Record):
    FIELDS = ("files", "errors", "warnings")

    def __init__(self, files: Optional[list[SourceFile]] = None, errors: Optional[list[str]] = None,
                 warnings: Optional[list[str]] = None) -> None:
        self.files: list[SourceFile] = [] if files is None else files
        self.errors: list[str] = [] if errors is None else errors
        #: things skipped while walking that the user should hear about (broken symlinks)
        self.warnings: list[str] = [] if warnings is None else warnings
        #: directories the walk listed that hold no entry named as one of ``discover``'s
        #: ``config_names``: no configuration file there, whatever else it asks (not a field: a
        #: by-product of the walk, for the command line's per-directory settings)
        self.plain_dirs: set[str] = set()
        #: directory -> its ``os.stat_result`` as the walk took it, before listing it (a by-product
        #: too: the warm run's snapshot of the project's folders compares their stamps with it,
        #: ``index.store._Snapshot``, instead of a ``stat`` a folder)
        self.folders: dict[str, os.stat_result] = {}


def display_path(abspath: str, cwd: str) -> str:
    # fast path for the common case (both normalised, abspath under cwd): what relpath would
    # return, without its per-call normalisation (it shows up on 10k-file runs)
    prefix = cwd.rstrip(os.sep) + os.sep
    if abspath.startswith(prefix):
        return abspath[len(prefix):]
    rel = os.path.relpath(abspath, cwd)
    return abspath if rel.startswith("..") else rel


class Ignorer:
    """What ``exclude`` patterns and ``.gitignore`` files leave out (shared by discovery, the
    command line's nested configurations and stdin, and the language server). pathspec is
    imported only when there is a pattern to match: a tree with no ``.gitignore`` and no
    ``exclude`` (a warm run over installed sources) does without it."""

    def __init__(self, root: str, exclude: Iterable[str], respect_gitignore: bool) -> None:
        self.root = os.path.abspath(root)
        patterns = [p for p in exclude if p.strip()]
        if patterns:
            import pathspec

            self.exclude = pathspec.GitIgnoreSpec.from_lines(patterns)
        else:
            self.exclude = None
        self.respect_gitignore = respect_gitignore
        self._specs: dict[str, object] = {}
        #: directory -> does a ``.gitignore`` between the git top and it (both included) exist
        self._chained: dict[str, bool] = {}
        self._top = self._git_top(self.root) or self.root

    @staticmethod
    def _git_top(start: str) -> Optional[str]:
        here = start
        while True:
            if os.path.exists(os.path.join(here, ".git")):
                return here
            parent = os.path.dirname(here)
            if parent == here:
                return None
            here = parent

    def _spec(self, directory: str):
        if directory not in self._specs:
            spec = None
            try:
                with open(os.path.join(directory, ".gitignore"), encoding="utf-8", errors="replace") as fh:
                    lines = fh.read().splitlines()
            except OSError:
                pass
            else:
                import pathspec

                spec = pathspec.GitIgnoreSpec.from_lines(lines)
            self._specs[directory] = spec
        return self._specs[directory]

    def listed(self, directory: str, entries: list) -> None:
        """A walk's listing of ``directory`` (its ``DirEntry`` objects): without a ``.gitignore``
        entry there is none to read (``_spec`` is not asked to open one)."""
        if directory not in self._specs and not any(e.name == ".gitignore" for e in entries):
            self._specs[directory] = None

    def files_kept(self, directory: str) -> bool:
        """True when no entry directly in ``directory`` (an absolute, normalised path) can be
        ignored by a pattern: no ``exclude`` pattern applies there and no ``.gitignore`` file is
        read for it. ``ignored(path, False)`` is then False for each file in it, and
        ``ignored(path, True)`` for a subdirectory is only its name in ``DEFAULT_EXCLUDED_DIRS``:
        a walk need not ask."""
        if self.exclude is not None and _inside(directory, self.root):
            return False
        if not self.respect_gitignore or not _inside(directory, self._top):
            return True
        return not self._chain_has_spec(directory)

    def _chain_has_spec(self, directory: str) -> bool:
        known = self._chained.get(directory)
        if known is None:
            parent = os.path.dirname(directory)
            known = self._spec(directory) is not None or (
                directory != self._top and parent != directory and self._chain_has_spec(parent))
            self._chained[directory] = known
        return known

    def ignored(self, path: str, is_dir: bool) -> bool:
        path = os.path.abspath(path)
        if is_dir and os.path.basename(path) in DEFAULT_EXCLUDED_DIRS:
            return True
        suffix = "/" if is_dir else ""
        if self.exclude is not None and _inside(path, self.root):
            rel = os.path.relpath(path, self.root).replace(os.sep, "/")
            if rel != "." and self.exclude.match_file(rel + suffix):
                return True
        if self.respect_gitignore:
            base = self._top if _inside(path, self._top) else None
            if base is not None:
                verdict = None
                directory = os.path.dirname(path)
                chain = []
                while True:
                    chain.append(directory)
                    if directory == base or os.path.dirname(directory) == directory:
                        break
                    directory = os.path.dirname(directory)
                for d in reversed(chain):  # shallow to deep: deeper files win
                    spec = self._spec(d)
                    if spec is None:
                        continue
                    rel = os.path.relpath(path, d).replace(os.sep, "/")
                    include = spec.check_file(rel + suffix).include
                    if include is not None:
                        verdict = include
                if verdict:
                    return True
        return False


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def discover(paths: Iterable[str], root: str, exclude: Iterable[str] = (), *, respect_gitignore: bool = True,
             force_exclude: bool = False, cwd: Optional[str] = None,
             config_names: frozenset[str] = frozenset()) -> Discovery:
    cwd = os.path.abspath(cwd or os.getcwd())
    ignorers: list[Ignorer] = []

    def ignorer() -> Ignorer:  # built on first use (pathspec, .gitignore files): a file list needs none
        if not ignorers:
            ignorers.append(Ignorer(root, exclude, respect_gitignore))
        return ignorers[0]

    out = Discovery()
    files = out.files
    seen_files: set[str] = set()
    walker = _Walker(out, seen_files, cwd, config_names)

    paths = list(paths)
    prefix = cwd.rstrip(os.sep) + os.sep
    # pre-commit and file lists pass thousands of names: this loop is kept tight (it is most of
    # a warm run after the stat calls themselves). A relative name is stat'ed as given when it
    # is relative to the process's directory (a shorter path to resolve)
    here = cwd == os.getcwd()
    all_plain = _all_plain(paths)
    do_stat, isdir, new = os.stat, stat.S_ISDIR, tuple.__new__
    for arg in paths:
        if all_plain or _plain(arg):  # normalised and relative: its absolute path is cwd/arg, its display itself
            abspath, display = prefix + arg, arg
        else:
            abspath, display = os.path.abspath(os.path.join(cwd, arg)), None
        try:
            st = do_stat(arg if here and display is not None else abspath)  # one stat per named path
        except (OSError, ValueError):
            out.errors.append(f"{arg}: no such file or directory")
            continue
        if isdir(st.st_mode):
            if force_exclude and ignorer().ignored(abspath, True):
                continue
            walker.walk(abspath, ignorer())
        elif abspath.endswith(".pyi") or abspath in seen_files or (force_exclude and ignorer().ignored(abspath, False)):
            continue
        else:
            seen_files.add(abspath)
            files.append(new(SourceFile, (display or display_path(abspath, cwd), abspath, st.st_mtime_ns, st.st_size)))
    files.sort(key=_DISPLAY)
    return out


def _plain(arg: str) -> bool:
    """Is ``arg`` a relative path that ``normpath`` would leave alone (so ``cwd/arg`` is its
    absolute path, and its display path is itself)? Conservative: a False takes the general way."""
    return os.altsep is None and arg != "" and arg[0] != os.sep and arg[0] != "." and arg[-1] != os.sep \
        and os.sep * 2 not in arg and os.sep + "." not in arg


def _all_plain(paths: list[str]) -> bool:
    """``_plain`` for every path at once: the same tests on the paths joined by NUL (which no
    command-line argument holds), in C instead of a Python call per path."""
    if not paths or os.altsep is not None:
        return False
    sep = os.sep
    joined = "\0".join(paths)
    if joined.count("\0") != len(paths) - 1:  # a path holds a NUL: the joined tests would be wrong
        return False
    # every path between two NULs, and every separator a NUL too: a path that is empty, starts or
    # ends with a separator, or holds two in a row shows two NULs in a row; one that starts with a
    # dot, or holds a separator then a dot, shows a NUL then a dot (two scans instead of six)
    bounded = ("\0" + joined + "\0").replace(sep, "\0")
    return not ("\0\0" in bounded or "\0." in bounded)


_DISPLAY = itemgetter(0)  # SourceFile.display
#: a directory opened to be listed (``os.scandir`` of an fd) and to stat its entries relative to it,
#: where the platform can (elsewhere each directory is listed by its path)
_FD_WALK = os.scandir in os.supports_fd and os.stat in os.supports_dir_fd
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


class _Walker:
    """The directories named on one command line, walked depth first, each directory's entries
    by name, into ``out``. A file found is stat'ed here, through its ``DirEntry`` (one ``stat``
    a file, as a named file gets): the warm path then serves it from the cache with no second
    look (see ``cache.Cache.count_clean``); its display path is its directory's (computed once
    a directory) and its name. ``seen_files`` is shared with the named files."""

    def __init__(self, out: Discovery, seen_files: set[str], cwd: str, config_names: frozenset[str]) -> None:
        self.out = out
        self.seen_files = seen_files
        self.seen_dirs: set[tuple[int, int]] = set()  # (st_dev, st_ino): loops and second names
        self.cwd = cwd
        self.prefix = cwd.rstrip(os.sep) + os.sep
        self.config_names = config_names

    def walk(self, top: str, ignorer: Ignorer) -> None:
        """Walk ``top`` (absolute, normalised)."""
        stack = [top]
        while stack:
            directory = stack.pop()
            if not _FD_WALK:
                self._one(directory, None, stack, ignorer)
                continue
            try:  # the entries' stats are then made relative to it (fstatat): no path to resolve again
                fd = os.open(directory, _DIR_FLAGS)
            except OSError:
                continue
            try:
                self._one(directory, fd, stack, ignorer)
            finally:
                os.close(fd)

    def _one(self, directory: str, fd: Optional[int], stack: list[str], ignorer: Ignorer) -> None:
        """One directory, open as ``fd`` (None: listed by its path); its subdirectories go on ``stack``."""
        out, seen_files, seen_dirs, files = self.out, self.seen_files, self.seen_dirs, self.out.files
        cwd, prefix, config_names = self.cwd, self.prefix, self.config_names
        sep, new, isreg = os.sep, tuple.__new__, stat.S_ISREG
        configured = False  # an entry has a configuration file's name
        try:
            st = os.stat(directory) if fd is None else os.fstat(fd)
        except OSError:
            return
        key = (st.st_dev, st.st_ino)
        if key in seen_dirs:
            return  # a symlink loop, or a directory reached twice
        seen_dirs.add(key)
        out.folders[directory] = st
        try:  # listed whole before anything is decided (an error part way leaves the directory out)
            entries = list(os.scandir(directory if fd is None else fd))
        except OSError:
            return
        if ignorer.respect_gitignore:  # the listing says whether a .gitignore is here: no failed open per directory
            ignorer.listed(directory, entries)
        # most directories have no pattern that could leave a file out: ask only where one can
        kept = ignorer.files_kept(directory)
        here = directory.rstrip(sep) + sep
        shown = here[len(prefix):] if here.startswith(prefix) else None  # display_path's fast path, once
        # entries come in the file system's order; only two things depend on the order, and each is
        # put in name order below: which subdirectory is walked next (which name a directory reached
        # twice is shown by) and the order of the warnings (the files are sorted at the end)
        subdirs: list[str] = []
        notes: list[tuple[str, str]] = []
        for entry in entries:
            name = entry.name  # (``here + name`` is its path: ``entry.path`` is only the name in a listing of an fd)
            try:
                is_dir = entry.is_dir()  # follows symlinks
            except OSError:
                continue
            if is_dir:
                if (name not in DEFAULT_EXCLUDED_DIRS) if kept else not ignorer.ignored(here + name, True):
                    subdirs.append(name)
                continue
            if not name.endswith(".py"):
                if name in config_names:
                    configured = True
                continue
            path = here + name
            if not kept and ignorer.ignored(path, False):
                continue
            try:
                est = entry.stat()  # follows symlinks
            except OSError as e:
                try:
                    link = entry.is_symlink()
                except OSError:
                    continue
                if not link:  # listed a moment ago: the planner stats it again and the runner reports it
                    stamp = (None, None)
                elif isinstance(e, FileNotFoundError):
                    notes.append((name, f"{display_path(path, cwd)}: broken symlink, skipped"))
                    continue
                else:
                    continue
            else:
                if not isreg(est.st_mode):  # a link to a FIFO, a socket ...
                    if entry.is_symlink():
                        notes.append((name, f"{display_path(path, cwd)}: broken symlink, skipped"))
                    continue
                stamp = (est.st_mtime_ns, est.st_size)
            if path not in seen_files:
                seen_files.add(path)
                files.append(new(SourceFile, (shown + name if shown is not None else display_path(path, cwd), path,
                                              *stamp)))
        if config_names and not configured:
            out.plain_dirs.add(directory)
        if subdirs:
            subdirs.sort()
            stack.extend([here + name for name in subdirs])
        if notes:
            notes.sort()
            out.warnings.extend(text for _name, text in notes)
