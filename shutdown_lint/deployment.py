"""Fixed code must run where it is deployed: the dependency notice after ``--fix``.

Many fixes add ``import runtime_guard``. That package comes from the ``shutdown-lint-runtime``
distribution (``packaging/runtime``: no dependencies), not from the linter, so a training image
built from the project's declared dependencies fails at import unless the project declares it.
After a run that wrote such an import, :func:`notices` says so once per project, with the exact
requirement line to add. A project counts as declaring it when ``pyproject.toml``
(``[project] dependencies``, Poetry's ``[tool.poetry.dependencies]``), ``setup.cfg``
(``install_requires``), ``setup.py`` or a ``requirements*.txt`` beside them names the
distribution.
"""
from __future__ import annotations

import configparser
import json
import os
import re
import subprocess
from importlib import metadata
from typing import Iterable, Optional

DIST = "shutdown-lint-runtime"
SUBDIRECTORY = "packaging/runtime"
_IMPORT = re.compile(r"^\s*(?:import\s+runtime_guard\b|from\s+runtime_guard\b)", re.MULTILINE)
_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py")
# a requirement's name, PEP 503-normalised when compared
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def imports_runtime_guard(text: str) -> bool:
    return bool(_IMPORT.search(text))


def project_root(path: str) -> Optional[str]:
    """The nearest folder at or above ``path`` with a packaging file or a requirements file."""
    d = os.path.dirname(os.path.abspath(path))
    while True:
        try:
            names = os.listdir(d)
        except OSError:
            names = []
        if any(n in _MARKERS or _is_requirements(n) for n in names):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def _is_requirements(name: str) -> bool:
    return name.startswith("requirements") and name.endswith(".txt")


def _names_it(requirement: str) -> bool:
    """A requirement string (PEP 508, a URL with ``#egg=``/``subdirectory=``, or ``-e PATH``) that
    provides the runtime distribution."""
    req = requirement.split("#egg=", 1)[-1] if "#egg=" in requirement else requirement
    if SUBDIRECTORY in requirement:
        return True
    m = _NAME.match(req)
    return bool(m) and _normal(m.group(1)) == DIST


def _declared_in(root: str) -> bool:
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name)
        try:
            if name == "pyproject.toml":
                if _pyproject_declares(path):
                    return True
            elif name == "setup.cfg":
                cfg = configparser.ConfigParser()
                cfg.read(path, encoding="utf-8")
                raw = cfg.get("options", "install_requires", fallback="")
                if any(_names_it(line) for line in raw.splitlines()):
                    return True
            elif name == "setup.py":
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                if re.search(r"shutdown[-_.]lint[-_.]runtime", text, re.IGNORECASE):
                    return True
            elif _is_requirements(name):
                with open(path, encoding="utf-8", errors="replace") as fh:
                    for line in fh:
                        line = line.split(" #", 1)[0].strip()
                        if line.startswith(("-e ", "--editable ")):
                            line = line.split(None, 1)[1]
                        if line and not line.startswith("#") and _names_it(line):
                            return True
        except (OSError, ValueError, configparser.Error):
            continue
    return False


def _pyproject_declares(path: str) -> bool:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    with open(path, "rb") as fh:
        data = tomllib.load(fh)
    deps = data.get("project", {}).get("dependencies", []) or []
    if any(_names_it(d) for d in deps if isinstance(d, str)):
        return True
    poetry = data.get("tool", {}).get("poetry", {}).get("dependencies", {}) or {}
    return any(_normal(k) == DIST for k in poetry)


def requirement_line() -> str:
    """The requirement to add, as exact as this installation allows: the VCS URL and commit the
    linter was installed from, or its clone's remote and commit, else a local path."""
    url = commit = None
    try:
        direct = metadata.distribution("shutdown-lint").read_text("direct_url.json")
        info = json.loads(direct) if direct else {}
    except (metadata.PackageNotFoundError, ValueError):
        info = {}
    vcs = info.get("vcs_info") or {}
    if vcs.get("vcs") == "git":
        url, commit = info.get("url"), vcs.get("commit_id")
    else:
        clone = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        if os.path.isdir(os.path.join(clone, ".git")) and os.path.isdir(os.path.join(clone, SUBDIRECTORY)):
            url, commit = _git(clone, "remote", "get-url", "origin"), _git(clone, "rev-parse", "HEAD")
            if not url:
                return f"{DIST} @ file://{os.path.join(clone, SUBDIRECTORY)}"
    if url and commit:
        return f"{DIST} @ git+{url}@{commit}#subdirectory={SUBDIRECTORY}"
    return DIST


def _git(cwd: str, *args: str) -> Optional[str]:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def notices(fixed_paths: Iterable[str]) -> list[str]:
    """One note per project whose fixed files import ``runtime_guard`` while its declared
    dependencies do not provide it. ``fixed_paths``: the files this run wrote fixes to."""
    by_root: dict[str, int] = {}
    for path in fixed_paths:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                after = fh.read()
        except OSError:
            continue
        if not imports_runtime_guard(after):
            continue
        root = project_root(path) or os.path.dirname(os.path.abspath(path))
        by_root[root] = by_root.get(root, 0) + 1
    out = []
    line: Optional[str] = None
    for root, n in by_root.items():
        if _declared_in(root):
            continue
        line = line or requirement_line()
        files = "1 file" if n == 1 else f"{n} files"
        where = os.path.relpath(root) if root != os.getcwd() else "this project"
        out.append(f"note: fixed code imports `runtime_guard` ({files}), but {where} does not declare the "
                   f"package that provides it; add this requirement to its dependencies (pyproject.toml "
                   f"[project] dependencies, or requirements.txt) so deployed code can import it: {line}")
    return out
