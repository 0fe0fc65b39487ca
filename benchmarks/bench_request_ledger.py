"""What the request ledger costs a live run: one committed insert per HTTP request.

Usage::

    python benchmarks/bench_request_ledger.py [--requests 400] [--concurrency 4] [--repeats 5]
                                              [--folder /tmp]

A local OpenAI-compatible server (in this process, answering at once) is asked ``--requests``
cells by :class:`~latentbench.select.oracles.ChatCompletionsOracle`, with and without the
ledger (:meth:`~latentbench.io.store.Store.record_requests` on a fresh DuckDB store in
``--folder``: a disk folder, or ``/dev/shm`` for memory), interleaved A B, B A, ... so that a
change of the machine's load falls on both. Prints the median milliseconds per request of
each, their difference (the ledger's cost per request, as a run pays it with its requests in
flight) and the cost of one ledger insert alone (one thread, no HTTP).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np

from latentbench.io.store import Store
from latentbench.select.oracles import ChatEndpoint
from latentbench.select.oracles._openai import ChatCompletionsOracle

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import interleaved_seconds


class _Answer(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.dumps({"choices": [{"message": {"content": "4"}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--folder", default=tempfile.gettempdir())
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    server.daemon_threads = True
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    ).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    items = [{"id": f"q{k}", "prompt": f"{k}?", "answer": "4"} for k in range(args.requests)]
    cells = np.arange(args.requests)
    folder = tempfile.mkdtemp(dir=args.folder)

    def once(ledger: bool) -> float:
        oracle = ChatCompletionsOracle(
            [ChatEndpoint("m", url, "m")], items, concurrency=args.concurrency, retries=0
        )
        path = os.path.join(folder, f"l{time.perf_counter_ns()}.duckdb")
        with Store(path) as store, oracle:
            run = store.start_selection({"bench": True})
            if ledger:
                oracle.set_ledger(lambda delta: store.record_requests(run, delta))
            start = time.perf_counter()
            done = list(oracle.evaluate_cells(0, cells))
            seconds = time.perf_counter() - start
            assert len(done) == args.requests and all(c.error is None for c in done)
            if ledger:
                assert store.selection_requests(run) == args.requests
        os.remove(path)
        return seconds

    once(True)  # warm: imports, the pool, DuckDB
    times = interleaved_seconds(
        {"without": lambda: once(False), "with ledger": lambda: once(True)}, args.repeats
    )
    per = {name: 1e3 * statistics.median(t) / args.requests for name, t in times.items()}
    path = os.path.join(folder, "alone.duckdb")
    with Store(path) as store:
        run = store.start_selection({"bench": True})
        start = time.perf_counter()
        for _ in range(args.requests):
            store.record_requests(run, 1)
        alone = 1e3 * (time.perf_counter() - start) / args.requests
    os.remove(path)
    server.shutdown()
    print(
        f"{args.requests} requests, concurrency {args.concurrency}, store in {args.folder}, "
        f"median of {args.repeats}"
    )
    for name, ms in per.items():
        print(f"  {name:12s} {ms:.3f} ms per request")
    print(f"  ledger cost  {per['with ledger'] - per['without']:+.3f} ms per request")
    print(f"  one insert alone (one thread): {alone:.3f} ms")


if __name__ == "__main__":
    main()
