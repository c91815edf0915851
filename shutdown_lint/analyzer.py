"""Analyse one file: pre-filter, parse, shared facts, one traversal, findings.

``lint_source`` is the whole pipeline for one file's bytes and returns a serialisable
``FileResult``; ``analyze`` stops at live ``Finding`` objects (used by the fixer).
"""

from __future__ import annotations

import contextlib
import fnmatch
import gc
import threading
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Optional, Sequence

from .lazy_libcst import libcst as cst

from . import registry, suppression
from .prefilter import ahead, ast_tree, present
from .prefilter import select as candidate_stage
from .prefilter.text import prefilter
from .positions import Positions, positions_of  # noqa: F401  (positions_of: re-exported for tests and tools)
from .diagnostic import Diagnostic, FileResult
from .facts import ModuleFacts
from .index.project import view_for as project_view
from .rule import Applicability, Finding, Rule
from .settings import Settings
from .traversal import walk
from .unvalidated_parse import parse_module as parse_module_unvalidated

if TYPE_CHECKING:
    from libcst.metadata import CodeRange


class AnalysisError(Exception):
    """The file could not be analysed; ``str(self)`` is a one-line ``path:line:col: msg``."""


def rules_for(path: str, settings: Settings) -> list[type[Rule]]:
    by_code = registry.rules_by_code()
    codes = set(settings.selected)
    for pattern, ignored in settings.per_file_ignores:
        if _path_matches(path, pattern):
            codes -= set(ignored)
    return [by_code[c] for c in sorted(codes) if c in by_code]


def _path_matches(path: str, pattern: str) -> bool:
    posix = path.replace("\\", "/")
    if posix.startswith("./"):
        posix = posix[2:]
    return (
        fnmatch.fnmatch(posix, pattern)
        or fnmatch.fnmatch(posix, f"*/{pattern}")
        or fnmatch.fnmatch(posix.rsplit("/", 1)[-1], pattern)
    )


def parse(source: bytes, path: str) -> cst.Module:
    _check_nesting(source, path)
    return _parse_module(source, path)


def _parse_module(source: bytes, path: str) -> cst.Module:
    """libcst's parse; the caller has ruled out nesting that crashes it (``_check_nesting``
    or a successful ``ast`` parse in the candidate tier)."""
    try:
        return parse_module_unvalidated(source)
    except cst.ParserSyntaxError as e:
        first = str(e.message).strip().splitlines()[0] if e.message else "invalid syntax"
        raise AnalysisError(f"{path}:{e.raw_line}:{e.raw_column + 1}: syntax error: {first}") from None
    except RecursionError:
        raise AnalysisError(f"{path}:1:1: file too deeply nested to parse (recursion limit)") from None
    except (UnicodeDecodeError, LookupError, SyntaxError) as e:
        line = getattr(e, "lineno", None) or 1
        raise AnalysisError(f"{path}:{line}:1: cannot decode file: {e}") from None
    except Exception as e:  # libcst raises a few other types on odd input (e.g. NUL bytes)
        raise AnalysisError(f"{path}:1:1: cannot parse file: {type(e).__name__}: {e}".splitlines()[0]) from None


#: libcst's native parser overflows the C stack (SIGSEGV) at ~6000 nested levels, and is
#: quadratic well before; a level costs at least 2 bytes (``a.b.b``), so smaller files are safe.
_NESTING_CHECK_MIN_BYTES = 8000


def _check_nesting(source: bytes, path: str) -> None:
    """Reject what CPython itself cannot compile for depth, before libcst crashes on it."""
    if len(source) < _NESTING_CHECK_MIN_BYTES:
        return
    import ast
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(source, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except (RecursionError, MemoryError):
        raise AnalysisError(f"{path}:1:1: file too deeply nested to parse (Python's own parser gives up)") from None
    except Exception:
        return  # syntax errors (or newer syntax than this Python's) are libcst's to judge


@dataclass
class Analysis:
    path: str
    module: cst.Module
    facts: ModuleFacts
    findings: list[Finding]
    settings: Settings
    #: the module's code (the parsed bytes decoded, ``_decoded``)
    text: str
    warnings: list[str] = field(default_factory=list)
    #: the rule instances that ran (``release`` empties them)
    rules: list[Rule] = field(default_factory=list)

    def release(self) -> None:
        """Break the reference cycles of a finished analysis (rules hold their findings, which
        hold them; facts, ``ModuleFacts.release``), so that reference counting frees the tree
        and the garbage collector has nothing of it to walk. Unusable afterwards."""
        for rule in self.rules:
            rule.__dict__.clear()
        self.findings.clear()
        self.facts.release()
        self.__dict__.clear()

    @cached_property
    def _import_heads(self) -> dict:
        """The import block with each set of fix imports added (``edits.fix_text_edits``)."""
        return {}

    @cached_property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    @cached_property
    def positions(self):
        # Positions cost a render: asked for only in files with findings, rendered per
        # top-level statement (``analyze`` sets them), shared with the facts' ``line_of``
        return self.facts._positions

    def position(self, node: cst.CSTNode) -> CodeRange:
        return self.positions[node]

    @cached_property
    def suppressions(self) -> suppression.Suppressions:
        # Python's ``ast`` of the file, when the candidate tier parsed it (``Positions`` keeps it)
        tree = getattr(self.facts.__dict__.get("_positions"), "tree", None)
        return suppression.parse(self.text, set(registry.rules_by_code()), registry.names_to_codes(), tree)

    def is_suppressed(self, finding: Finding) -> bool:
        return self.suppressions.suppresses(self.position(finding.node).start.line, finding.code)

    def active_findings(self) -> list[Finding]:
        """Findings not suppressed in-line, in source order."""
        if not self.findings:
            return []
        live = [f for f in self.findings if not self.is_suppressed(f)]
        live.sort(key=lambda f: (self.position(f.node).start.line, self.position(f.node).start.column, f.code))
        return live

    def diagnostic(self, finding: Finding, *, with_edits: bool = True) -> Diagnostic:
        pos = self.position(finding.node)
        fix = None
        if finding.fix is not None:
            edits: list[dict] = []
            if with_edits:
                # edits imports libcst.codemod, whose libcst.matchers import costs ~0.9 s:
                # paid only by a process that renders a fix
                from .edits import fix_text_edits

                try:
                    edits = fix_text_edits(self.module, self.text, [finding.fix], self.facts, self.positions,
                                           self._import_heads)
                except Exception:  # a fix that cannot render is reported without edits
                    edits = []
            fix = {
                "applicability": finding.fix.applicability.value,
                "message": finding.fix.message,
                "edits": edits,
            }
        line_text = self.lines[pos.start.line - 1].strip() if 0 < pos.start.line <= len(self.lines) else ""
        return Diagnostic(
            code=finding.code,
            name=finding.rule.name,
            message=finding.message,
            path=self.path,
            line=pos.start.line,
            column=pos.start.column + 1,
            end_line=pos.end.line,
            end_column=pos.end.column + 1,
            fix=fix,
            line_text=line_text,
        )


#: Where a file's analysis stopped (``FileResult.stage``, shown by ``--statistics``).
STAGE_TEXT = "text"  # no rule: the pre-filter or candidate tier 1 (words) ruled every rule out
STAGE_TREE = "tree"  # no rule: candidate tier 2 (Python's ast) ruled every rule out
STAGE_LIBCST = "libcst"  # parsed with libcst and linted
STAGE_NEWER = "newer-syntax"  # this Python's ast rejected it, libcst parsed it (newer syntax): linted
STAGE_AST = "ast"  # linted on the candidate tier's ast alone (every candidate rule ported, no edits wanted)


def _ast_mode() -> str:
    """``SHUTDOWN_LINT_AST``: ``off`` (libcst only), ``on`` (the ast path where it may be taken),
    ``both`` (both engines where ``on`` would take the ast path; the libcst result is kept and each
    difference is written to stderr). Unset or unknown: ``on``. Read once per process."""
    import os

    mode = os.environ.get("SHUTDOWN_LINT_AST", "on").strip().lower()
    return mode if mode in ("off", "on", "both") else "on"


#: the detection engine for files whose candidate rules all detect on ast (``_ast_mode``)
AST_MODE = _ast_mode()


def select_rules(source: bytes, path: str, settings: Settings,
                 rules: Optional[Sequence[type[Rule]]] = None) -> tuple[list[type[Rule]], str]:
    """The rules that may report in ``source``, and the stage that decided: ``STAGE_TEXT``
    or ``STAGE_TREE`` with no rules, else ``STAGE_LIBCST`` (or ``STAGE_NEWER`` when
    Python's ``ast`` could not parse the file: libcst, which knows newer syntax, judges).
    Raises ``AnalysisError`` for a file too deeply nested for Python's own parser."""
    _tier2.asked = None
    _tier2.tree = None
    # the tiers judged ahead, on the project index's parse of these bytes (``prefilter.ahead``)
    judged = ahead.known(path, source, settings) if rules is None else None
    if judged is not None:
        candidates, decided = judged
        if decided is not None:
            return [], decided
    else:
        candidates = list(rules) if rules is not None else rules_for(path, settings)
        if not settings.prefilter:
            if candidates:
                _check_nesting(source, path)
            return candidates, STAGE_LIBCST
        candidates = text_tiers(source, candidates, settings)
        if not candidates:
            return [], STAGE_TEXT
    if not (candidate_stage.enabled and candidate_stage.tree_enabled):
        _check_nesting(source, path)
        return candidates, STAGE_LIBCST
    asked: list = []

    def project():  # the index seen from this file, for the conditions that ask it (once)
        if not asked:
            asked.append(project_view(path))
        return asked[0]

    # a file with a big literal table: its conditions on the tree without the table first
    # (``ast_tree.parse_reduced``: they hold there whenever they hold on the whole tree); only
    # when one holds is the whole file parsed and judged as any other
    reduced = ast_tree.parse_reduced(source)
    if reduced is not None and not candidate_stage.filter_rules_by_tree(reduced, candidates, settings, project):
        _tier2.asked = (path, asked[0]) if asked else None
        return [], STAGE_TREE
    try:
        tree = ast_tree.parse(source)
    except ast_tree.TooDeep:
        raise AnalysisError(f"{path}:1:1: file too deeply nested to parse (Python's own parser gives up)") from None
    candidates = candidate_stage.filter_rules_by_tree(tree, candidates, settings, project)
    _tier2.asked = (path, asked[0]) if asked else None
    _tier2.tree = (path, tree)
    if not candidates:
        return [], STAGE_TREE
    return candidates, STAGE_LIBCST if tree is not None else STAGE_NEWER


def text_tiers(source: bytes, candidates: Sequence[type[Rule]], settings: Settings) -> list[type[Rule]]:
    """``candidates`` that the text tiers keep for ``source``: the trigger words, then tier 1
    (``select_rules``, and ``prefilter.ahead`` judging a file on the project index's parse)."""
    # the words both tiers look for, found in one pass over the bytes (None: searched one by one)
    found = present.scan(source, candidates)
    candidates = prefilter(source, candidates, found)
    if candidates:
        # cheap necessary conditions per rule, before paying for a libcst parse
        candidates = candidate_stage.filter_rules(source, candidates, settings, found)
    return candidates


#: the project index view a tier-2 condition asked in this thread's last ``select_rules``:
#: ``(path, view)`` or None. ``analyze`` hands it to the rules' walk (one view, so one set of
#: dependencies: what ruled a rule out is what the file's cached result depends on too).
_tier2 = threading.local()


def _asked_view(path: str) -> tuple[bool, object]:
    """(asked, view): the view the last ``select_rules`` of this thread asked for ``path``."""
    asked = getattr(_tier2, "asked", None)
    _tier2.asked = None
    if asked is None or asked[0] != path:
        return False, None
    return True, asked[1]


def _tier2_tree(path: str):
    """The candidate tier's ``Tree`` of the last ``select_rules`` of this thread for ``path``, or None."""
    found = getattr(_tier2, "tree", None)
    _tier2.tree = None
    return found[1] if found is not None and found[0] == path else None


def analyze(source: bytes, path: str, settings: Settings, rules: Optional[Sequence[type[Rule]]] = None,
            stage: Optional[list[str]] = None, deps: Optional[dict] = None, on_ast: bool = False):
    """Run the rules on ``source``. ``None`` when the candidate stages rule the file out.
    ``stage``, when given, receives the stage that decided (``select_rules``); ``deps``, the other
    modules whose summaries the candidate tier read when it ruled the file out (the file's result
    depends on them as on those a walk reads).

    ``on_ast``: when every candidate rule detects on ``ast`` (``Rule.ast_check``) and the candidate
    tier's tree is at hand with exact names, lint on it (an ``ast_engine.engine.AstAnalysis``, stage
    ``STAGE_AST``: no libcst parse, no fix edits); else the libcst ``Analysis``.

    Raises ``AnalysisError`` when the file cannot be parsed.
    """
    candidates, decided = select_rules(source, path, settings, rules)
    asked, view = _asked_view(path)
    tree = _tier2_tree(path)
    if not candidates:
        if stage is not None:
            stage.append(decided)
        if deps is not None and view is not None:
            deps.update(view.deps)  # type: ignore[attr-defined]
        return None
    if on_ast and decided == STAGE_LIBCST and tree is not None and tree.exact_names:
        from .ast_engine import engine

        if engine.ported(candidates):
            try:
                found = engine.analyze(source, path, settings, candidates, tree,
                                       view if asked else project_view(path))
            except RecursionError:  # a query too deep for the ast engine: the libcst path judges
                found = None
            if found is not None:
                if stage is not None:
                    stage.append(STAGE_AST)
                return found
    if stage is not None:
        stage.append(decided)
    try:
        module = _parse_module(source, path)
    except AnalysisError as e:
        rejected = ast_tree.rejection(source) if decided == STAGE_NEWER else None
        if rejected is None or ": syntax error: " not in str(e):
            raise
        # both parsers reject it: a real syntax error; CPython's position and words are the better ones
        line, col, msg = rejected
        raise AnalysisError(f"{path}:{line}:{col}: syntax error: {msg}") from None
    try:
        facts = ModuleFacts.build(module, path)
    except RecursionError:
        raise AnalysisError(f"{path}:1:1: file too deeply nested to analyse (recursion limit)") from None
    # the project index seen from this file (None: no index); the tier-2 conditions' when they asked
    facts.project = view if asked else project_view(path)  # type: ignore[assignment]
    text = _decoded(source, module)
    facts.source_text = text
    # positions, when a rule or a finding asks, are rendered per top-level statement (positions.py)
    facts.__dict__["_positions"] = Positions(module, text, ast_tree.cached(source), facts.parent)
    findings: list[Finding] = []
    instances = [r(facts, settings, findings) for r in candidates]
    try:
        from .rule_visitor import MultiRuleVisitor  # local: it imports libcst (lazy_libcst)

        visitor = MultiRuleVisitor(instances)
        walk(module, visitor, visitor.skip)  # same hooks and order as module.visit, no rebuild
    except RecursionError:
        raise AnalysisError(f"{path}:1:1: file too deeply nested to analyse (recursion limit)") from None
    return Analysis(path, module, facts, findings, settings, text, rules=instances)


def _decoded(source: bytes, module: cst.Module) -> str:
    """The module's code: libcst round-trips exactly, so the parsed bytes in its encoding
    are that code (rendering it instead costs a codegen of the file)."""
    try:
        return source.decode(module.encoding)
    except (UnicodeDecodeError, LookupError):
        return module.code


@contextlib.contextmanager
def gc_paused():
    """No cyclic garbage collection while one file is analysed.

    A libcst tree is millions of container objects that live until the file is done; each
    automatic collection of the oldest generation walks all of them again, ~20% of a
    file's analysis. ``lint_source`` releases the analysis (``Analysis.release``), so its
    tree is freed by reference counting; what a caller that does not release leaves behind
    (the fixer, the language server) is collected by the first automatic collection after
    it, so memory stays bounded by one file's analysis."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def lint_source(source: bytes, path: str, settings: Settings, *, fix_edits: bool = True) -> FileResult:
    with gc_paused():
        return _lint_source(source, path, settings, fix_edits)


def _lint_source(source: bytes, path: str, settings: Settings, fix_edits: bool) -> FileResult:
    if AST_MODE == "off" or fix_edits:
        return _lint_one(source, path, settings, fix_edits, False)
    result = _lint_one(source, path, settings, fix_edits, True)
    if AST_MODE == "on" or result.stage != STAGE_AST:
        return result
    kept = _lint_one(source, path, settings, fix_edits, False)
    _report_differences(path, result, kept)
    return kept


def _report_differences(path: str, on_ast: FileResult, on_libcst: FileResult) -> None:
    """``SHUTDOWN_LINT_AST=both``: one stderr line per difference between the two engines' results."""
    import sys

    def rows(r: FileResult) -> list:
        return [d.to_dict() for d in r.diagnostics]

    def without_edits(d: dict) -> dict:
        fix = d.get("fix")
        return {**d, "fix": {**fix, "edits": []}} if fix else d

    lines = []
    a, b = rows(on_ast), [without_edits(d) for d in rows(on_libcst)]
    for d in a:
        if d not in b:
            lines.append(f"only on ast: {d}")
    for d in b:
        if d not in a:
            lines.append(f"only on libcst: {d}")
    if not lines and a != b:
        lines.append("diagnostics in another order")
    for name in ("error", "warnings", "deps", "parsed"):
        if getattr(on_ast, name) != getattr(on_libcst, name):
            lines.append(f"{name}: ast {getattr(on_ast, name)!r} libcst {getattr(on_libcst, name)!r}")
    for line in lines:
        sys.stderr.write(f"ast-engine difference: {path}: {line}\n")


def _lint_one(source: bytes, path: str, settings: Settings, fix_edits: bool, on_ast: bool) -> FileResult:
    result = FileResult(path)
    stage: list[str] = []
    deps: dict = {}
    try:
        analysis = analyze(source, path, settings, stage=stage, deps=deps, on_ast=on_ast)
    except AnalysisError as e:
        result.error = str(e)
        return result
    finally:
        result.stage = stage[0] if stage else ""
    if analysis is None:
        if deps:
            result.deps = deps
        return result
    result.parsed = True
    if analysis.facts.project is not None and analysis.facts.project.deps:
        result.deps = dict(analysis.facts.project.deps)
    if result.stage == STAGE_NEWER:
        note = _newer_than_target(source, path, settings)
        if note:
            result.warnings.append(note)
    try:
        _collect(analysis, result, path, fix_edits)
    except RecursionError:  # positions and rendering recurse over the tree (libcst codegen)
        return FileResult(path, error=f"{path}:1:1: file too deeply nested to analyse (recursion limit)")
    finally:
        analysis.release()
    return result


def _newer_than_target(source: bytes, path: str, settings: Settings) -> Optional[str]:
    """A file only libcst could parse is linted. When the running Python is at least the
    target version, its parser's rejection also holds for the target: say so (a warning,
    not an error: the file may be imported only on newer Pythons, as
    ``torch/testing/_internal/py312_intrinsics.py`` is). When the running Python is older
    than the target, its rejection says nothing about the target: nothing to say."""
    import sys

    if settings.target_at_least(f"py3{sys.version_info[1] + 1}"):
        return None
    rejected = ast_tree.rejection(source)
    if rejected is None:
        return None
    line, col, msg = rejected
    return (f"{path}:{line}:{col}: syntax newer than --target-version {settings.target_version} "
            f"(Python {sys.version_info[0]}.{sys.version_info[1]} says: {msg}); linted with libcst")


def _collect(analysis, result: FileResult, path: str, fix_edits: bool) -> None:
    findings = analysis.active_findings()
    if isinstance(analysis, Analysis):
        result.diagnostics = [analysis.diagnostic(f, with_edits=fix_edits) for f in findings]
    else:  # the ast engine's (no edits)
        result.diagnostics = [analysis.diagnostic(f) for f in findings]
    # a file with no findings parses its suppressions only if it has any to check
    if analysis.findings or "noqa" in analysis.text or "shutdown-lint" in analysis.text:
        for line, code in analysis.suppressions.unknown:
            result.warnings.append(f"{path}:{line}:1: unknown rule {code!r} in a suppression comment")


def is_applicable(finding: Finding, unsafe: bool) -> bool:
    return finding.fix is not None and (unsafe or finding.fix.applicability is Applicability.SAFE)
