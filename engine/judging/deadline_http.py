"""An HTTP client whose requests have a whole-request deadline, not only a per-read timeout.

The ``openai`` client's timeout bounds each network read: a server that trickles a byte every second
keeps a request alive for as long as it likes. Here every socket operation of a request made inside
``deadline(seconds)`` gets at most the time left until that deadline, and none once it has passed (a
read timeout, which the client reports as a timed-out request), so ``--timeout`` bounds the request.
The deadline lives in a thread-local, so the worker threads of one client each keep their own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

try:  # the openai package ships its HTTP stack under these names in this environment
    import httpcore2 as httpcore
    import httpx2 as httpx
except ImportError:  # pragma: no cover - the upstream names
    import httpcore  # type: ignore[no-redef]
    import httpx  # type: ignore[no-redef]

_local = threading.local()


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Requests made in this block (by this thread) must finish within ``seconds``."""
    _local.at = time.monotonic() + seconds
    try:
        yield
    finally:
        _local.at = None


def _left(timeout: float | None) -> float | None:
    at = getattr(_local, "at", None)
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise httpcore.ReadTimeout("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner):
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        return self._inner.write(buffer, _left(timeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None):
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, _left(timeout)))

    def get_extra_info(self, info: str):
        return self._inner.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self, inner):
        self._inner = inner

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        return _Stream(self._inner.connect_tcp(host, port, _left(timeout), local_address, socket_options))

    def connect_unix_socket(self, path, timeout=None, socket_options=None):  # pragma: no cover
        return _Stream(self._inner.connect_unix_socket(path, _left(timeout), socket_options))

    def sleep(self, seconds: float) -> None:  # pragma: no cover
        self._inner.sleep(seconds)


def http_client(timeout_s: float):
    """An ``httpx`` client (for ``OpenAI(http_client=...)``) whose sockets obey ``deadline``."""
    transport = httpx.HTTPTransport()
    pool = getattr(transport, "_pool", None)
    if pool is None or not hasattr(pool, "_network_backend"):  # pragma: no cover - a changed httpx
        raise RuntimeError("This httpx version does not let a deadline be set on its connections.")
    pool._network_backend = _Backend(pool._network_backend)
    return httpx.Client(transport=transport, timeout=timeout_s, follow_redirects=True)
