"""``shutdown-lint map``: the JSON of two projects (exact nodes and lines for map_demo), the schema,
the tree, an unknown, a missing entry, and the HTML picture checked by parsing it (and, where
chromium is installed, by a headless screenshot)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

from shutdown_lint.cli import main

from piped_child import PipedChild

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO = os.path.join(REPO, "tests", "data", "projects", "map_demo")
ROLLOUT = os.path.join(REPO, "examples", "rollout_project")
SCHEMA = os.path.join(REPO, "shutdown_lint", "map", "schema.json")
ENDINGS = ("normal", "exception", "ctrl_c", "sigterm")


def run_map(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["map", *args])
    out, err = capsys.readouterr()
    return code, out, err


def as_json(capsys, *args: str) -> dict:
    code, out, err = run_map(capsys, *args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def walk(node: dict, depth: int = 0):
    yield node, depth
    for c in node["children"]:
        yield from walk(c, depth + 1)


def all_nodes(data: dict):
    yield from walk(data["root"])
    for n in data["unreached"]:
        yield from walk(n)


def rows(data: dict) -> list[tuple]:
    return [(depth, n["kind"], n["at"], tuple(n["endings"][e]["state"] for e in ENDINGS))
            for n, depth in all_nodes(data)]


def by_at(data: dict, at: str, kind: str | None = None, copies: int | None = 1) -> dict:
    """The node of that kind starting there (code started from two places appears under each)."""
    found = [n for n, _ in all_nodes(data) if n["at"] == at and (kind is None or n["kind"] == kind)]
    assert len(found) == copies if copies is not None else found, (at, kind, found)
    assert all(f["endings"] == found[0]["endings"] for f in found)
    return found[0]


@pytest.fixture(scope="module")
def demo_json():
    from shutdown_lint.map.command import build_map
    from shutdown_lint.map.entry import resolve

    return json.loads(json.dumps(build_map(resolve("demo", False, DEMO)).to_dict()))


@pytest.fixture(scope="module")
def rollout_json():
    from shutdown_lint.map.command import build_map
    from shutdown_lint.map.entry import resolve

    return json.loads(json.dumps(build_map(resolve("rollout.driver", True, ROLLOUT)).to_dict()))


# ------------------------------------------------------------------------------------ map_demo

DEMO_ROWS = [
    (0, "process", "demo/cli.py:24", ("stopped", "stopped", "stopped", "stopped")),
    (1, "atexit_hook", "demo/cli.py:25", ("runs", "runs", "runs", "runs")),
    (1, "signal_handler", "demo/cli.py:26", ("not_applicable", "not_applicable", "not_applicable", "stopped")),
    (1, "ray_cluster", "demo/cli.py:27", ("stopped", "stopped", "stopped", "unknown")),
    (1, "ray_actor", "demo/cli.py:28", ("killed", "killed", "killed", "killed")),
    (2, "ray_task", "demo/cli.py:33", ("stopped", "unknown", "unknown", "unknown")),
    (1, "ray_task", "demo/cli.py:29", ("stopped", "unknown", "unknown", "unknown")),
    (1, "executor", "demo/cli.py:30", ("stopped", "stopped", "stopped", "stopped")),
    (1, "thread", "demo/workers.py:17", ("stopped", "stopped", "stopped", "stopped")),
    (1, "child_process", "demo/workers.py:24", ("left_running", "left_running", "left_running", "left_running")),
    (1, "resource", "demo/cli.py:32", ("stopped", "stopped", "stopped", "stopped")),
    (2, "event_loop", "demo/cli.py:34", ("stopped", "stopped", "stopped", "stopped")),
    (3, "task", "demo/service.py:19", ("stopped", "stopped", "stopped", "stopped")),
    (3, "child_process", "demo/service.py:20", ("stopped", "stopped", "stopped", "stopped")),
    (3, "resource", "demo/service.py:21", ("stopped", "stopped", "stopped", "stopped")),
    (4, "task_group", "demo/service.py:22", ("stopped", "stopped", "stopped", "stopped")),
    (5, "task", "demo/service.py:23", ("stopped", "stopped", "stopped", "stopped")),
    (5, "task", "demo/service.py:24", ("stopped", "stopped", "stopped", "stopped")),
    (0, "module", "demo/workers.py:1", ("not_applicable",) * 4),
    (1, "thread", "demo/workers.py:28", ("unknown", "unknown", "unknown", "killed")),
    (1, "process_group", "demo/workers.py:34", ("stopped", "stopped", "stopped", "killed")),
    (1, "resource", "demo/workers.py:35", ("stopped", "stopped", "stopped", "killed")),
]


def test_map_demo_every_node_and_line(demo_json):
    assert demo_json["entry"] == {"given": "demo", "kind": "console_script"}
    assert rows(demo_json) == DEMO_ROWS
    assert demo_json["unattached_findings"] == [] and demo_json["notes"] == []


def test_map_demo_stops_name_what_and_where(demo_json):
    def ending(at, kind, e):
        end = by_at(demo_json, at, kind)["endings"][e]
        return end["by"], end["at"], end["rule"]

    # a thread started in workers.py, returned, and joined in cli.py's finally: every ending
    for e in ("normal", "exception", "ctrl_c"):
        assert ending("demo/workers.py:17", "thread", e) == ("waited for by `pump.join()`", "demo/cli.py:37", None)
    # the SIGTERM handler raises SystemExit: SIGTERM unwinds as Ctrl+C does
    by, at, _ = ending("demo/workers.py:17", "thread", "sigterm")
    assert by.startswith("on_term raises (demo/cli.py:26)") and at == "demo/cli.py:37"
    assert ending("demo/cli.py:30", "executor", "ctrl_c")[:2] == (
        "stopped by `pool.shutdown(cancel_futures=True)`", "demo/cli.py:36")
    assert ending("demo/service.py:20", "child_process", "exception")[:2] == (
        "stopped by `proc.terminate()`, then `proc.wait()`", "demo/service.py:28")
    assert ending("demo/service.py:19", "task", "normal")[:2] == ("cancelled by `beat.cancel()`", "demo/service.py:27")
    assert ending("demo/cli.py:29", "ray_task", "normal")[1] == "demo/cli.py:33"  # ray.get
    by, at, _ = ending("demo/cli.py:28", "ray_actor", "normal")
    assert "ray.kill(scorer)" in by and at == "demo/cli.py:38"
    assert ending("demo/workers.py:34", "process_group", "exception")[:2] == (
        "stopped by `dist.destroy_process_group()`", "demo/workers.py:38")
    assert ending("demo/workers.py:24", "child_process", "normal")[0] == (
        "never waited or stopped: it outlives the parent")


def test_map_demo_ray_resources_and_details(demo_json):
    actor = by_at(demo_json, "demo/cli.py:28", "ray_actor")
    assert actor["details"]["resources"] == {"num_cpus": "1", "num_gpus": "0.5"}
    assert actor["details"]["options"] == {"max_concurrency": "2"}
    assert actor["details"]["class"] == "Scorer (demo/remote.py:9)"
    task = by_at(demo_json, "demo/cli.py:29", "ray_task")
    assert task["details"]["resources"] == {"num_cpus": "2", "memory": "2 ** 30"}
    assert by_at(demo_json, "demo/cli.py:27", "ray_cluster")["details"]["resources"] == {"num_cpus": "4"}
    assert by_at(demo_json, "demo/workers.py:17", "thread")["details"]["daemon"] is False
    assert by_at(demo_json, "demo/service.py:23", "task")["details"]["task_group"] == "demo/service.py:22"


def test_unknown_is_shown_as_unknown(demo_json, capsys):
    # daemon=daemon (a parameter): the map cannot tell whether the interpreter waits for it
    watcher = by_at(demo_json, "demo/workers.py:28", "thread")
    assert watcher["details"]["daemon"] is None
    for e in ("normal", "exception", "ctrl_c"):
        assert watcher["endings"][e] == {"state": "unknown", "by": "whether it is a daemon is not known to the map",
                                         "at": None, "rule": None}
    code, out, _ = run_map(capsys, "demo", "--project", DEMO)
    assert code == 0
    line = next(i for i, text in enumerate(out.splitlines()) if "demo/workers.py:28" in text)
    assert "unknown whether it is a daemon is not known to the map" in out.splitlines()[line + 1]


# ------------------------------------------------------------------------------------ the example

def test_rollout_project_every_start_point(rollout_json):
    data = rollout_json
    assert data["entry"] == {"given": "rollout.driver", "kind": "module"}
    starts = {(n["kind"], n["at"]) for n, _ in all_nodes(data)}
    expected = {
        ("ray_cluster", "rollout/driver.py:18"), ("ray_actor", "rollout/driver.py:20"),
        ("ray_task", "rollout/driver.py:21"), ("gather", "rollout/generator.py:38"),
        ("resource", "rollout/generator.py:20"), ("resource", "rollout/generator.py:47"),
        ("task", "rollout/generator.py:52"),
        ("task", "rollout/background.py:44"), ("task", "rollout/background.py:47"),
        ("resource", "rollout/background.py:22"), ("thread", "rollout/background.py:65"),
        ("event_loop", "rollout/background.py:61"), ("resource", "rollout/background.py:56"),
        ("child_process", "rollout/evaluator.py:18"), ("resource", "rollout/evaluator.py:13"),
        ("signal_handler", "rollout/experiment.py:34"), ("signal_handler", "rollout/experiment.py:35"),
        ("event_loop", "rollout/experiment.py:37"), ("signal_handler", "rollout/experiment.py:29"),
        ("thread", "rollout/lifecycle.py:27"), ("child_process", "rollout/lifecycle.py:36"),
        ("signal_handler", "rollout/lifecycle.py:42"), ("signal_handler", "rollout/lifecycle.py:50"),
        ("child_process", "rollout/lifecycle.py:54"),
        ("event_loop", "rollout/server.py:29"), ("resource", "rollout/server.py:21"),
        ("resource", "rollout/server.py:22"),
        ("executor", "rollout/trainer.py:18"), ("process_group", "rollout/trainer.py:34"),
    }
    assert expected <= starts, expected - starts
    # the entry reaches the Ray part; the rest is listed per module, not dropped
    assert [c["kind"] for c in data["root"]["children"]] == ["ray_cluster", "ray_actor"]
    assert [g["at"] for g in data["unreached"]] == [
        "rollout/background.py:1", "rollout/evaluator.py:1", "rollout/experiment.py:1", "rollout/lifecycle.py:1",
        "rollout/server.py:1", "rollout/trainer.py:1"]
    # every stop is named for every ending (a reason, or unknown with a reason)
    for n, _ in all_nodes(data):
        for e in ENDINGS:
            assert n["endings"][e]["by"], (n["at"], e)


def test_rollout_project_gaps_carry_the_rules_findings(rollout_json):
    data = rollout_json

    def end(at, kind, e, copies=1):
        x = by_at(data, at, kind, copies)["endings"][e]
        return x["state"], x["rule"], x["at"]

    assert end("rollout/driver.py:21", "ray_task", "ctrl_c") == ("killed", "SHD403", "rollout/driver.py:23")
    assert end("rollout/driver.py:21", "ray_task", "exception") == ("killed", "SHD501", "rollout/driver.py:29")
    assert end("rollout/driver.py:21", "ray_task", "normal")[0] == "stopped"
    assert end("rollout/driver.py:20", "ray_actor", "sigterm") == ("killed", "SHD404", "rollout/generator.py:30")
    # generate() runs from the driver's call and from the background loop: its gather is under both
    assert end("rollout/generator.py:38", "gather", "exception", copies=2) == (
        "left_running", "SHD101", "rollout/generator.py:38")
    assert end("rollout/evaluator.py:18", "child_process", "ctrl_c")[:2] == ("left_running", "SHD602")
    assert end("rollout/evaluator.py:18", "child_process", "normal") == ("stopped", None, "rollout/evaluator.py:23")
    assert end("rollout/trainer.py:18", "executor", "ctrl_c")[:2] == ("left_running", "SHD503")
    assert end("rollout/trainer.py:34", "process_group", "sigterm")[:2] == ("left_running", "SHD502")
    assert end("rollout/background.py:65", "thread", "normal")[:2] == ("killed", "SHD407")
    assert end("rollout/server.py:29", "event_loop", "sigterm")[:2] == ("killed", "SHD402")
    assert end("rollout/experiment.py:34", "signal_handler", "sigterm")[:2] == ("left_running", "SHD401")
    assert end("rollout/lifecycle.py:50", "signal_handler", "sigterm")[:2] == ("left_running", "SHD406")
    # a stop found in another method, on the endings that reach it: shutdown() runs on Ctrl+C only
    assert end("rollout/lifecycle.py:27", "thread", "ctrl_c") == ("stopped", None, "rollout/lifecycle.py:52")
    assert end("rollout/lifecycle.py:27", "thread", "normal")[0] == "killed"  # a daemon, not joined
    # every finding of `shutdown-lint check` on the project sits on a node
    codes = sorted(f["code"] for n, _ in all_nodes(data) for f in n["findings"])
    assert data["unattached_findings"] == []
    for code in ("SHD101", "SHD102", "SHD104", "SHD105", "SHD106", "SHD201", "SHD202", "SHD204", "SHD301",
                 "SHD401", "SHD402", "SHD403", "SHD404", "SHD405", "SHD406", "SHD407", "SHD501", "SHD502",
                 "SHD503", "SHD601", "SHD602"):
        assert code in codes, code


def test_json_validates_against_the_schema(demo_json, rollout_json):
    jsonschema = pytest.importorskip("jsonschema")
    with open(SCHEMA) as fh:
        schema = json.load(fh)
    jsonschema.Draft202012Validator.check_schema(schema)
    for data in (demo_json, rollout_json):
        jsonschema.Draft202012Validator(schema).validate(data)
    bad = json.loads(json.dumps(demo_json))
    bad["root"]["endings"]["normal"]["state"] = "maybe"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(bad)


# ------------------------------------------------------------------------------------ outputs

def test_tree_output(capsys):
    code, out, err = run_map(capsys, "-m", "rollout.driver", "--project", ROLLOUT)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "process python -m rollout.driver  rollout/driver.py:1"
    assert any(line.startswith("├── Ray cluster ray.init(num_cpus=2, include_dashboard=False)") for line in lines)
    ray_task = next(i for i, line in enumerate(lines) if "Ray task worker.generate.remote(...)" in line)
    block = "\n".join(lines[ray_task:ray_task + 5])
    assert "Ctrl+C:      KILLED SHD403" in block and "(rollout/driver.py:23)" in block
    assert "exception:   KILLED SHD501" in block
    assert "Not reached from the entry" in out
    assert out.rstrip().splitlines()[-1].endswith("endings unknown")


def test_entry_forms(capsys, tmp_path):
    from shutdown_lint.index.project import current

    before = current()
    # a script path: the project is the pyproject.toml folder above it
    data = as_json(capsys, os.path.join(ROLLOUT, "rollout", "server.py"))
    assert current() is before  # the run's project index is put back (a process that also lints)
    assert data["entry"]["kind"] == "script"
    assert [c["at"] for c in data["root"]["children"]] == ["rollout/server.py:29"]
    assert data["root"]["children"][0]["endings"]["sigterm"]["rule"] == "SHD402"
    # -m of a package with __main__.py
    pkg = tmp_path / "app"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text("import threading\n\nthreading.Thread(target=print, daemon=True).start()\n")
    data = as_json(capsys, "-m", "app", "--project", str(tmp_path))
    assert [(c["kind"], c["at"], c["endings"]["normal"]["state"]) for c in data["root"]["children"]] == [
        ("thread", "app/__main__.py:3", "killed")]


@pytest.mark.parametrize("args, message", [
    (["no_such_script.py"], "map: no such file: no_such_script.py"),
    (["-m", "no_such_module", "--project", DEMO], "map: no module 'no_such_module' under"),
    (["nosuchcommand", "--project", DEMO], "is not a file, and not a console script of"),
    ([], "map: give one entry"),
])
def test_missing_entry_exits_2_with_a_clear_message(args, message, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "shutdown_lint", "map", *args], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, proc
    assert message in proc.stderr and proc.stderr.startswith("shutdown-lint: error: "), proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


# ------------------------------------------------------------------------------------ the picture

class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.cards: list[str] = []
        self.rows: list[str] = []
        self.cells: list[tuple[str, str]] = []
        self.external: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "li" and "node" in (a.get("class") or "").split():
            self.cards.append(a["id"])
        if tag == "g" and a.get("class") == "row":
            self.rows.append(a["data-node"])
        if tag == "rect" and a.get("class") == "cell":
            self.cells.append((a["data-ending"], a["data-state"]))
        for key in ("src", "href"):
            if a.get(key):
                self.external.append(a[key])
        if tag in ("script", "link", "img", "iframe"):
            self.external.append(tag)


def _html(capsys, *args) -> str:
    code, out, err = run_map(capsys, *args, "--format", "html")
    assert code == 0, err
    return out


def test_html_has_every_node_in_the_tree_and_the_svg(capsys, demo_json):
    page = _html(capsys, "demo", "--project", DEMO)
    parser = _Collect()
    parser.feed(page)
    ids = [n["id"] for n, _ in all_nodes(demo_json)]
    assert parser.cards == ids and parser.rows == ids
    assert parser.external == []  # self-contained: no script, stylesheet, image or link
    # the SVG is well-formed XML with one coloured cell per ending of every node but a module group
    svg = ET.fromstring(page[page.index("<svg"):page.index("</svg>") + len("</svg>")])
    ns = {"s": "http://www.w3.org/2000/svg"}
    groups = svg.findall("s:g", ns)
    assert [g.get("data-node") for g in groups] == ids
    for g, (n, _) in zip(groups, all_nodes(demo_json)):
        cells = [(r.get("data-ending"), r.get("data-state")) for r in g.findall("s:rect", ns)]
        expected = [] if n["kind"] == "module" else [(e, n["endings"][e]["state"]) for e in ENDINGS]
        assert cells == expected, n["at"]
        assert n["at"] in "".join(t.text or "" for t in g.findall("s:text", ns))


def test_html_of_the_example_names_the_rules(capsys, rollout_json):
    page = _html(capsys, "-m", "rollout.driver", "--project", ROLLOUT)
    parser = _Collect()
    parser.feed(page)
    assert parser.cards == [n["id"] for n, _ in all_nodes(rollout_json)]
    assert ("ctrl_c", "killed") in parser.cells and ("exception", "left_running") in parser.cells
    for code in ("SHD403", "SHD404", "SHD602", "SHD503", "SHD502", "SHD407", "SHD402"):
        assert f'<span class="rule">{code}</span>' in page


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.slow
@pytest.mark.skipif(_chromium() is None, reason="no chromium here (apt-get install chromium)")
def test_html_screenshot_in_headless_chromium(capsys, tmp_path):
    page = tmp_path / "map.html"
    page.write_text(_html(capsys, "-m", "rollout.driver", "--project", ROLLOUT))
    shot = tmp_path / "map.png"
    proc = subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--window-size=1400,1800", f"--screenshot={shot}", page.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1400, 1800)
    assert len(data) > 50_000  # a rendered page (a blank one compresses to a few kB)
    keep = os.environ.get("SHUTDOWN_LINT_MAP_SCREENSHOT")
    if keep:  # to look at it: SHUTDOWN_LINT_MAP_SCREENSHOT=/tmp/map.png pytest -m slow ...
        shutil.copyfile(shot, keep)


# ------------------------------------------------------------------------------------ --against

AGAINST_PROG = '''\
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor


def spin():
    while True:
        time.sleep(0.05)


def main():
    worker = threading.Thread(target=spin, daemon=True)
    worker.start()
    child = subprocess.Popen(["sleep", "30"], start_new_session=True, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    print("child", child.pid, flush=True)
    pool = ThreadPoolExecutor(max_workers=1)
    pool.submit(sum, [1, 2]).result()
    pool.shutdown()
    make = getattr(threading, "Thread")
    make(target=spin, daemon=True).start()
    if sys.argv[1:] == ["wait"]:
        print("ready", flush=True)
        time.sleep(30)


if __name__ == "__main__":
    main()
'''


def _kill(pid: int) -> None:
    import signal

    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@pytest.mark.parametrize("ending", ["normal", "sigterm"])
def test_against_a_real_exit_report(ending, tmp_path, capsys):
    """A real run under the exit report (return, or SIGTERM while it sleeps), then the map of the
    same program checked against it: the daemon thread and the child were predicted and seen; the
    thread started through getattr (no node) is a leftover the map did not predict."""
    import signal
    import time

    (tmp_path / "prog.py").write_text(AGAINST_PROG)
    report = tmp_path / "report.json"
    cmd = [sys.executable, "-m", "runtime_guard", "--exit-report", "--json", str(report), "prog.py"]
    child_pid = None
    try:
        with PipedChild(cmd + (["wait"] if ending == "sigterm" else []), cwd=tmp_path) as proc:
            line = proc.readline()
            child_pid = int(line.split()[1])
            if ending == "sigterm":
                proc.expect("ready")
                time.sleep(0.3)
                proc.send_signal(signal.SIGTERM)
            status, out, err = proc.finish(60)
            assert status == (0 if ending == "normal" else -signal.SIGTERM), err
    finally:
        if child_pid:
            _kill(child_pid)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        data = as_json(capsys, "prog.py", "--against", str(report))
    finally:
        os.chdir(cwd)
    against = data["against"]
    assert against["ending"] == ending
    assert [(x["kind"], x["at"], x["predicted"]) for x in against["happened"]] == [
        ("thread", "prog.py:15", "killed"), ("child", "prog.py:16", "left_running")]
    assert [(x["kind"], x["at"], x["node"]) for x in against["not_predicted"]] == [("thread", "prog.py:23", None)]
    assert against["not_predicted"][0]["why"].startswith("no node")
    # SIGTERM kills whatever is alive when it lands: the pool was shut down before the sleep, so the
    # map's "killed on SIGTERM" for it is listed as predicted but not seen
    assert [(x["kind"], x["at"], x["predicted"]) for x in against["predicted_not_seen"]] == (
        [] if ending == "normal" else [("executor", "prog.py:19", "killed")])
    thread = by_at(data, "prog.py:14", "thread")
    assert thread["details"]["started_at"] == ["prog.py:15"] and thread["details"]["exit_report"]["left"] is True
    jsonschema = pytest.importorskip("jsonschema")
    with open(SCHEMA) as fh:
        jsonschema.Draft202012Validator(json.load(fh)).validate(data)
    # the tree and the page say the same
    code, out, _ = run_map(capsys, os.path.join(str(tmp_path), "prog.py"), "--against", str(report))
    assert code == 0 and "left at exit, not predicted (rule gaps): 1" in out
    page = _html(capsys, os.path.join(str(tmp_path), "prog.py"), "--against", str(report))
    assert 'id="not-predicted"' in page and "prog.py:23" in page


def test_against_a_file_that_is_not_a_report(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"items": 3}')
    proc = subprocess.run([sys.executable, "-m", "shutdown_lint", "map", "-m", "demo.cli", "--project", DEMO,
                           "--against", str(bad)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "is not an exit report" in proc.stderr and "Traceback" not in proc.stderr


# ------------------------------------------------------------------------------------ more starts, bad input

OTHER_STARTS = '''\
import asyncio
import atexit
import multiprocessing
import signal

from runtime_guard import LoopThread


async def work():
    await asyncio.sleep(1)


def child_main():
    asyncio.run(work())


def main():
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(work())
    finally:
        loop.close()
    proc = multiprocessing.Process(target=child_main, daemon=True)
    proc.start()
    LoopThread()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    atexit.register(print, "bye")
    with multiprocessing.Pool(2) as pool:
        pool.map(abs, [1, 2])


main()
'''


def test_other_starts(tmp_path, capsys):
    (tmp_path / "prog.py").write_text(OTHER_STARTS)
    data = as_json(capsys, str(tmp_path / "prog.py"))
    got = {(n["kind"], n["at"]): n for n, _ in all_nodes(data)}
    loop = got[("event_loop", "prog.py:18")]
    assert loop["endings"]["normal"] == {"state": "stopped", "by": "stopped by `loop.close()`", "at": "prog.py:22",
                                         "rule": None}
    assert loop["details"]["run_at"] == ["prog.py:20"]
    child = got[("child_process", "prog.py:23")]
    assert child["details"]["started_at"] == ["prog.py:24"]
    assert child["endings"]["normal"]["by"] == "daemon process: terminated by multiprocessing's exit hook"
    # the child's own loop: its endings are the child's, not the parent's
    assert [c["endings"]["ctrl_c"]["state"] for c in child["children"]] == ["unknown"]
    # runtime_guard.LoopThread stops itself at exit (its exit hook), and on SIGTERM (its handler)
    assert got[("thread", "prog.py:25")]["endings"]["normal"]["by"].startswith("runtime_guard.LoopThread's exit hook")
    # SIGINT ignored: Ctrl+C ends nothing
    assert got[("signal_handler", "prog.py:26")]["endings"]["ctrl_c"]["state"] == "left_running"
    assert data["root"]["endings"]["ctrl_c"]["state"] == "left_running"
    assert loop["endings"]["ctrl_c"] == {"state": "left_running", "by": "SIGINT is ignored: the program goes on",
                                         "at": "prog.py:26", "rule": None}
    assert got[("atexit_hook", "prog.py:27")]["endings"]["sigterm"]["state"] == "skipped"
    pool = got[("executor", "prog.py:28")]
    assert pool["endings"]["exception"]["by"] == "the with block's exit: Pool.terminate() (stops its workers at once)"


def test_unreadable_files_are_notes_and_a_broken_entry_is_an_error(tmp_path, capsys):
    (tmp_path / "ok.py").write_text("import helper\nhelper.go()\n")
    (tmp_path / "helper.py").write_text("def go(\n")
    (tmp_path / "deep.py").write_text("def f():\n    x = " + "+".join(["1"] * 20000) + "\n")
    (tmp_path / "latin.py").write_bytes(b"\xff\xfe not utf-8\n")
    code, out, err = run_map(capsys, str(tmp_path / "ok.py"))
    assert code == 0, err
    notes = [line for line in out.splitlines() if line.startswith("note: ")]
    assert {n.split(":")[1].strip() for n in notes} == {"deep.py", "helper.py", "latin.py"}, notes
    proc = subprocess.run([sys.executable, "-m", "shutdown_lint", "map", "helper.py"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2 and "map: cannot read the entry 'helper.py'" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_fixed_twin_closes_the_gaps(capsys, rollout_json):
    """``shutdown-lint --fix --unsafe-fixes`` made tests/data/examples_fixed/rollout_project: its map
    shows the runtime_guard helpers the fixes inserted stopping what the rules said was left."""
    fixed_root = os.path.join(REPO, "tests", "data", "examples_fixed", "rollout_project")
    fixed = as_json(capsys, "-m", "rollout.driver", "--project", fixed_root)

    def end(at, kind, e):
        x = by_at(fixed, at, kind, copies=None)["endings"][e]
        return x["state"], x["at"]

    assert end("rollout/driver.py:22", "ray_task", "ctrl_c") == ("stopped", "rollout/driver.py:24")  # interruptible_get
    assert end("rollout/driver.py:22", "ray_task", "exception") == ("stopped", "rollout/driver.py:30")  # cancel_and_wait
    assert end("rollout/driver.py:21", "ray_actor", "sigterm") == ("stopped", "rollout/generator.py:33")  # setup_worker
    assert end("rollout/evaluator.py:19", "child_process", "ctrl_c") == ("stopped", "rollout/evaluator.py:28")
    for e in ENDINGS:
        assert end("rollout/background.py:66", "thread", e)[0] == "stopped"  # LoopThread
    assert end("rollout/server.py:31", "event_loop", "sigterm")[0] == "stopped"  # sigterm_as_keyboard_interrupt
    assert end("rollout/trainer.py:36", "process_group", "sigterm") == ("stopped", "rollout/trainer.py:37")

    def gaps(data):
        return sum(1 for n, _ in all_nodes(data) for e in ENDINGS
                   if n["endings"][e]["state"] in ("killed", "left_running", "skipped"))

    assert gaps(fixed) < gaps(rollout_json)
    rules = {n["endings"][e]["rule"] for n, _ in all_nodes(fixed) for e in ENDINGS} - {None}
    assert rules == set(), rules  # no rule reports a gap on an ending any more (SHD301/SHD601 findings remain)
