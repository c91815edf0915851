"""Detection on Python's ``ast`` (issue 30, session 9): a file whose candidate rules all have an
``ast_check`` is linted on the tree the candidate tier already parsed, with no libcst parse,
when no fix edits are wanted (``analyzer``, ``SHUTDOWN_LINT_AST``).

``check`` (``AstCheck``, ``FixPlan``: what a port writes), ``facts`` (``AstFacts``: the shared
facts of ``facts.ModuleFacts`` on ``ast``), ``walk`` (one source-order walk for all checks),
``engine`` (the file's findings and diagnostics).
"""

from __future__ import annotations

from .check import AstCheck, AstFinding, FixPlan
from .facts import AstFacts

__all__ = ["AstCheck", "AstFacts", "AstFinding", "FixPlan"]
