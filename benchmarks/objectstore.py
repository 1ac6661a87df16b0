"""The ``s3 read`` rows: the sharded files in a local S3 server, read by tfr-gen's ``Dataset`` and,
as the baseline, their bytes alone read by s3fs.

The server is moto's S3 in server mode, started on 127.0.0.1 (a free port) by the first of these
rows to run and stopped at the end of the run (:func:`stop_server`), in a process of its own so it
does not share this one's GIL. Each workload's shards are uploaded once, untimed, on the first
(warm-up) round. Everything stays on this machine: the rows measure the client's side, fetching
and decoding, against the same server's raw read rate.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sized
from typing import Any, Protocol, cast

__all__ = ["S3_DATASET", "S3_RAW", "missing", "s3_dataset", "s3_raw", "stop_server"]

S3_DATASET = "tfr-gen dataset(batch_size=1024) in S3 (4 objects, local moto server)"
S3_RAW = "s3fs cat of the same 4 objects (raw bytes)"

_KEY = "benchmark"


class _Dataset(Protocol):
    def dataset(
        self, files: list[str], *, batch_size: int, compression: None, storage_options: Any
    ) -> Iterable[Sized]: ...


class _Server:
    """moto's S3 server on a free loopback port, and an s3fs filesystem that reaches it."""

    def __init__(self) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        command = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)]
        self.process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                raise SystemExit(f"moto's S3 server ended with status {self.process.returncode}")
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise SystemExit("moto's S3 server did not start within 60 s") from None
                time.sleep(0.1)
        self.options = {
            "key": _KEY,
            "secret": _KEY,
            "endpoint_url": f"http://127.0.0.1:{self.port}",
        }
        import s3fs

        self.fs = s3fs.S3FileSystem(**self.options)
        self.uploaded: dict[str, list[str]] = {}

    def shards(self, workload: str, local: list[str]) -> list[str]:
        """The URLs of the local ``shards`` of ``workload`` in the server (uploaded once)."""
        if workload not in self.uploaded:
            bucket = f"bench-{workload.lower().replace('_', '-')}"
            if not self.fs.exists(bucket):
                self.fs.mkdir(bucket)
            urls = [f"s3://{bucket}/{os.path.basename(path)}" for path in local]
            for path, url in zip(local, urls, strict=True):
                self.fs.put_file(path, url)
            self.uploaded[workload] = urls
        return self.uploaded[workload]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


_server: _Server | None = None


def _running() -> _Server:
    global _server
    if _server is None:
        _server = _Server()
    return _server


def stop_server() -> None:
    """Stops the S3 server if a row started it."""
    global _server
    if _server is not None:
        _server.stop()
        _server = None


def missing() -> str | None:
    """Why the rows cannot run here (s3fs or moto's server is not installed), else ``None``."""
    for module, extra in (("s3fs", "s3"), ("moto", "test")):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed; install the '{extra}' extra"
    if importlib.util.find_spec("flask") is None:
        return "moto's server mode is not installed; pip install 'moto[server]'"
    return None


def s3_dataset(
    workload: str, cls: Any, shards: Callable[[], list[str]], count: int, batch: int
) -> Callable[[], int]:
    """The records of the uploaded shards through ``Record.dataset`` (batches of ``batch``; the
    dataset is made once, on the first round, as the local dataset rows make theirs before timing)."""
    made: list[Iterable[Sized]] = []

    def run() -> int:
        if not made:
            server = _running()
            urls = server.shards(workload, shards())
            made.append(
                cast("_Dataset", cls).dataset(
                    urls, batch_size=batch, compression=None, storage_options=server.options
                )
            )
        read = sum(len(b) for b in made[0])
        if read != count:
            raise SystemExit(f"{workload}: the dataset in S3 gave {read} records of {count}")
        return read

    return run


def s3_raw(workload: str, shards: Callable[[], list[str]], size: int) -> Callable[[], None]:
    """The bytes of the uploaded shards, read whole by s3fs, one object after the other."""

    def run() -> None:
        server = _running()
        got = sum(len(server.fs.cat_file(url)) for url in server.shards(workload, shards()))
        if got != size:
            raise SystemExit(f"{workload}: s3fs read {got} bytes of {size}")

    return run
