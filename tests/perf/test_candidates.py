"""The candidate tiers (shutdown_lint/prefilter/words.py: words; shutdown_lint/prefilter/ast_tree.py:
Python's ast) must never lose a finding.

Every rule's examples and every file of the example project are linted with both tiers,
with tier 1 only and with none; the diagnostics must be identical. A rule whose invalid
example is ruled out by its own declaration is a bug in the declaration.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from shutdown_lint import registry
from shutdown_lint.prefilter import ast_tree, select
from shutdown_lint.prefilter import words
from shutdown_lint.analyzer import lint_source
from shutdown_lint.prefilter.words import FileText
from shutdown_lint.settings import Settings

RULES = registry.all_rules()
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _both_ways(source: bytes, path: str, settings: Settings):
    """(both tiers, none); asserts that tier 1 alone agrees too."""
    with_stage = lint_source(source, path, settings)
    with select.disabled(tree_only=True):
        words_only = lint_source(source, path, settings)
    with select.disabled():
        without = lint_source(source, path, settings)
    assert _key(words_only) == _key(without), path
    return with_stage, without


def _key(result):
    return (result.error, [d.to_dict() if hasattr(d, "to_dict") else vars(d) for d in result.diagnostics])


def _example_cases():
    for rule in RULES:
        valid, invalid = rule.examples()
        for i, ex in enumerate(invalid):
            yield pytest.param(rule, ex, id=f"{rule.code}-invalid-{i}")
        for i, ex in enumerate(valid):
            yield pytest.param(rule, ex, id=f"{rule.code}-valid-{i}")


@pytest.mark.parametrize("rule, example", list(_example_cases()))
def test_stage_keeps_example_findings(rule, example):
    settings = Settings(
        selected=(rule.code,),
        target_version=example.target_version or "py312",
        rule_options={rule.code: dict(example.options)} if example.options else {},
    )
    with_stage, without = _both_ways(example.code.encode(), "example.py", settings)
    assert _key(with_stage) == _key(without)


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_declaration_admits_every_invalid_example(rule):
    cond = select.declaration(rule)
    if cond is None:
        pytest.skip(f"{rule.code} has no candidate declaration (always parsed)")
    _, invalid = rule.examples()
    for ex in invalid:
        assert cond.holds(FileText(ex.code.encode())), f"{rule.code}: {cond!r} rules out\n{ex.code}"


def test_stage_keeps_example_project_findings():
    files = sorted(EXAMPLES.rglob("*.py"))
    assert files, f"no example project under {EXAMPLES}"
    settings = Settings(selected=tuple(r.code for r in RULES), target_version="py311")
    total = 0
    for path in files:
        with_stage, without = _both_ways(path.read_bytes(), str(path), settings)
        assert _key(with_stage) == _key(without), path
        total += len(without.diagnostics)
    assert total > 0, "the example project should have findings"


TREE_DECLARED = [r for r in RULES if select.tree_declaration(r) is not None]


@pytest.mark.parametrize("rule", TREE_DECLARED, ids=[r.code for r in TREE_DECLARED])
def test_tree_declaration_admits_every_invalid_example(rule):
    cond = select.tree_declaration(rule)
    _, invalid = rule.examples()
    for ex in invalid:
        if ex.options:
            continue  # a rule whose options are set is always a candidate
        tree = ast_tree.parse(ex.code.encode())
        assert tree is not None, ex.code
        assert cond(tree), f"{rule.code}: candidate_tree rules out\n{ex.code}"


def test_declarations_live_on_the_rules():
    assert not hasattr(select, "_declarations") and not hasattr(words, "_declarations"), "declarations: on the rules"
    for rule in RULES:
        assert select.declaration(rule) is rule.__dict__.get("candidate"), rule.code


def test_a_rule_that_declares_nothing_is_always_a_candidate():
    from shutdown_lint.rule import Rule

    class Undeclared(Rule):
        code = "SHD999"
        name = "undeclared"
        summary = "test only"

    settings = Settings(selected=("SHD999",))
    assert select.filter_rules(b"x = 1\n", [Undeclared], settings) == [Undeclared]
    assert select.filter_rules_by_tree(ast_tree.parse(b"x = 1\n"), [Undeclared], settings) == [Undeclared]


def test_tree_words_follow_aliases():
    import ast

    tree = ast_tree.parse(b"from time import sleep as nap\nimport queue\nq = queue.Queue()\n"
                           b"class A:\n    def __init__(self):\n        self.save = torch.save\n")
    name = ast.Name("nap")
    assert tree.words(name) == {"nap", "sleep"}
    assert "Queue" in tree.words(ast.Name("q"))
    assert "save" in tree.aliases_of_attr("save")
    call = ast.parse("asyncio.tasks.gather(a, b)").body[0].value
    assert tree.may_call_any(call, ["asyncio.gather"])  # a spelling the facts canonicalise


def test_tree_mentions_every_spelled_identifier_as_a_full_walk_would():
    import ast

    source = (b"import os.path as osp\nfrom a.b import c as d\n\n"
              b"async def f(x=Popen):\n    y = [q.get_nowait() for q in queues]\n"
              b"    s = f'{self.f.read}' + 'open'\n    return lambda: Session()\n")
    tree = ast_tree.parse(source)
    walked = set()
    for n in ast.walk(ast.parse(source)):
        if isinstance(n, ast.Name):
            walked.add(n.id)
        elif isinstance(n, ast.Attribute):
            walked.add(n.attr)
        elif isinstance(n, ast.alias):
            walked.add(n.name.rsplit(".", 1)[-1])
    assert tree.mentioned == walked
    assert tree.mentions({"Popen"}) and tree.mentions({"read", "zzz"}) and tree.mentions({"c"})
    assert not tree.mentions({"open", "d", "osp"})  # a string; aliases are not spelled as names here


def test_tree_tier_keeps_the_parsed_ast_for_reuse():
    source = b"async def f():\n    pass\n"
    tree = ast_tree.parse(source)
    assert tree is not None and ast_tree.cached(source) is tree.module
    assert ast_tree.parse(b"def f[T](x: T): pass\n" if _old_python() else b"def (:\n") is None


def _old_python() -> bool:
    import sys

    return sys.version_info < (3, 12)


def test_every_registered_rule_has_a_declaration():
    missing = [r.code for r in RULES if select.declaration(r) is None]
    assert not missing, f"rules parsed for every file (no candidate declaration): {missing}"


def test_words_are_whole_identifiers():
    text = FileText(b"def __exit__(self):\n    pass  # exit_code\n")
    assert not words.Word("exit").holds(text)
    assert words.Word("exit").holds(FileText(b"import sys\nsys.exit(1)\n"))
    assert words.Word("exit").holds(FileText(b"from sys import exit as die\ndie(1)\n"))


def test_qualified_needs_root_module_except_for_types_and_builtins():
    ray_get = words.qualified("ray.get")
    assert ray_get.holds(FileText(b"import ray as r\nr.get(x)\n"))
    assert not ray_get.holds(FileText(b"d.get(x)\n"))
    loop_task = words.qualified("asyncio.AbstractEventLoop.create_task")
    assert loop_task.holds(FileText(b"import uvloop\nloop = uvloop.new_event_loop()\nloop.create_task(c())\n"))
    assert words.qualified("builtins.exit").holds(FileText(b"exit(1)\n"))


def test_options_set_explicitly_bypass_the_declaration():
    rule = next(r for r in RULES if select.declaration(r) is not None)
    plain = Settings(selected=(rule.code,))
    configured = Settings(selected=(rule.code,), rule_options={rule.code: {"anything": 1}})
    assert select.filter_rules(b"x = 1\n", [rule], plain) == []
    assert select.filter_rules(b"x = 1\n", [rule], configured) == [rule]


def test_words_in_comments_do_not_count_but_strings_keep_them_conservative():
    word = words.Word("exit")
    assert not word.holds(FileText(b"x = 1  # early exit here\n"))
    assert word.holds(FileText(b"s = '#'; exit(1)\n"))  # a quote before: cannot tell, keep it
    assert word.holds(FileText(b'x = """\n# text """; exit()\n'))
    assert not word.holds(FileText(b'x = """\n# text and exit\n"""\n'))


def test_candidate_module_is_cheap_to_import():
    import subprocess
    import sys

    code = ("import sys, shutdown_lint.prefilter.select, shutdown_lint.prefilter.ast_tree, shutdown_lint.prefilter.text;"
            " print('libcst' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


@pytest.mark.slow
def test_tree_tier_loses_nothing_on_installed_ray_sources():
    """Tier 2 on and off over real code (every 4th file of the installed ray package that
    tier 1 keeps): identical diagnostics. ``bench/bench_speed.py --check-tree-tier`` does
    the same over the whole reference corpus."""
    import ray

    from shutdown_lint.analyzer import select_rules

    settings = Settings(selected=tuple(r.code for r in RULES))
    root = Path(ray.__file__).parent
    kept = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_bytes()
        with select.disabled(tree_only=True):
            try:
                rules, _ = select_rules(source, str(path), settings)
            except Exception:
                continue
        if rules:
            kept.append((path, source))
    assert len(kept) > 100, len(kept)
    ruled_out = findings = 0
    for path, source in kept[::4]:
        with_tier = lint_source(source, str(path), settings, fix_edits=False)
        with select.disabled(tree_only=True):
            without = lint_source(source, str(path), settings, fix_edits=False)
        assert _key(with_tier) == _key(without), path
        ruled_out += with_tier.stage == "tree"
        findings += len(without.diagnostics)
    assert ruled_out > 0 and findings > 0, (ruled_out, findings)


_RELEASED_IN_CLOSE = '''
from concurrent.futures import ThreadPoolExecutor


class Saver:
    def __init__(self):
        self.pool = ThreadPoolExecutor(2)

    def close(self):
        self.pool.shutdown(wait=False)
'''


@pytest.mark.parametrize("variant,candidate", [
    ("as written", False),
    ("released in a method that is not a cleanup", True),
    ("spaces inside the reference", True),
    ("another attribute released", True),
    ("a second close() defined later", True),
])
def test_shd503_tier2_drops_a_class_that_shuts_its_executor_in_close(variant, candidate):
    """SHD503's tier 2 drops a file only when the rule's own ``_released`` must find the
    release (a direct ``self.<attr>.shutdown()`` in a cleanup-named method of the class);
    each near miss stays a candidate, and linting agrees with the tier either way."""
    code = _RELEASED_IN_CLOSE
    if variant == "released in a method that is not a cleanup":
        code = code.replace("def close(self):", "def flush(self):")
    elif variant == "spaces inside the reference":
        code = code.replace("self.pool.shutdown", "self . pool.shutdown")
    elif variant == "another attribute released":
        code = code.replace("self.pool.shutdown", "self.other.shutdown")
    elif variant == "a second close() defined later":
        code = code.replace("    def close(self):", "    def close(self):\n        pass\n\n    def close(self):")
    found = _tier2_decides("SHD503", code, candidate)
    if not candidate:
        assert found == []


def test_prefilter_gates_change_nothing():
    """The prefilter's gate words only skip searches that must fail: the rules it keeps are
    those with a trigger in the text."""
    from shutdown_lint.prefilter.text import prefilter

    rules = list(registry.all_rules())
    texts = [b"", b"os._exit(1)", b"signal.SIGTERM", b"SIG_IGN", b"pkill -f x", b"psutil.process_iter()",
             b"loop.run_until_complete(x)", b"raise SystemExit", b"exit", b"kill", b"killall x",
             b"torch.distributed.init_process_group()", b"run_forever", b"SIGINT SIGTERM exit _exit"]
    texts += [ex.code.encode() for r in rules for ex in [*r.examples()[0], *r.examples()[1]]]
    for text in texts:
        naive = [r for r in rules if not r.triggers or any(_written(t.encode(), text) for t in r.triggers)]
        assert prefilter(text, rules) == naive, text[:80]


@pytest.mark.parametrize("handler,candidate", [
    ("        log(e)\n        raise\n", False),
    ("        x = 1\n        raise e\n", False),
    ("        x = 1\n        raise RuntimeError() from e\n", True),  # a different exception: reported
    ("        if e:\n            raise\n", True),  # one way out raises, the other falls through: reported
    ("        for i in [1, 2]:\n            raise\n", True),  # kept (the facts see the loop runs: not reported)
    ("        while True:\n            log(e)\n        raise\n", True),  # never leaves: reported
    ("        return\n        raise\n", True),
    ("        try:\n            raise\n        finally:\n            return\n", True),
    ("        pass\n", True),
])
def test_shd104_tier2_drops_handlers_that_always_reraise(handler, candidate):
    """SHD104's tier 2 drops a handler whose every way out surely re-raises (ending in a bare
    ``raise``, no other raise, no return/break/continue/yield/while/try); a raise on one
    branch, a different exception, an earlier return, a swallowing ``finally`` or no raise
    stay candidates, and the findings are the same with the tiers on and off."""
    code = ("import asyncio\n\nasync def work():\n    try:\n        await asyncio.sleep(1)\n"
            "    except asyncio.CancelledError as e:\n" + handler)
    _tier2_decides("SHD104", code, candidate)


def _tier2_decides(code: str, source: str, candidate: bool) -> list[str]:
    """Rule ``code``'s tier-2 condition on ``source`` is ``candidate``, and linting with the
    tiers on finds what linting with them off does; returns those findings' codes."""
    rule = registry.rules_by_code()[code]
    assert rule.candidate_tree(ast_tree.parse(source.encode())) is candidate
    return _tiers_agree(code, source)


def _tiers_agree(code: str, source: str | bytes, key=lambda d: d.code) -> list:
    """Rule ``code``'s findings in ``source`` (each as ``key`` gives it) with the tiers off,
    asserted equal to those with the tiers on."""
    data = source.encode() if isinstance(source, str) else source
    settings = Settings(selected=(code,))
    with select.disabled():
        without_tiers = [key(d) for d in lint_source(data, "t.py", settings).diagnostics]
    assert [key(d) for d in lint_source(data, "t.py", settings).diagnostics] == without_tiers
    return without_tiers


class NearMisses(list):
    """A table of tier-2 near misses, rows ``(code, source, candidate, findings)``: each states
    whether rule ``code``'s ``candidate_tree`` keeps ``source`` and how many findings the rule
    reports with the tiers off; with the tiers on linting must find the same (a case ruled out
    reports nothing)."""

    def case(self, code: str, candidate: bool, findings: int, source: str) -> None:
        self.append((code, textwrap.dedent(source), candidate, findings))

    def test(self):
        """The test of every row, ids ``<code>-<row>``: bind it to a module's
        ``test_tier2_near_miss`` once the table is full."""
        @pytest.mark.parametrize("code,source,candidate,findings", list(self),
                                 ids=[f"{c[0]}-{i}" for i, c in enumerate(self)])
        def test_tier2_near_miss(code, source, candidate, findings):
            without_tiers = _tier2_decides(code, source, candidate)  # tiers on find what tiers off do
            assert len(without_tiers) == findings, without_tiers

        return test_tier2_near_miss


@pytest.mark.parametrize("source,may", [
    (b"from ray import remote\ninit()\n", False),
    (b"from ray import init\n", True),
    (b"from ray import (\n    remote,  # c\n    init as start,\n)\n", True),
    (b"from ray import (\n    remote,\n    get,\n)\ninit()\n", False),
    (b"from ray import remote, \\\n    init\n", True),
    (b"from ray import *\ninit()\n", True),
    (b"from ray import remote; from ray import init\n", True),
    (b"import ray as r\nr.init()\n", True),
    (b"from ray import (remote\ninit()\n", True),  # unreadable: conservative
    (b"import ray\nx = ray.init\n", True),
    (b"import ray\nr = ray\nr.init()\n", True),
])
def test_from_import_binds_only_what_it_names(source, may):
    """``qualified("ray.init")``: ``from ray import remote`` cannot make ``ray.init`` (the
    facts resolve names through the module's own imports); naming ``init``, a star, an
    ``as`` alias of the module or a list that cannot be read all may."""
    from shutdown_lint.prefilter.words import qualified

    assert qualified("ray.init").holds(FileText(source)) is may


_ACTOR = '''
import ray


@ray.remote
class Leases:
    async def hold(self, k):
BODY
'''


@pytest.mark.parametrize("body,candidate", [
    ("        return await wait_for(k)\n", False),  # an async method that owns nothing
    ("        try:\n            await wait_for(k)\n        finally:\n            await release_lease(k)\n", True),
    ("        async with lease_sandbox(k) as box:\n            await box.wait()\n", True),
    ("        try:\n            await wait_for(k)\n        except asyncio.CancelledError:\n            release(k)\n", True),
    ("        tab = await open_tab(k)\n        await tab.close()\n", False),  # no resource word
    ("        sess = await open_session(k)\n        await sess.close()\n", True),  # resource + cleanup
    ("        def later():\n            try:\n                pass\n            finally:\n                close()\n"
     "        return later\n", True),  # nested def: the rule's scan reaches it too
])
def test_shd404_tier2_needs_an_async_method_that_may_own_a_resource(body, candidate):
    """SHD404's tier 2 keeps an actor only when an async method has what ``_owns_resource``
    looks for (a ``finally``, an ``async with``, a typed ``except``, or a resource word and a
    cleanup verb among its calls); findings agree with the tiers on and off."""
    _tier2_decides("SHD404", _ACTOR.replace("BODY", body), candidate)


_THREADED_ACTOR = '''
import asyncio
import ray


async def hold(lease):
    HOLD


class Worker:
    def serve(self, lease):
        RUN(hold(lease))


Remote = ray.remote(Worker)
workers = [Remote.options(max_concurrency=2).remote() for _ in range(2)]
'''


@pytest.mark.parametrize("hold,run,candidate", [
    ("async with lease_sandbox(lease) as box:\n        await box.wait()", "asyncio.run", True),
    ("await asyncio.sleep(lease)", "asyncio.run", False),  # the coroutine owns nothing
    ("async with lease_sandbox(lease) as box:\n        await box.wait()", "print", False),  # no runner
    ("async with lease_sandbox(lease) as box:\n        await box.wait()", "asyncio.get_event_loop().run_until_complete",
     True),
])
def test_shd404_tier2_threaded_actor_needs_a_runner_and_an_owning_coroutine(hold, run, candidate):
    _tier2_decides("SHD404", _THREADED_ACTOR.replace("HOLD", hold).replace("RUN", run), candidate)


def _near_misses():
    from tests.perf.tier2_cases import CASES

    for code, cases in CASES.items():
        for i, (source, candidate) in enumerate(cases):
            yield pytest.param(code, source, candidate, id=f"{code}-{i}")


@pytest.mark.parametrize("code,source,candidate", list(_near_misses()))
def test_tier2_near_misses(code, source, candidate):
    """Each rule's tier-2 condition on its near misses (``tier2_cases.py``); findings agree
    with the tiers on and off."""
    _tier2_decides(code, source, candidate)


@pytest.mark.parametrize("code,source", [
    # SHD503: ``ｃlose`` is ``close`` to Python's parser (NFKC), not to libcst: the executor is
    # never shut down by a cleanup method as the rule reads it
    ("SHD503", "from concurrent.futures import ThreadPoolExecutor\nclass W:\n    def __init__(self):\n"
               "        self.pool = ThreadPoolExecutor(4)\n    def ｃlose(self):\n        self.pool.shutdown()\n"),
    ("SHD502", "import torch.distributed as dist\nclass Worker:\n    def setup(self, rank):\n"
               "        dist.init_process_group('nccl', rank=rank)\n    def ｃlose(self):\n"
               "        dist.destroy_process_group()\n"),
    # SHD501: ``ｆorce=True`` is ``force=True`` to the ``ast``; to the rule it is no force keyword
    ("SHD501", "import ray, sys\n\ndef stop(ref):\n    ray.cancel(ref, ｆorce=True)\n    sys.exit(1)\n"),
])
def test_names_python_normalises_turn_the_tree_tier_off(code, source):
    """Python's parser normalises identifiers (NFKC), libcst keeps them as written: a file
    with such a name is not judged on its ``ast``, and the findings are those of the tiers off."""
    assert ast_tree.parse(source.encode()).exact_names is False
    assert ast_tree.parse("# café, naïve\nx = 'déjà vu'\n".encode()).exact_names is True  # none changes
    assert _tiers_agree(code, source) == [code]


def _written(trigger: bytes, source: bytes) -> bool:
    """The trigger occurs in ``source``: as a substring, or, for one that spells more than one
    token (``run(``), in any spacing Python reads as those tokens (``prefilter.text._spelled``)."""
    from shutdown_lint.prefilter import text as _text

    if _text._SPELLED.search(trigger) is None:
        return trigger in source
    return _text._spelled(trigger).search(source) is not None
