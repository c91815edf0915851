"""The effective configuration of one run, after merging pyproject, CLI and defaults.

``Settings`` is what the analyzer needs; it is picklable (it travels to worker
processes) and has a stable fingerprint (it keys the result cache).
"""

from __future__ import annotations

from .record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional

    from .rule import Rule

TARGET_VERSIONS = ("py310", "py311", "py312", "py313", "py314")
DEFAULT_TARGET = "py310"


def parse_target(value: str) -> tuple[int, int]:
    import re

    m = re.fullmatch(r"py3(\d+)", value)
    if not m:
        raise ValueError(f"target version must look like py311, got {value!r}")
    return (3, int(m.group(1)))


class Settings(Record):
    FIELDS = ("selected", "target_version", "rule_options", "per_file_ignores", "prefilter")

    def __init__(self, selected: tuple[str, ...], target_version: str = DEFAULT_TARGET,
                 rule_options: Optional[dict[str, dict[str, Any]]] = None,
                 per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = (), prefilter: bool = True) -> None:
        #: Codes of the rules that run, sorted.
        self.selected = selected
        self.target_version = target_version
        #: {rule code: {option: value}}; only explicitly set values.
        self.rule_options: dict[str, dict[str, Any]] = {} if rule_options is None else rule_options
        #: [(glob pattern, (codes...))]
        self.per_file_ignores = per_file_ignores
        #: Disable the text pre-filter (for measuring what it saves).
        self.prefilter = prefilter

    def target_at_least(self, minimum: str) -> bool:
        return parse_target(self.target_version) >= parse_target(minimum)

    def rule_option(self, rule: "type[Rule] | Rule", key: str) -> Any:
        explicit = self.rule_options.get(rule.code, {})
        if key in explicit:
            return explicit[key]
        return rule.options[key].default

    def fingerprint(self) -> str:
        """Everything that changes findings for a given file content, as text (it keys the
        result cache; not digested: importing hashlib would cost every warm run ~2 ms)."""
        options = "{}"
        if self.rule_options:
            import json

            options = json.dumps(self.rule_options, sort_keys=True, default=str)
        return f"selected={','.join(self.selected)}|target={self.target_version}|options={options}" \
               f"|prefilter={self.prefilter}"
