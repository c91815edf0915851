"""The project index's parts that need neither libcst nor the rules: module summaries built
with ``ast`` (``summary``) and their cache (``store``). A warm run imports them to check a
cached result's dependencies; the resolution rules read is ``shutdown_lint.facts.project``."""
