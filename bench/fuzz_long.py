"""The long fuzzing run (CI runs a bounded version in tests/robustness/).

    python bench/fuzz_long.py --examples 5000 [--grammar 2000] [--node 1000]

Prints programs tried, crashes, unparsable fixes, non-idempotent fixes, lost comments,
findings left and findings hidden by the pre-filter, and writes failing programs to
--out (default /tmp/shutdown-lint-fuzz/).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))

import hypothesmith  # noqa: E402
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402

from robustness.programs import check, hazard_program, is_valid_python  # noqa: E402

KINDS = ("crashes", "analysis_errors", "unparsable", "not_idempotent", "lost_comments", "findings_left",
         "prefilter_lost")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--examples", type=int, default=2000, help="generated hazard programs")
    p.add_argument("--grammar", type=int, default=500, help="hypothesmith.from_grammar() programs")
    p.add_argument("--node", type=int, default=300, help="hypothesmith.from_node() programs")
    p.add_argument("--out", default="/tmp/shutdown-lint-fuzz")
    args = p.parse_args()
    warnings.simplefilter("ignore")
    os.makedirs(args.out, exist_ok=True)
    totals: Counter = Counter()

    def record(source: str, data: bytes, expect_parse: bool = True) -> None:
        rep = check(data, expect_parse=expect_parse)
        totals[f"{source} programs"] += 1
        totals["findings"] += rep.findings
        totals["fixes applied"] += rep.fixes_applied
        totals["fixes skipped"] += rep.fixes_skipped
        for kind in KINDS:
            if getattr(rep, kind):
                totals[kind] += 1
                n = totals[kind]
                with open(os.path.join(args.out, f"{kind}-{n}.py"), "wb") as fh:
                    fh.write(data)
                with open(os.path.join(args.out, f"{kind}-{n}.txt"), "w") as fh:
                    fh.write("\n\n".join(getattr(rep, kind)))

    def run(n, strategy, source, convert):
        if n <= 0:
            return

        @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck),
                  phases=[Phase.generate])
        @given(strategy)
        def body(x):
            data, expect = convert(x)
            record(source, data, expect)

        body()

    t0 = time.monotonic()
    run(args.examples, hazard_program(), "hazard", lambda d: (d, True))
    run(args.grammar, hypothesmith.from_grammar(), "grammar",
        lambda s: (s.encode(), is_valid_python(s.encode())))
    run(args.node, hypothesmith.from_node(), "node", lambda s: (s.encode(), True))
    elapsed = time.monotonic() - t0
    tried = sum(v for k, v in totals.items() if k.endswith("programs"))
    print(f"programs tried: {tried} ({', '.join(f'{k}: {v}' for k, v in totals.items() if k.endswith('programs'))})")
    for kind in KINDS:
        print(f"{kind.replace('_', ' ')}: {totals[kind]}")
    print(f"findings: {totals['findings']}, fixes applied: {totals['fixes applied']}, "
          f"fixes skipped (reported): {totals['fixes skipped']}")
    print(f"time: {elapsed:.0f} s; failing programs in {args.out}")
    return 1 if any(totals[k] for k in KINDS) else 0


if __name__ == "__main__":
    sys.exit(main())
