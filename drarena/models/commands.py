"""`drarena serve`: bring up a model server, print its api_base, stop it on Ctrl-C."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve", help="start a local OpenAI-compatible vLLM server (CPU default or GPU)"
    )
    parser.add_argument(
        "--model",
        default=None,
        help="HF id or folder; with a GPU runs `vllm serve MODEL`; qwen1.5b-cpu: "
        "Qwen2.5-Coder-1.5B-Instruct Q4_K_M on llama.cpp (CPU; `make setup-qwen`); "
        "default: the CPU SmolLM2-135M-Instruct folder",
    )
    parser.add_argument(
        "--device",
        choices=("auto", "cpu", "gpu"),
        default="auto",
        help="auto = gpu when nvidia-smi finds one",
    )
    parser.add_argument("--port", type=int, default=0, help="0 = a free port")
    parser.set_defaults(func=serve_command)


def serve_command(args: argparse.Namespace) -> int:
    from pathlib import Path

    from drarena.models import serve

    port = args.port or serve.free_port()
    gpu = args.device == "gpu" or (args.device == "auto" and serve.has_gpu())
    if args.model in serve.LLAMACPP_MODELS:
        print(f"starting llama.cpp serving {args.model} (about 5-30 s)...", file=sys.stderr)
        handle = serve.start_llamacpp_server(args.model, port)
    elif gpu:
        if not args.model:
            print("drarena serve: the GPU path needs --model (MODEL=...)", file=sys.stderr)
            return 2
        name = Path(args.model).name.lower()
        log_path = serve.REPO / ".cache" / "logs" / f"vllm-gpu-{port}.log"
        print(f"starting: {' '.join(serve.gpu_command(args.model, port))}", file=sys.stderr)
        handle = serve.start_server(
            serve.gpu_command(args.model, port),
            dict(os.environ),
            port,
            name,
            log_path,
            ready_timeout_s=1800.0,
        )
    else:
        model_dir = Path(args.model) if args.model else None
        print("starting the CPU vLLM server (about 30-60 s)...", file=sys.stderr)
        handle = serve.start_cpu_server(port, model_dir=model_dir)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started in background
    try:
        print(
            f"api_base={handle.api_base} model={handle.litellm_model} "
            f"(log {handle.log_path}); Ctrl-C stops it",
            flush=True,
        )
        while handle.process is not None and handle.process.poll() is None:
            time.sleep(1.0)
        print("drarena serve: the server exited", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, SystemExit):
        return 0
    finally:
        handle.stop()
