"""The entrypoint: a script path, ``-m module`` or a console script (``[project.scripts]``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional


class EntryError(Exception):
    """The entry cannot be found: the command exits 2 with this message."""


@dataclass
class Entry:
    given: str
    kind: str  # script | module | console_script
    path: str  # absolute
    #: the function the program starts in (a console script's ``mod:func``); None: the module's code
    function: Optional[str]
    #: the folder the project index starts from
    project: str


def find_pyproject(start: str) -> Optional[str]:
    d = os.path.abspath(start)
    while True:
        p = os.path.join(d, "pyproject.toml")
        if os.path.isfile(p):
            return p
        up = os.path.dirname(d)
        if up == d:
            return None
        d = up


def _module_file(index, module: str) -> Optional[str]:
    found = index.find(module)
    if found is None:
        return None
    if found.endswith(os.sep) or found.endswith("__init__.py"):
        main = os.path.join(os.path.dirname(found) if found.endswith("__init__.py") else found, "__main__.py")
        return main if os.path.isfile(main) else (None if found.endswith(os.sep) else found)
    return found


def resolve(given: str, as_module: bool, project: Optional[str]) -> Entry:
    from ..index.project import ProjectIndex

    if as_module:
        root = os.path.abspath(project or os.getcwd())
        index = ProjectIndex([root])
        path = _module_file(index, given)
        if path is None:
            raise EntryError(f"map: no module {given!r} under {root} (a file {given.replace('.', '/')}.py "
                             "or a package with __main__.py)")
        return Entry(given, "module", os.path.abspath(path), None, root)
    if given.endswith(".py") or os.sep in given or os.path.exists(given):
        path = os.path.abspath(given)
        if not os.path.isfile(path):
            raise EntryError(f"map: no such file: {given}")
        root = os.path.abspath(project) if project else os.path.dirname(path)
        pyproject = None if project else find_pyproject(os.path.dirname(path))
        if pyproject:
            root = os.path.dirname(pyproject)
        return Entry(given, "script", path, None, root)
    # a console script's name
    pyproject = os.path.join(project, "pyproject.toml") if project else find_pyproject(os.getcwd())
    scripts = _scripts(pyproject) if pyproject and os.path.isfile(pyproject) else {}
    if given not in scripts:
        where = pyproject or "no pyproject.toml above the working directory"
        names = ", ".join(sorted(scripts)) or "none"
        raise EntryError(f"map: {given!r} is not a file, and not a console script of {where} "
                         f"([project.scripts]: {names}); give a script path, -m MODULE or a script name")
    target = scripts[given]
    module, _, func = target.partition(":")
    root = os.path.dirname(os.path.abspath(pyproject))
    index = ProjectIndex([root])
    path = _module_file(index, module.strip())
    if path is None:
        raise EntryError(f"map: console script {given!r} names {target!r}, and module {module!r} is not in "
                         f"the project under {root}")
    return Entry(given, "console_script", os.path.abspath(path), func.strip() or None, root)


def _scripts(pyproject: str) -> dict[str, str]:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        with open(pyproject, "rb") as fh:
            data = tomllib.load(fh)
    except (OSError, ValueError) as e:
        raise EntryError(f"map: cannot read {pyproject}: {e}") from None
    scripts = data.get("project", {}).get("scripts", {})
    return {k: v for k, v in scripts.items() if isinstance(v, str)} if isinstance(scripts, dict) else {}
