"""The rule catalogue: one module per rule (installed as ``shutdown_lint.rules``).

Each module defines one ``shutdown_lint.rule.Rule`` subclass whose docstring is the
rule's documentation page and whose ``valid``/``invalid`` examples the test suite runs.
Shared vocabularies live in ``_vocabulary.py`` (SHD301's, by family, in
``_blocking_vocabulary.py``); helpers for building fixes in ``_fixes.py``.
"""
