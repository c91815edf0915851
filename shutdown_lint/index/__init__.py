"""The project index: what rules may know about the other modules of the project.

``summary`` (module summaries built with ``ast``) and ``store`` (their cache) need neither
libcst nor the rules: a warm run imports them to check a cached result's dependencies.
``project`` resolves names across modules (what rules read, as ``facts.project``) and
``hooks`` is the engine's side (install the run's index, check and store dependencies)."""
