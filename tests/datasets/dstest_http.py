"""A throw-away HTTP server on 127.0.0.1 for the dataset download tests."""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
from pathlib import Path


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output clean
        pass


@contextlib.contextmanager
def serve(directory: Path, handler=QuietHandler):
    """Serve ``directory`` on 127.0.0.1 (ephemeral port) in a thread; yields the base URL."""
    factory = functools.partial(handler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), factory)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
