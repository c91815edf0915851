"""An async client for remote code-execution sandboxes. This module is clean."""

from __future__ import annotations

import asyncio
import os
import tempfile
import uuid


def _touch(path: str) -> None:
    with open(path, "w"):
        pass


class Sandbox:
    """A leased sandbox. Here a lease is a file; in production, a cloud container."""

    def __init__(self, root: str | None = None) -> None:
        self.root = root or tempfile.gettempdir()
        self.lease = os.path.join(self.root, f"sandbox-{uuid.uuid4().hex}.lease")

    async def __aenter__(self) -> "Sandbox":
        await asyncio.to_thread(_touch, self.lease)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.sleep(0.05)  # the provider's DELETE call
        await asyncio.to_thread(os.remove, self.lease)

    async def run(self, command: str) -> str:
        await asyncio.sleep(0.01)
        return f"ran {command}"
