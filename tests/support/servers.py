"""Storage servers on 127.0.0.1 for the tests: an S3 server (moto's server mode), a GCS emulator
(gcp-storage-emulator) and an HTTP server of a directory that answers Range requests.

The S3 and GCS servers run in child processes on free loopback ports (they never share the GIL
with the readers under test); the HTTP server runs in a thread of the test process and records
every request it answers (:class:`HttpFiles`), so a test can check how a file was read.
"""

from __future__ import annotations

import http.server
import os
import re
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.processes import PYTHON

ACCESS_KEY = "testing"
"""The S3 credentials the tests use (moto accepts any)."""

GCS_NO_GRPC = {"GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false"}
"""gcsfs asks each bucket's type of the gRPC storage-control API, which the emulator does not
serve (a 60-second timeout per bucket); this turns that off, in the tests and their children."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Server:
    """A server process listening on ``port`` of 127.0.0.1."""

    process: subprocess.Popen[bytes]
    port: int
    drain: threading.Thread

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:  # pragma: no cover - a server that ignores SIGTERM
            self.process.kill()
            self.process.wait()
        self.drain.join()
        if self.process.stderr is not None:
            self.process.stderr.close()


def start_server(arguments: list[str], port: int, name: str, timeout: float = 60.0) -> Server:
    """Runs ``python arguments`` (a server that listens on ``port``) and waits until it accepts
    connections; ``RuntimeError`` with its output if it ends or does not listen in time."""
    process = subprocess.Popen(
        [*PYTHON, *arguments],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, **GCS_NO_GRPC},
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            assert process.stderr is not None
            error = process.stderr.read().decode(errors="replace")
            process.stderr.close()
            raise RuntimeError(f"{name} ended with status {process.returncode}: {error[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
        except OSError:
            time.sleep(0.1)
            continue
        # The server logs every request: drain its output so it never blocks on a full pipe.
        assert process.stderr is not None
        drain = threading.Thread(target=process.stderr.read, daemon=True)
        drain.start()
        return Server(process, port, drain)
    process.kill()
    process.wait()
    raise RuntimeError(f"{name} did not listen on 127.0.0.1:{port} within {timeout:.0f} s")


def start_moto() -> Server:
    """moto's S3 (and other AWS services) server on a free port."""
    port = free_port()
    return start_server(["-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)], port, "moto")


def start_gcs_emulator() -> Server:
    """gcp-storage-emulator, in memory, on a free port."""
    port = free_port()
    main = "import sys; from gcp_storage_emulator.__main__ import main; sys.exit(main())"
    arguments = ["-c", main, "start", "--host", "127.0.0.1", "--port", str(port), "--in-memory"]
    return start_server(arguments, port, "gcp-storage-emulator")


@dataclass
class ObjectStore:
    """A store on a loopback server: fsspec's ``protocol``, the ``storage_options`` that reach it,
    and the ``environment`` that does the same for a child process (fsspec reads
    ``FSSPEC_<PROTOCOL>_<OPTION>`` variables)."""

    protocol: str
    storage_options: dict[str, Any]
    environment: dict[str, str]
    fs: Any = field(repr=False)

    def new_bucket(self) -> str:
        """The URL of a new, empty bucket (``s3://tfr-...``)."""
        name = f"tfr-{uuid.uuid4().hex[:16]}"
        self.fs.mkdir(name)
        return f"{self.protocol}://{name}"


def s3_store(server: Server) -> ObjectStore:
    """The S3 store of a moto server, through s3fs."""
    import s3fs

    options = {"key": ACCESS_KEY, "secret": ACCESS_KEY, "endpoint_url": server.endpoint}
    environment = {
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": ACCESS_KEY,
        "FSSPEC_S3_ENDPOINT_URL": server.endpoint,
    }
    return ObjectStore("s3", options, environment, s3fs.S3FileSystem(**options))


def gcs_store(server: Server) -> ObjectStore:
    """The GCS store of a gcp-storage-emulator server, through gcsfs."""
    os.environ.update(GCS_NO_GRPC)  # read when gcsfs is first imported
    import gcsfs

    options = {"endpoint_url": server.endpoint, "token": "anon", "project": "tfr-gen"}
    environment = {
        **GCS_NO_GRPC,
        "FSSPEC_GCS_ENDPOINT_URL": server.endpoint,
        "FSSPEC_GCS_TOKEN": "anon",
        "FSSPEC_GCS_PROJECT": "tfr-gen",
    }
    return ObjectStore("gs", options, environment, gcsfs.GCSFileSystem(**options))


@dataclass(frozen=True)
class Request:
    """One request an :class:`HttpFiles` server answered."""

    method: str
    path: str
    range: str | None
    """The ``Range`` header, if any."""
    sent: int
    """The bytes of the body sent."""


_RANGE = re.compile(r"bytes=(\d*)-(\d*)$")


class _RangeHandler(http.server.SimpleHTTPRequestHandler):
    """Files of a directory with single-range ``Range`` requests (206 or 416) and HEAD."""

    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass

    def send_head(self) -> Any:
        path = Path(self.translate_path(self.path))
        if not path.is_file():
            self.send_error(404, "File not found")
            return None
        size = path.stat().st_size
        start, end = 0, size
        wanted = self.headers.get("Range")
        status = 200
        if wanted is not None:
            match = _RANGE.match(wanted.strip())
            if match is None or match.group(1) == match.group(2) == "":
                self.send_error(416, "Only one byte range is served")
                return None
            first, last = match.group(1), match.group(2)
            if first:
                start = int(first)
                end = min(size, int(last) + 1) if last else size
            else:
                start = max(0, size - int(last))
            if start >= size:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            status = 206
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(end - start))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
        self.end_headers()
        self._span = (path, start, end)
        return path.open("rb")

    def do_GET(self) -> None:
        file = self.send_head()
        data = b""
        if file is not None:
            with file:
                path, start, end = self._span
                file.seek(start)
                data = file.read(end - start)
        # Recorded before the body is sent: a client that has the body finds its request listed.
        self.server.record(Request("GET", self.path, self.headers.get("Range"), len(data)))
        self.wfile.write(data)

    def do_HEAD(self) -> None:
        file = self.send_head()
        if file is not None:
            file.close()
        self.server.record(Request("HEAD", self.path, self.headers.get("Range"), 0))


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, directory: Path) -> None:
        self.requests: list[Request] = []
        self._lock = threading.Lock()

        def handler(*args: Any) -> _RangeHandler:
            return _RangeHandler(*args, directory=str(directory))

        super().__init__(("127.0.0.1", 0), handler)

    def record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)


@dataclass
class HttpFiles:
    """An HTTP server of ``directory`` on 127.0.0.1 (``url`` is its root, ending in ``/``) and
    the requests it answered (``requests``; :meth:`clear` forgets them)."""

    directory: Path
    url: str
    _server: _Server = field(repr=False)

    @property
    def requests(self) -> list[Request]:
        with self._server._lock:
            return list(self._server.requests)

    def clear(self) -> None:
        with self._server._lock:
            self._server.requests.clear()


@contextmanager
def serve_directory(directory: Path) -> Iterator[HttpFiles]:
    """Serves ``directory`` over HTTP on a free loopback port while the block runs."""
    server = _Server(directory)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield HttpFiles(directory, f"http://127.0.0.1:{server.server_address[1]}/", server)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
