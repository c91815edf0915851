import asyncio


async def chunks(reader):
    while True:
        try:
            yield await reader.read(1024)
        except asyncio.CancelledError:
            yield b""  # expect: SHD104
            raise
