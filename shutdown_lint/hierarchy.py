"""Settings per file, from the nearest configuration above it (as ruff does).

Each file is linted with the nearest ``shutdown-lint.toml``, or ``pyproject.toml`` with a
``[tool.shutdown-lint]`` table, in its directory or above; command-line options override every
file's configuration. ``--config FILE`` and ``--isolated`` use one configuration for all files.

The command line, the language server and ``--show-settings`` all build ``Settings`` here, so a
file gets the same findings whichever way it is linted. Lookups are memoised per directory and
per config file: a run over a large tree reads each config once and stats two names per directory.
"""

from __future__ import annotations

import os

from . import config as C
from .record import FrozenRecord, Record
from .settings import DEFAULT_TARGET, Settings

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional


class SettingsError(Exception):
    """A configuration problem, one line naming the file and key."""


def split(values: Optional[list[str]]) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


class Overrides(FrozenRecord):
    """What the command line sets for every file (None / empty: not given)."""

    FIELDS = ("select", "extend_select", "ignore", "per_file_ignores", "target_version", "prefilter")

    def __init__(self, select: Optional[tuple[str, ...]] = None, extend_select: tuple[str, ...] = (),
                 ignore: tuple[str, ...] = (), per_file_ignores: tuple[str, ...] = (),
                 target_version: Optional[str] = None, prefilter: bool = True) -> None:
        # per_file_ignores: "GLOB:RULES" items
        self._set(select=select, extend_select=extend_select, ignore=ignore, per_file_ignores=per_file_ignores,
                  target_version=target_version, prefilter=prefilter)

    if TYPE_CHECKING:
        select: Optional[tuple[str, ...]]
        extend_select: tuple[str, ...]
        ignore: tuple[str, ...]
        per_file_ignores: tuple[str, ...]
        target_version: Optional[str]
        prefilter: bool

    @classmethod
    def from_args(cls, args) -> "Overrides":  # type: ignore[no-untyped-def]
        return cls(
            select=tuple(split(args.select)) if args.select else None,
            extend_select=tuple(split(args.extend_select)),
            ignore=tuple(split(args.ignore)),
            per_file_ignores=tuple(args.per_file_ignores or ()),
            target_version=args.target_version,
            prefilter=not getattr(args, "no_prefilter", False),
        )


def build(cfg: C.Config, overrides: Overrides, catalogue: list[C.RuleInfo]) -> Settings:
    """The effective settings of one configuration plus the command line."""
    try:
        selected = C.resolve(
            list(overrides.select) if overrides.select is not None else cfg.select,
            [*cfg.extend_select, *overrides.extend_select],
            [*cfg.ignore, *overrides.ignore],
            catalogue,
        )
        pfi: dict[str, set[str]] = {}
        for glob, sels in cfg.per_file_ignores.items():
            for sel in sels:
                pfi.setdefault(glob, set()).update(C.expand(sel, catalogue))
        for item in overrides.per_file_ignores:
            glob, sep, sels = item.rpartition(":")
            if not sep or not glob:
                raise SettingsError(f"--per-file-ignores expects GLOB:RULES, got {item!r}")
            for sel in split([sels]):
                pfi.setdefault(glob, set()).update(C.expand(sel, catalogue))
        target = (C.check_target(overrides.target_version, "--target-version") if overrides.target_version
                  else cfg.target_version or C.target_from_requires_python(cfg.requires_python) or DEFAULT_TARGET)
        options = C.rule_options(cfg, catalogue)
    except C.UnknownSelector as e:
        where = f" (in {cfg.path})" if cfg.path else ""
        raise SettingsError(f"{e}{where}") from None
    except C.ConfigError as e:
        raise SettingsError(str(e)) from None
    return Settings(
        selected=selected,
        target_version=target,
        rule_options=options,
        per_file_ignores=tuple(sorted((g, tuple(sorted(c))) for g, c in pfi.items())),
        prefilter=overrides.prefilter,
    )


class Resolver(Record):
    """Nearest configuration and settings for any file; ``fixed`` uses ``base`` for every file."""

    FIELDS = ("base", "overrides", "catalogue", "fixed")

    def __init__(self, base: C.Config, overrides: Overrides, catalogue: list[C.RuleInfo], fixed: bool = False) -> None:
        self.base = base
        self.overrides = overrides
        self.catalogue = catalogue
        self.fixed = fixed
        self._dirs: dict[str, Optional[str]] = {}
        self._configs: dict[Optional[str], C.Config] = {}
        self._settings: dict[Optional[str], Settings] = {}

    def config_path(self, abspath: str) -> Optional[str]:
        if self.fixed:
            return self.base.path
        return self._nearest(os.path.dirname(abspath))

    def _nearest(self, directory: str) -> Optional[str]:
        visited = []
        here = directory
        while True:
            if here in self._dirs:
                result = self._dirs[here]
                break
            visited.append(here)
            result = _config_in(here)
            parent = os.path.dirname(here)
            if result is not None or parent == here:
                break
            here = parent
        for d in visited:
            self._dirs[d] = result
        return result

    def config(self, path: Optional[str]) -> C.Config:
        if path == self.base.path or self.fixed:
            return self.base
        if path not in self._configs:
            try:
                self._configs[path] = C.load(path)
            except C.ConfigError as e:
                raise SettingsError(str(e)) from None
        return self._configs[path]

    def settings(self, path: Optional[str]) -> Settings:
        if path not in self._settings:
            self._settings[path] = build(self.config(path), self.overrides, self.catalogue)
        return self._settings[path]

    def for_file(self, abspath: str) -> Settings:
        return self.settings(self.config_path(abspath))


def _config_in(directory: str) -> Optional[str]:
    """``directory``'s own config file, if it has one (what ``config.find_config`` checks per level)."""
    try:
        return C.config_in(directory)
    except C.ConfigError:
        return os.path.join(directory, "pyproject.toml")  # broken, but still the nearest: its error is reported


# ------------------------------------------------------------------ --show-settings


def describe(abspath: str, resolver: Resolver, given: dict[str, str]) -> str:
    """The settings that apply to ``abspath`` and where each came from."""
    # a directory: the settings of a file directly in it
    path = resolver.config_path(os.path.join(abspath, "_") if os.path.isdir(abspath) else abspath)
    cfg = resolver.config(path)
    settings = resolver.settings(path)
    lines = [f"Settings for {abspath}"]
    if cfg.path:
        chain = " -> ".join([cfg.path, *cfg.extends])
        lines.append(f"  config file: {chain}")
    else:
        lines.append("  config file: none (defaults)")
    lines.append(f"  project root: {cfg.root}")

    def origin(key: str) -> str:
        if key in given:
            return "command line"
        return cfg.sources.get(key, "default")

    def show(name: str, value: object, key: str) -> None:
        lines.append(f"  {name} = {value}    # {origin(key)}")

    show("select", cfg.select if cfg.select is not None else ["ALL"], "select")
    if given.get("select"):
        lines[-1] = f"  select = {split([given['select']])}    # command line"
    show("extend-select", cfg.extend_select, "extend-select")
    show("ignore", cfg.ignore, "ignore")
    if cfg.target_version or "target-version" in given:
        show("target-version", settings.target_version, "target-version")
    elif cfg.requires_python and C.target_from_requires_python(cfg.requires_python):
        lines.append(f"  target-version = {settings.target_version}    # [project] requires-python = "
                     f"{cfg.requires_python!r} in {cfg.sources.get('requires-python', cfg.path)}")
    else:
        show("target-version", settings.target_version, "target-version")
    show("per-file-ignores", dict(settings.per_file_ignores), "per-file-ignores")
    show("exclude", cfg.exclude, "exclude" if "exclude" in cfg.sources else "extend-exclude")
    show("respect-gitignore", cfg.respect_gitignore, "respect-gitignore")
    for selector in sorted(cfg.rules):
        lines.append(f"  rules.{selector} = {cfg.rules[selector]}    # {cfg.sources.get(f'rules.{selector}', '?')}")
    lines.append(f"  rules that run ({len(settings.selected)}): {', '.join(settings.selected)}")
    return "\n".join(lines) + "\n"
