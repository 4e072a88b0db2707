"""A stub search server for testing `simkit loadgen`: HTTP/1.1 keep-alive on a loopback port,
answering POST .../points/search after a delay the test chooses, and recording when it received
and answered each search, so that the test knows the true service times.

Knobs (all optional):
  delay(i)   seconds search i (in order of arrival, 0 = loadgen's probe) is held before its answer
  status(i)  its HTTP status
  stall      (i, seconds): when search i arrives the server freezes for that long: every search
             received until then is answered only when the freeze ends
  hang_after searches after this many are never answered (the connection stays open)
GET /collections lists `collections` (default ["c"]); the paths searched are kept in `paths`.
GET /metrics serves a simkit_batch_size histogram that grows with every answered search
(batch sizes 1, 2, 3, 1, 2, 3, ...), so loadgen's report of it can be checked.
"""
from __future__ import annotations

import asyncio
import threading
import time
from typing import Callable


class StubServer:
    def __init__(self, delay: Callable[[int], float] = lambda i: 0.0, status: Callable[[int], int] = lambda i: 200,
                 stall: tuple[int, float] | None = None, hang_after: int | None = None,
                 collections: tuple[str, ...] = ("c",)) -> None:
        self.delay, self.status, self.stall, self.hang_after = delay, status, stall, hang_after
        self.collections = collections
        self.paths: set[str] = set()
        self.records: list[tuple[int, float, float, int]] = []  # (index, received, answered, status)
        self.batch_sizes: list[int] = []
        self._count = 0
        self._frozen_until = 0.0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the stub server did not start")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def __enter__(self) -> "StubServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._client, "127.0.0.1", 0, backlog=2048))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        # Stopped: end the connections' coroutines while the loop can still run their cleanup.
        server.close()
        tasks = asyncio.all_tasks(self._loop)
        for task in tasks:
            task.cancel()
        self._loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        self._loop.close()

    def _metrics(self) -> bytes:
        sizes = list(self.batch_sizes)
        lines = ["# TYPE simkit_batch_size histogram"]
        for le in (1, 2, 4, 8):
            lines.append(f'simkit_batch_size_bucket{{le="{le}"}} {sum(1 for s in sizes if s <= le)}')
        lines.append(f'simkit_batch_size_bucket{{le="+Inf"}} {len(sizes)}')
        lines.append(f"simkit_batch_size_sum {sum(sizes)}")
        lines.append(f"simkit_batch_size_count {len(sizes)}")
        return ("\n".join(lines) + "\n").encode()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                received = time.monotonic()
                lines = head.decode("latin-1").split("\r\n")
                method, target = lines[0].split(" ")[:2]
                length = 0
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                if length:
                    await reader.readexactly(length)
                if method == "GET" and target.endswith("/metrics"):
                    body, status = self._metrics(), 200
                elif method == "GET" and target.endswith("/collections"):
                    names = ",".join(f'{{"name":"{n}"}}' for n in self.collections)
                    body, status = f'{{"result":{{"collections":[{names}]}},"status":"ok"}}'.encode(), 200
                else:
                    self.paths.add(target)
                    i = self._count
                    self._count += 1
                    if self.hang_after is not None and i > self.hang_after:
                        await asyncio.sleep(3600)
                    if self.stall is not None and i == self.stall[0]:
                        self._frozen_until = received + self.stall[1]
                    wait = max(0.0, self._frozen_until - received) + self.delay(i)
                    if wait > 0:
                        await asyncio.sleep(wait)
                    status = self.status(i)
                    body = b'{"result":[],"status":"ok","time":0}'
                    self.batch_sizes.append(1 + len(self.batch_sizes) % 3)
                reason = {200: "OK", 429: "Too Many Requests", 503: "Service Unavailable", 504: "Gateway Timeout"}.get(status, "Status")
                writer.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
                             f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
                await writer.drain()
                if method == "POST":
                    self.records.append((i, received, time.monotonic(), status))
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()
