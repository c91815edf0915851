"""Where the result cache lives and what keys its indexes: shared by the command line and the
language server (neither imports the other's private helpers).

- ``cache_dir_for``: ``.shutdown_lint_cache/`` in the project root when there is one (a
  configuration file, a ``pyproject.toml`` or a git work tree), else a directory of the user's
  cache (``$XDG_CACHE_HOME/shutdown-lint/`` or ``~/.cache/shutdown-lint/``), one per linted
  directory. It is never under a path given to lint: the root is a directory that exists.
- ``fingerprint``: the settings, per-file ignores, rule and engine code, and the project
  index's switch (see ``cache.Cache``).

Kept light: the warm run imports it (no hashlib, no json).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

CACHE_DIR_NAME = ".shutdown_lint_cache"


def user_cache_home() -> Optional[str]:
    """``$XDG_CACHE_HOME/shutdown-lint``, else ``~/.cache/shutdown-lint``; None without a home."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # the XDG spec: a relative value is ignored
        home = os.path.expanduser("~")
        if home == "~" or not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return os.path.join(base, "shutdown-lint")


def cache_dir_for(root: str, project: bool) -> Optional[str]:
    """The cache directory for a run whose root is ``root`` (an existing directory);
    ``project``: the root was found by a configuration file or a project marker."""
    root = os.path.abspath(root)
    if project:
        return os.path.join(root, CACHE_DIR_NAME)
    home = user_cache_home()
    if home is None:
        return None
    import zlib

    name = os.path.basename(root) or "root"
    return os.path.join(home, f"{name}-{zlib.crc32(root.encode('utf-8', 'surrogateescape')):08x}")


def fingerprint(settings, code_key: Optional[str] = None) -> str:  # type: ignore[no-untyped-def]
    """What keys a cache index: the settings, the per-file ignores, the rule and engine code
    (``config.code_key``, computed here unless the caller has it) and the project index's switch."""
    from .index.hooks import enabled

    if code_key is None:
        from .config import code_key as compute

        code_key = compute()
    # per-file ignores change findings too; so does editing a rule
    return f"{settings.fingerprint()}|{settings.per_file_ignores!r}|{code_key}|index={enabled()}"
