"""Map a blocking call seen in a stalled loop to the shutdown-lint rule that flags it and its fix.

Kept as data here (not imported from shutdown_lint) so the runtime guard stays dependency free.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Optional, Pattern, Tuple

__all__ = ["Hint", "HINTS", "match_hint"]

RULE = "SHD301"
RULE_NAME = "blocking-call-in-coroutine"


@dataclass(frozen=True)
class Hint:
    call: str  # what the user wrote, e.g. "torch.save"
    rule: str
    rule_name: str
    fix: str
    source: Pattern[str]  # matched against the blocking source line
    modules: Tuple[str, ...] = ()  # module prefixes of frames inside the call

    def text(self) -> str:
        return f"{self.rule} {self.rule_name}: `{self.call}` blocks the event loop; fix: {self.fix}"


def _h(call: str, pattern: str, fix: str, modules: Tuple[str, ...] = ()) -> Hint:
    return Hint(call, RULE, RULE_NAME, fix, re.compile(pattern), modules)


_TO_THREAD = "`await asyncio.to_thread({fn}, *args)`"

HINTS: Tuple[Hint, ...] = (
    _h("time.sleep", r"\btime\.sleep\s*\(", "`await asyncio.sleep(...)`"),
    _h("torch.save", r"\btorch\.save\s*\(", _TO_THREAD.format(fn="torch.save"), ("torch.serialization",)),
    _h("torch.load", r"\btorch\.load\s*\(", _TO_THREAD.format(fn="torch.load")),
    _h("save_pretrained", r"\.save_pretrained\s*\(", _TO_THREAD.format(fn="model.save_pretrained")),
    _h("save_checkpoint", r"\bsave_checkpoint\s*\(", _TO_THREAD.format(fn="save_checkpoint")),
    _h("ray.get", r"\bray\.get\s*\(", "`await ref` / `await asyncio.gather(*refs)` instead of `ray.get`",
       ("ray._private.worker",)),
    _h("ray.wait", r"\bray\.wait\s*\(", "`await asyncio.wait([ref.future() ...])` or `await ref`"),
    _h("requests", r"\brequests\.(get|post|put|patch|delete|head|request)\s*\(",
       "an async client (httpx.AsyncClient / aiohttp) or " + _TO_THREAD.format(fn="requests.get"),
       ("requests.", "urllib3.")),
    _h("urllib.request.urlopen", r"\burlopen\s*\(", _TO_THREAD.format(fn="urlopen"), ("urllib.request",)),
    _h("subprocess", r"\bsubprocess\.(run|call|check_call|check_output)\s*\(|\.(communicate|wait)\s*\(",
       "`await asyncio.create_subprocess_exec(...)` (or " + _TO_THREAD.format(fn="subprocess.run") + ")",
       ("subprocess",)),
    _h("json.dump", r"\bjson\.(dump|load)\s*\(", _TO_THREAD.format(fn="json.dump")),
    _h("pickle.dump", r"\bpickle\.(dump|load)\s*\(", _TO_THREAD.format(fn="pickle.dump")),
    _h("open", r"(?<![\w.])open\s*\(", _TO_THREAD.format(fn="write_file") + " around the file I/O"),
)


def match_hint(source_line: str, inner_modules: Iterable[str] = ()) -> Optional[Hint]:
    """Hint for the blocking call: first by the user's source line, then by modules of inner frames."""
    line = source_line or ""
    for hint in HINTS:
        if hint.source.search(line):
            return hint
    mods = [m for m in inner_modules if m]
    for hint in HINTS:
        if hint.modules and any(m == p or m.startswith(p if p.endswith(".") else p + ".") or m == p.rstrip(".")
                                for m in mods for p in hint.modules):
            return hint
    return None
