"""Project configuration: ``[tool.shutdown-lint]`` in ``pyproject.toml`` or a
``shutdown-lint.toml``, and the rule catalogue used to resolve selectors.

Keys (kebab-case, as in the file)::

    select, extend-select, ignore        rule codes, prefixes (SHD2), names, or ALL
    per-file-ignores                     {glob: [selectors]}
    exclude, extend-exclude              gitignore-style patterns, relative to the project root
    respect-gitignore                    bool, default true
    target-version                       py310 | py311 | ...
    rules.<code or name>.<option>        per-rule options, validated by the rule
    extend                               another config file to inherit from (relative to this one)

Every error names the file and the key; the command exits 2 on them.

The catalogue (codes, names, summaries) is kept apart from the rule classes so that a
fully cached run can resolve ``--select`` without importing the rules (and libcst).
"""

from __future__ import annotations

import os
import sys

from . import __version__
from .record import FrozenRecord, Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterable, Optional

CONFIG_FILES = ("shutdown-lint.toml", "pyproject.toml")


class ConfigError(Exception):
    """A one-line, user-facing configuration problem (exit status 2)."""


class Config(Record):
    FIELDS = ("path", "root", "select", "extend_select", "ignore", "per_file_ignores", "exclude",
              "respect_gitignore", "target_version", "rules", "requires_python", "sources", "extends")

    def __init__(self, path: Optional[str] = None, root: str = ".", select: Optional[list[str]] = None,
                 extend_select: Optional[list[str]] = None, ignore: Optional[list[str]] = None,
                 per_file_ignores: Optional[dict[str, list[str]]] = None, exclude: Optional[list[str]] = None,
                 respect_gitignore: bool = True, target_version: Optional[str] = None,
                 rules: Optional[dict[str, dict[str, Any]]] = None, requires_python: Optional[str] = None,
                 sources: Optional[dict[str, str]] = None, extends: Optional[list[str]] = None) -> None:
        #: the file the values came from (None: defaults only)
        self.path = path
        #: the directory relative patterns and the cache are anchored to
        self.root = root
        self.select = select
        self.extend_select: list[str] = [] if extend_select is None else extend_select
        self.ignore: list[str] = [] if ignore is None else ignore
        self.per_file_ignores: dict[str, list[str]] = {} if per_file_ignores is None else per_file_ignores
        self.exclude: list[str] = [] if exclude is None else exclude
        self.respect_gitignore = respect_gitignore
        self.target_version = target_version
        #: {selector as written: {option: value}}; validated in ``rule_options``
        self.rules: dict[str, dict[str, Any]] = {} if rules is None else rules
        #: ``[project] requires-python`` of the pyproject next to the config, if any
        self.requires_python = requires_python
        #: key as written (``select``, ``rules.SHD301``...) -> the file that set it (for --show-settings)
        self.sources: dict[str, str] = {} if sources is None else sources
        #: the files this one inherits from through ``extend``, nearest first
        self.extends: list[str] = [] if extends is None else extends


_LIST_KEYS = {"select", "extend-select", "ignore", "exclude", "extend-exclude"}
_KNOWN_KEYS = _LIST_KEYS | {"per-file-ignores", "respect-gitignore", "target-version", "rules", "extend"}
_MAX_EXTEND_DEPTH = 16


def _read_toml(path: str) -> dict[str, Any]:
    # imported here: a run with --isolated (or with no config file) reads no TOML
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: {e}") from None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror or e}") from None


def _section(path: str, data: dict[str, Any]) -> Optional[dict[str, Any]]:
    if os.path.basename(path) == "pyproject.toml":
        tool = data.get("tool", {})
        return tool.get("shutdown-lint") if isinstance(tool, dict) else None
    return data


def config_in(directory: str) -> Optional[str]:
    """``directory``'s own config file: ``shutdown-lint.toml``, or a ``pyproject.toml`` with
    our section. Raises ``ConfigError`` for a ``pyproject.toml`` that mentions us but does not parse."""
    for name in CONFIG_FILES:
        candidate = os.path.join(directory, name)
        if not os.path.isfile(candidate):
            continue
        if name == "shutdown-lint.toml":
            return candidate
        try:
            with open(candidate, "rb") as fh:
                raw = fh.read()
        except OSError:
            continue
        if b"shutdown-lint" in raw and _section(candidate, _read_toml(candidate)) is not None:
            return candidate
    return None


def find_config(start: str) -> Optional[str]:
    """The nearest ``shutdown-lint.toml``, or ``pyproject.toml`` with our section,
    in ``start`` or its parents."""
    here = existing_dir(start)
    while True:
        found = config_in(here)
        if found is not None:
            return found
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def existing_dir(start: str) -> str:
    """``start`` when it is a directory, else the nearest directory above it that exists: a file
    argument, or a path that does not exist (a typo), is never taken for a directory."""
    here = os.path.abspath(start)
    while not os.path.isdir(here):
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    return here


def marked_root(start: str) -> Optional[str]:
    """The enclosing git work tree or ``pyproject.toml``'s directory, or None."""
    probe = existing_dir(start)
    while True:
        if os.path.exists(os.path.join(probe, ".git")) or os.path.isfile(os.path.join(probe, "pyproject.toml")):
            return probe
        parent = os.path.dirname(probe)
        if parent == probe:
            return None
        probe = parent


def find_root_without_config(start: str) -> str:
    """No config: the enclosing git work tree or pyproject's directory, else the directory of
    ``start`` (the nearest one that exists)."""
    return marked_root(start) or existing_dir(start)


def _string_list(path: str, key: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: `{key}` must be a list of strings, got {value!r}")
    return list(value)


def load(path: Optional[str], start: str = ".") -> Config:
    """Load ``path`` (or find a config from ``start``) and check every key's type."""
    if path is None:
        path = find_config(start)
    if path is None:
        return Config(root=find_root_without_config(start))
    if not os.path.isfile(path):
        raise ConfigError(f"{path}: config file not found")
    return _load_file(path, ())


def _load_file(path: str, chain: tuple[str, ...]) -> Config:
    """One config file, on top of the file it ``extend``s (keys set here win; ``extend-select``,
    ``extend-exclude``, ``per-file-ignores`` and ``rules`` add to the inherited ones)."""
    data = _read_toml(path)
    section = _section(path, data)
    root = os.path.dirname(os.path.abspath(path))
    project = _project_table(path, data, root)
    parent: Optional[Config] = None
    if isinstance(section, dict) and "extend" in section:
        parent = _load_parent(path, section["extend"], chain)
    cfg = Config(path=path, root=root)
    if parent is not None:
        cfg.select = parent.select
        cfg.extend_select = list(parent.extend_select)
        cfg.ignore = list(parent.ignore)
        cfg.per_file_ignores = dict(parent.per_file_ignores)
        cfg.exclude = list(parent.exclude)
        cfg.respect_gitignore = parent.respect_gitignore
        cfg.target_version = parent.target_version
        cfg.rules = {k: dict(v) for k, v in parent.rules.items()}
        cfg.requires_python = parent.requires_python
        cfg.sources = dict(parent.sources)
        cfg.extends = [parent.path or "", *parent.extends]
    if isinstance(project, dict) and isinstance(project.get("requires-python"), str):
        cfg.requires_python = project["requires-python"]
        cfg.sources["requires-python"] = os.path.join(root, "pyproject.toml")
    if section is None:
        return cfg
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [tool.shutdown-lint] must be a table")
    where = "[tool.shutdown-lint]" if path.endswith("pyproject.toml") else "the top level"
    own_exclude: Optional[list[str]] = None
    for key, value in section.items():
        if key not in _KNOWN_KEYS:
            hint = _close_match(key, _KNOWN_KEYS)
            raise ConfigError(f"{path}: unknown key `{key}` in {where}{hint}")
        if key == "extend":
            continue
        if key != "rules":
            cfg.sources[key] = path
        if key in _LIST_KEYS:
            items = _string_list(path, key, value)
            if key == "select":
                cfg.select = items
            elif key == "extend-select":
                cfg.extend_select = [*cfg.extend_select, *items] if parent else items
            elif key == "ignore":
                cfg.ignore = items
            elif key == "exclude":
                own_exclude = items
            else:
                cfg.exclude.extend(items)
        elif key == "per-file-ignores":
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: `per-file-ignores` must be a table of glob = [codes], got {value!r}")
            for glob, codes in value.items():
                cfg.per_file_ignores[glob] = _string_list(path, f"per-file-ignores.{glob}", codes)
        elif key == "respect-gitignore":
            if not isinstance(value, bool):
                raise ConfigError(f"{path}: `respect-gitignore` must be true or false, got {value!r}")
            cfg.respect_gitignore = value
        elif key == "target-version":
            cfg.target_version = check_target(value, f"{path}: `target-version`")
        elif key == "rules":
            if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
                raise ConfigError(f"{path}: `rules` must hold one table per rule, e.g. [tool.shutdown-lint.rules.SHD201]")
            for selector, options in value.items():
                cfg.rules.setdefault(selector, {}).update(options)
                cfg.sources[f"rules.{selector}"] = path
    if own_exclude is not None:
        # this file's `exclude` replaces an inherited one; its `extend-exclude` (added above) stays
        inherited = parent.exclude if parent else []
        cfg.exclude = own_exclude + [p for p in cfg.exclude[len(inherited):]]
    return cfg


def _project_table(path: str, data: dict[str, Any], root: str) -> Any:
    if os.path.basename(path) == "pyproject.toml":
        return data.get("project", {})
    pyproject = os.path.join(root, "pyproject.toml")
    if os.path.isfile(pyproject):
        try:
            return _read_toml(pyproject).get("project", {})
        except ConfigError:
            return {}
    return {}


def _load_parent(path: str, value: Any, chain: tuple[str, ...]) -> Config:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{path}: `extend` must be the path of another config file, got {value!r}")
    target = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(path)), os.path.expanduser(value)))
    here = os.path.normpath(os.path.abspath(path))
    if target == here or target in chain:
        raise ConfigError(f"{path}: `extend` = {value!r} makes a cycle ({' -> '.join([*chain, here, target])})")
    if len(chain) >= _MAX_EXTEND_DEPTH:
        raise ConfigError(f"{path}: `extend` chain deeper than {_MAX_EXTEND_DEPTH} files")
    if not os.path.isfile(target):
        raise ConfigError(f"{path}: `extend` = {value!r}: no such file ({target})")
    return _load_file(target, (*chain, here))


def _close_match(key: str, known: Iterable[str]) -> str:
    import difflib

    close = difflib.get_close_matches(key, sorted(known), n=1)
    return f" (did you mean `{close[0]}`?)" if close else ""


def check_target(value: Any, where: str) -> str:
    from .settings import TARGET_VERSIONS

    if not isinstance(value, str) or value not in TARGET_VERSIONS:
        raise ConfigError(f"{where} must be one of {', '.join(TARGET_VERSIONS)}, got {value!r}")
    return value


def target_from_requires_python(spec: Optional[str]) -> Optional[str]:
    """``>=3.11`` -> ``py311``; only a lower bound is meaningful for fixes."""
    from .settings import TARGET_VERSIONS

    if not spec:
        return None
    import re

    m = re.search(r">=?\s*3\.(\d+)", spec) or re.search(r"~=\s*3\.(\d+)", spec) or re.search(r"==\s*3\.(\d+)", spec)
    if not m:
        return None
    minor = int(m.group(1))
    if ">" in spec[: m.end()] and ">=" not in spec[: m.end()]:
        minor += 1  # >3.10 means 3.11 at the least
    candidate = f"py3{minor}"
    if candidate in TARGET_VERSIONS:
        return candidate
    return TARGET_VERSIONS[0] if minor < 10 else TARGET_VERSIONS[-1]


# ------------------------------------------------------------------ rule catalogue


class RuleInfo(FrozenRecord):
    FIELDS = ("code", "name", "summary", "fixable")

    def __init__(self, code: str, name: str, summary: str, fixable: bool) -> None:
        self._set(code=code, name=name, summary=summary, fixable=fixable)

    if TYPE_CHECKING:
        code: str
        name: str
        summary: str
        fixable: bool


def _rules_dir() -> Optional[str]:
    import importlib.util

    spec = importlib.util.find_spec("shutdown_lint.rules")
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def code_key() -> Optional[str]:
    """Changes whenever a rule or engine module is added, removed or edited (an
    editable install changes under a fixed version number)."""
    directory = _rules_dir()
    if directory is None:
        return None
    parts = [__version__]
    engine = os.path.dirname(os.path.abspath(__file__))
    try:
        # the facts, the project index and the prefilter decide findings as much as the rules do
        for where in (directory, engine, *(os.path.join(engine, d) for d in ("facts", "index", "prefilter"))):
            for entry in sorted(os.scandir(where), key=lambda e: e.name):
                if entry.name.endswith(".py"):
                    st = entry.stat()
                    parts.append(f"{os.path.basename(where)}/{entry.name}:{st.st_mtime_ns}:{st.st_size}")
    except OSError:
        return None
    return "|".join(parts)


def catalogue_from_registry() -> list[RuleInfo]:
    from . import registry

    return [RuleInfo(r.code, r.name, r.summary, r.has_fix()) for r in registry.all_rules()]


_UNSET: Any = object()


def load_catalogue(cache_dir: Optional[str], key: Optional[str] = _UNSET) -> list[RuleInfo]:
    """Rule codes and names, from the cache when the rule modules did not change
    (this saves importing every rule, and libcst, on a fully cached run). ``key``: the
    ``code_key()`` when the caller has it already."""
    if cache_dir is None:
        return catalogue_from_registry()
    if key is _UNSET:
        key = code_key()
    from .cache import pack, unpack, write_atomic

    path = os.path.join(cache_dir, "rules.bin")  # framed marshal, as the result index (cache.pack)
    if key is not None:
        try:
            with open(path, "rb") as fh:
                data = unpack(fh.read())
            if data.get("key") == key:
                return [RuleInfo(*r) for r in data["rules"]]
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            pass
    rules = catalogue_from_registry()
    if key is not None:
        write_atomic(path, pack({"key": key, "rules": [(r.code, r.name, r.summary, r.fixable) for r in rules]}),
                     cache_dir)
    return rules


class UnknownSelector(ValueError):
    pass


def expand(selector: str, catalogue: list[RuleInfo]) -> set[str]:
    """Codes matched by one selector: ``ALL``, a code, a prefix such as ``SHD2``, or a name."""
    sel = selector.strip()
    codes = {r.code for r in catalogue}
    if sel.upper() == "ALL":
        return set(codes)
    for r in catalogue:
        if r.name == sel.lower():
            return {r.code}
    up = sel.upper()
    if up.startswith("SHD"):
        matched = {c for c in codes if c.startswith(up)}
        if matched:
            return matched
    raise UnknownSelector(
        f"unknown rule selector {selector!r} (expected a code like SHD201, a prefix like SHD2, "
        f"a rule name like sys-exit-in-task, or ALL)"
    )


def resolve(select: Optional[Iterable[str]], extend_select: Iterable[str], ignore: Iterable[str],
            catalogue: list[RuleInfo]) -> tuple[str, ...]:
    chosen: set[str] = set()
    for s in select if select is not None else ["ALL"]:
        chosen |= expand(s, catalogue)
    for s in extend_select:
        chosen |= expand(s, catalogue)
    for s in ignore:
        chosen -= expand(s, catalogue)
    return tuple(sorted(chosen))


def rule_options(cfg: Config, catalogue: list[RuleInfo]) -> dict[str, dict[str, Any]]:
    """Validate ``[tool.shutdown-lint.rules.*]`` with each rule's ``Option.validate``."""
    if not cfg.rules:
        return {}
    from . import registry

    by_code = registry.rules_by_code()
    out: dict[str, dict[str, Any]] = {}
    for selector, values in cfg.rules.items():
        table = f"[tool.shutdown-lint.rules.{selector}]" if (cfg.path or "").endswith("pyproject.toml") \
            else f"[rules.{selector}]"
        matched = [r for r in catalogue if r.code == selector.upper() or r.name == selector.lower()]
        if not matched or matched[0].code not in by_code:
            raise ConfigError(f"{cfg.path}: {table}: no rule has the code or name `{selector}`")
        rule = by_code[matched[0].code]
        for key, value in values.items():
            if key not in rule.options:
                known = ", ".join(sorted(rule.options)) or "none"
                raise ConfigError(
                    f"{cfg.path}: {table}: unknown option `{key}` for {rule.code} (known options: {known})"
                )
            try:
                value = rule.options[key].validate(key, value)
            except ValueError as e:
                raise ConfigError(f"{cfg.path}: {table}: {e}") from None
            out.setdefault(rule.code, {})[key] = value
    return out
