"""llama.cpp's OpenAI-compatible server for one GGUF, through the `xllamacpp` wheel.

Run by drarena/models/serve.py with .venv-llamacpp's interpreter (xllamacpp lives there, apart
from drarena's venv). xllamacpp has no command line of its own: its `Server` object starts the
same HTTP server as `llama-server` inside this process and serves until the process ends, so
this script sets the parameters, starts it and sleeps until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True, help="GGUF file")
    parser.add_argument("--alias", required=True, help="model name the API reports")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ctx-per-slot", type=int, default=8192)
    parser.add_argument("--parallel", type=int, default=2, help="requests decoded together")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--tool-calls",
        choices=("relay", "native"),
        default="native",
        help="relay: llama.cpp listens on a private port behind "
        "scripts/llamacpp_tools.py, which holds the model to a call under tool_choice "
        "required and returns calls written as text as tool_calls; native (default): "
        "llama.cpp alone",
    )
    args = parser.parse_args(argv)

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.alias}
    params.hostnames = [args.host]
    relay = None
    if args.tool_calls == "relay":
        import socket

        from llamacpp_tools import Relay

        relay = Relay((args.host, args.port), "http://127.0.0.1:0")  # bound first: the port
        with socket.socket() as probe:  # is the caller's; llama.cpp gets a free private one
            probe.bind(("127.0.0.1", 0))
            private = probe.getsockname()[1]
        relay.upstream = ("127.0.0.1", private)
    params.port = private if relay is not None else args.port
    params.n_parallel = args.parallel
    # n_ctx is the whole KV cache, split evenly between the slots.
    params.n_ctx = args.ctx_per_slot * args.parallel
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.use_jinja = True  # the GGUF's chat template, which carries Qwen's tool-call format
    server = xllamacpp.Server(params)
    if relay is not None:
        import threading

        threading.Thread(target=relay.serve_forever, daemon=True).start()
    where = server.listening_address
    if relay is not None:
        where = f"{args.host}:{args.port}, a tool-call relay to llama.cpp on {where}"
    print(
        f"llamacpp_server: listening on {where} ({args.threads} threads, {args.parallel} slots)",
        flush=True,
    )

    def stop(*_: object) -> None:
        # At once: a clean shutdown waits for the request being decoded (minutes on a loaded
        # CPU), and there is nothing to save.
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while True:
        signal.pause()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
