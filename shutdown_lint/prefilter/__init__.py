"""The stages that decide, before libcst, which rules a file needs (cheapest first).

- ``present``: which of the two text tiers' words a file contains, found in one pass (an
  Aho-Corasick automaton) for both;
- ``text``: the trigger substrings of each rule (``Rule.triggers``);
- ``words``: candidate tier 1, necessary conditions on the file's identifier words
  (``Rule.candidate``);
- ``ast_tree``: candidate tier 2, necessary conditions on Python's ``ast`` (``Rule.candidate_tree``),
  with the one summary walk the conditions share;
- ``select``: applying the tiers' declarations to a file's rules, and the switches that turn them off;
- ``ahead``: the tiers judged ahead, on the project index's parse of a file a serial run has not reached yet.

``analyzer.select_rules`` runs them in that order. Nothing here imports libcst.
"""
