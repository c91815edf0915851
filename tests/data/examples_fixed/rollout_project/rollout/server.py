"""A status server that reports rollout progress; runs as its own process."""

from __future__ import annotations

import asyncio
import os
import tempfile
import runtime_guard


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.readline()
    writer.write(b"OK rollout running\n")
    await writer.drain()
    writer.close()


async def serve(port: int) -> None:
    marker = os.path.join(tempfile.gettempdir(), f"status-server-{os.getpid()}.pid")
    open(marker, "w").close()
    server = await asyncio.start_server(handle, "127.0.0.1", port)
    try:
        async with server:
            await server.serve_forever()
    finally:
        await asyncio.to_thread(os.remove, marker)


def main() -> None:
    runtime_guard.sigterm_as_keyboard_interrupt()
    asyncio.run(serve(int(os.environ.get("STATUS_PORT", "8765"))))


if __name__ == "__main__":
    main()
