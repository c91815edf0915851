"""The effective configuration of one run, after merging pyproject, CLI and defaults.

``Settings`` is what the analyzer needs; it is picklable (it travels to worker
processes) and has a stable fingerprint (it keys the result cache).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .rule import Rule

TARGET_VERSIONS = ("py310", "py311", "py312", "py313", "py314")
DEFAULT_TARGET = "py310"


def parse_target(value: str) -> tuple[int, int]:
    m = re.fullmatch(r"py3(\d+)", value)
    if not m:
        raise ValueError(f"target version must look like py311, got {value!r}")
    return (3, int(m.group(1)))


@dataclass
class Settings:
    #: Codes of the rules that run, sorted.
    selected: tuple[str, ...]
    target_version: str = DEFAULT_TARGET
    #: {rule code: {option: value}}; only explicitly set values.
    rule_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: [(glob pattern, (codes...))]
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: Disable the text pre-filter (for measuring what it saves).
    prefilter: bool = True

    def target_at_least(self, minimum: str) -> bool:
        return parse_target(self.target_version) >= parse_target(minimum)

    def rule_option(self, rule: "type[Rule] | Rule", key: str) -> Any:
        explicit = self.rule_options.get(rule.code, {})
        if key in explicit:
            return explicit[key]
        return rule.options[key].default

    def fingerprint(self) -> str:
        """Everything that changes findings for a given file content."""
        payload = json.dumps(
            {
                "selected": self.selected,
                "target": self.target_version,
                "options": self.rule_options,
                "prefilter": self.prefilter,
            },
            sort_keys=True,
            default=str,
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:16]
