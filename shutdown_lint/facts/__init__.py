"""Shared facts about one module, computed once per file for all rules.

One walk over the libcst tree (``_Collector``) records parents, scopes and their
bindings, functions, classes and calls. Everything else is derived from that index on
demand and cached: qualified names through import aliases (``import asyncio as aio``,
``from asyncio import gather``), the type of a few well-known objects (event loops,
task groups, executors), which same-module function a call resolves to, and *where a
function runs* (as a task, in an executor or thread, in a Ray worker, in the driver, in
a torch.distributed worker).

We deliberately do not use libcst's ScopeProvider/QualifiedNameProvider: on real code
they cost several times the parse itself, and the rules only need the module's own
imports and a light notion of scope.

The package's modules say what they compute: ``vocabulary`` (contexts and the calls that
create them), ``model`` and ``collector`` (the walk), ``tree`` (tree shape), ``names``
(qualified names and call resolution), ``execution`` (where code runs), ``exit_paths``
(how control leaves a handler, exit statuses), ``types`` (the type of a value from
constructors, annotations, tuple unpacking, closures and ``self.x``: ``ModuleFacts.typer``,
``type_of``) and ``module`` (``ModuleFacts``, which combines them). Rules import everything
from ``shutdown_lint.facts``.
"""

from __future__ import annotations

from .execution import reachable
from .exit_paths import (  # noqa: F401  (ways out of a handler, exit statuses)
    BREAK, CONTINUE, EXIT, EXIT_FUNCTIONS, FALL_THROUGH, PROPAGATING, RAISE_OTHER, RERAISE, RETURN, STATUS_NONZERO,
    STATUS_UNKNOWN, STATUS_ZERO, SWALLOWING, ExitPaths, literal_status,
)
from .model import ClassInfo, FunctionInfo, Scope
from .module import ModuleFacts
from ..index.project import ProjectFunction, display as display_path, looked_in, teardown_elsewhere  # noqa: F401  (cross-module facts)
from .tree import names_in
from .vocabulary import (  # noqa: F401  (the context names and call vocabularies)
    CALLBACK, CALLBACK_REGISTRARS, DRIVER, EXECUTOR, EXECUTOR_SUBMITTERS, FACTORY_TYPES, FACTS, LOOP_THREAD,
    MAIN_COROUTINE, MAIN_RUNNERS, RAY_ASYNC_ACTOR, RAY_REMOTE, RAY_THREADED_ACTOR, RAY_WORKER, TASK, TASK_SPAWNERS, THREAD,
    TORCH_WORKER,
)
from .vocabulary import _CANONICAL_PREFIXES, _canonical  # noqa: F401  (used by the candidate stage)
