"""``shutdown-lint server``: the language server entry point.

The server itself (``shutdown_lint.lsp``) needs pygls, which is in the ``lsp`` extra: the linter's
command line does not pay for it. Without it this prints a one-line install hint and exits 2.
"""

from __future__ import annotations

import sys
from typing import Sequence

USAGE = """usage: shutdown-lint server

Run the shutdown-lint language server over stdin/stdout (the Language Server Protocol).
Editors start it themselves; see docs/editors.md. Diagnostics use the same rules, configuration
(nearest pyproject.toml / shutdown-lint.toml) and cache as the command line.
"""


def main(argv: Sequence[str]) -> int:
    if list(argv) in (["-h"], ["--help"]):
        sys.stdout.write(USAGE)
        return 0
    if argv:
        print(f"shutdown-lint server: error: unexpected argument {argv[0]!r} (the server speaks LSP over stdio)",
              file=sys.stderr)
        return 2
    try:
        import lsprotocol  # noqa: F401
        import pygls  # noqa: F401
    except ImportError:
        print("shutdown-lint server: error: the language server needs pygls: pip install 'shutdown-lint[lsp]'",
              file=sys.stderr)
        return 2
    from .lsp import serve

    serve()
    return 0
