"""The rule API: what a rule declares, how it reports, and what a fix is.

A rule is a small class in ``rules/`` (installed as ``shutdown_lint.rules``)::

    class SysExitInTask(Rule):
        code = "SHD201"
        name = "sys-exit-in-task"
        summary = "`sys.exit()` in a task or thread ends only that task or thread"
        triggers = ("exit", "quit", "SystemExit")   # text pre-filter: any of these
        valid = ["..."]                              # snippets that must not be flagged
        invalid = [Invalid("...", fixed="...")]      # snippets that must be flagged

        def visit_Call(self, node: cst.Call) -> None:
            if self.facts.qualified_name(node.func) == "sys.exit":
                self.report(node, "message", fix=...)

The class docstring is the rule's documentation page (markdown with the sections
``## What it does``, ``## Why is this bad?``, ``## Example``, ``## Use instead``,
``## Fix safety`` and ``## References``).

All selected rules run in ONE traversal of the module (see ``traversal.py``); shared
facts about the module (qualified names, functions, where code runs) are computed once
in ``facts.py`` and read through ``self.facts``.
"""

from __future__ import annotations

import enum
import re
import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Sequence, Union

from .lazy_libcst import libcst as cst

if TYPE_CHECKING:
    from .facts import ModuleFacts
    from .settings import Settings


class Applicability(str, enum.Enum):
    """How much a fix may change behaviour (ruff's vocabulary).

    ``safe``: only failure and shutdown paths change; applied by ``--fix``.
    ``unsafe``: normal-path behaviour may change (code moves to another thread,
    exception types change); applied only with ``--unsafe-fixes``.
    """

    SAFE = "safe"
    UNSAFE = "unsafe"


# --------------------------------------------------------------------------- edits


@dataclass(frozen=True)
class Replace:
    """Replace ``node`` by ``new`` (a node, a ``cst.FlattenSentinel`` of statements,
    or ``cst.RemovalSentinel.REMOVE``)."""

    node: cst.CSTNode
    new: Any


@dataclass(frozen=True)
class InsertBefore:
    """Insert statements before the statement ``anchor`` (same block).

    Unlike ``Replace`` it composes with edits *inside* the anchor."""

    anchor: cst.BaseStatement
    statements: tuple[cst.BaseStatement, ...]


@dataclass(frozen=True)
class InsertAfter:
    anchor: cst.BaseStatement
    statements: tuple[cst.BaseStatement, ...]


@dataclass(frozen=True)
class AddImport:
    """Make sure ``import module`` (or ``from module import obj``) exists at module level."""

    module: str
    obj: str | None = None
    asname: str | None = None


Edit = Union[Replace, InsertBefore, InsertAfter, AddImport]


@dataclass
class Fix:
    edits: list[Edit]
    applicability: Applicability
    message: str = ""

    @classmethod
    def safe(cls, *edits: Edit, message: str = "") -> "Fix":
        return cls(list(edits), Applicability.SAFE, message)

    @classmethod
    def unsafe(cls, *edits: Edit, message: str = "") -> "Fix":
        return cls(list(edits), Applicability.UNSAFE, message)


@dataclass
class Finding:
    """A rule's report while the module's tree is alive (holds nodes)."""

    rule: "Rule"
    node: cst.CSTNode
    message: str
    fix: Fix | None = None

    @property
    def code(self) -> str:
        return self.rule.code


# --------------------------------------------------------------------------- examples


def _clean(code: str) -> str:
    return textwrap.dedent(code).strip("\n") + "\n"


@dataclass
class Valid:
    code: str
    options: dict[str, Any] = field(default_factory=dict)
    target_version: str | None = None

    def __post_init__(self) -> None:
        self.code = _clean(self.code)


@dataclass
class Invalid:
    """A snippet the rule must flag.

    ``fixed``: the expected module after applying this rule's fixes (unsafe included);
    ``None`` means the rule offers no fix here. ``count``: expected number of findings.
    """

    code: str
    fixed: str | None = None
    count: int | None = None
    options: dict[str, Any] = field(default_factory=dict)
    target_version: str | None = None
    message_contains: str | None = None

    def __post_init__(self) -> None:
        self.code = _clean(self.code)
        if self.fixed is not None:
            self.fixed = _clean(self.fixed)


# --------------------------------------------------------------------------- options


@dataclass(frozen=True)
class Option:
    """A per-rule option, set in ``[tool.shutdown-lint.rules.<code or name>]``."""

    default: Any
    kind: type | tuple[type, ...]
    doc: str
    item_kind: type | None = None  # for lists
    choices: tuple[Any, ...] | None = None  # the values the option (for lists: an item) may take

    def validate(self, key: str, value: Any) -> Any:
        if not isinstance(value, self.kind) or isinstance(value, bool) and self.kind is int:
            raise ValueError(f"option {key!r} must be {_kind_name(self.kind)}, got {type(value).__name__}")
        if self.item_kind is not None:
            for item in value:
                if not isinstance(item, self.item_kind):
                    raise ValueError(
                        f"option {key!r} must be a list of {_kind_name(self.item_kind)}, "
                        f"got an item {item!r}"
                    )
        if self.choices is not None:
            for item in (value if self.item_kind is not None else (value,)):
                if item not in self.choices:
                    raise ValueError(
                        f"option {key!r} has an unknown value {item!r} "
                        f"(known: {', '.join(map(str, self.choices))})"
                    )
        return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    if isinstance(kind, tuple):
        return " or ".join(k.__name__ for k in kind)
    return {"list": "a list", "str": "a string", "int": "an integer", "bool": "a boolean",
            "float": "a number"}.get(kind.__name__, kind.__name__)


# --------------------------------------------------------------------------- rule


CODE_RE = re.compile(r"^SHD\d{3}$")
NAME_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
DOC_SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety", "References")

# The libcst visitor methods a rule may define: visit_<Node> and leave_<Node>.
VisitorMethod = Callable[["cst.CSTNode"], Any]  # a string: libcst is imported on first use


class Rule:
    """Base class of every rule. See the module docstring."""

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    #: Substrings for the text pre-filter: a file containing none of them is never parsed
    #: for this rule. An empty tuple means "always run".
    triggers: ClassVar[tuple[str, ...]] = ()
    #: Candidate tier 1 (``shutdown_lint.prefilter.words``): a cheap, *necessary* condition on
    #: the file's identifier words (``candidate = All(Word("async"), qualified("ray.get"))``),
    #: checked after the pre-filter. ``None``: no condition, the rule is always a candidate.
    candidate: ClassVar[Any] = None
    #: Candidate tier 2 (``shutdown_lint.prefilter.ast_tree``): a necessary condition on the file's
    #: Python ``ast``, a function ``Tree -> bool`` (write it as a ``staticmethod``), checked
    #: after tier 1 and before the libcst parse. ``None``: always a candidate.
    candidate_tree: ClassVar[Any] = None
    #: ``candidate_tree`` also takes the project index seen from the file (``Tree, ProjectView |
    #: None -> bool``; None: the run has no index, so the rule's walk has none either), for what
    #: the rule learns only from other modules (a return annotation there). Called with one
    #: argument (a test, a snippet), the condition must act as with no index.
    candidate_tree_project: ClassVar[bool] = False
    #: Shared facts this rule reads (names from ``facts.FACTS``); the engine computes
    #: each one once per file, before the traversal, for all rules together.
    facts_needed: ClassVar[tuple[str, ...]] = ()
    #: Per-rule options with their defaults.
    options: ClassVar[dict[str, Option]] = {}
    #: Oldest Python this rule's fix may produce code for, e.g. "py311" for TaskGroup.
    fix_min_target: ClassVar[str | None] = None
    #: The rule's detection on Python's ``ast`` (an ``ast_engine.AstCheck`` subclass), or None:
    #: a file whose candidate rules all have one is linted on the candidate tier's ``ast`` when
    #: no fix edits are wanted (``analyzer``, ``SHUTDOWN_LINT_AST``); the libcst hooks stay for edits.
    ast_check: ClassVar[Any] = None
    valid: ClassVar[Sequence[str | Valid]] = ()
    invalid: ClassVar[Sequence[Invalid]] = ()

    def __init__(self, facts: "ModuleFacts", settings: "Settings", findings: list[Finding]):
        self.facts = facts
        self.settings = settings
        self._findings = findings
        self.config: dict[str, Any] = {
            key: settings.rule_option(self, key) for key in self.options
        }

    # -- reporting -------------------------------------------------------------
    def report(self, node: cst.CSTNode, message: str, *, fix: Fix | None = None) -> None:
        if fix is not None and self.fix_min_target and not self.settings.target_at_least(self.fix_min_target):
            fix = None
        self._findings.append(Finding(self, node, message, fix))

    # -- metadata ---------------------------------------------------------------
    @classmethod
    def documentation(cls) -> str:
        return textwrap.dedent(cls.__doc__ or "").strip()

    @classmethod
    def visitor_methods(cls) -> dict[str, str]:
        """Map 'visit_Call' -> method name for every visitor hook the rule defines."""
        hooks = {}
        for attr in dir(cls):
            if (attr.startswith("visit_") or attr.startswith("leave_")) and callable(getattr(cls, attr)):
                hooks[attr] = attr
        return hooks

    @classmethod
    def examples(cls) -> tuple[list[Valid], list[Invalid]]:
        valid = [v if isinstance(v, Valid) else Valid(v) for v in cls.valid]
        return valid, list(cls.invalid)

    @classmethod
    def has_fix(cls) -> bool:
        return any(inv.fixed is not None for inv in cls.invalid)
