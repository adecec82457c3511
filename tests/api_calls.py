"""The API functions the API tests call, each with the arguments that make it run."""

from __future__ import annotations

# The functions a notebook calls, each with the arguments that make it run (measure and sheets write files and take
# seconds: tests/test_issue27_inputs.py covers their paths).
CALLS = {
    "params": {"model": "llama3-8b"},
    "kv": {"model": "llama3-8b"},
    "knee": {"model": "llama3-8b"},
    "flops": {"model": "llama3-8b"},
    "fit": {"model": "llama3-8b"},
    "intensity": {"model": "llama3-8b"},
    "crossover_kv_weights": {"model": "llama3-8b"},
    "crossover_prefill": {"model": "llama3-8b"},
    "predict": {"model": "llama3-8b"},
    "compare": {"model": "llama3-8b", "vs": "b200"},
    "experts": {"model": "mixtral-8x7b"},
    "energy": {"model": "llama3-8b"},
    "shard": {"model": "llama3-8b"},
    "claim": {"model": "llama3-8b", "claim": "100 token/s"},
    "attention_memory": {"model": "llama3-8b"},
    "utilisation": {"model": "llama3-8b"},
    "evaluate": {"name": "kv_bytes", "model": "llama3-8b"},
    "solve": {"equation": "kv_bytes = 1 GB", "for_": "batch", "model": "llama3-8b"},
    "plan": {"model": "llama3-8b", "gpu": "h100", "tpot": "50 ms"},
    "sweep": {"target": "kv_bytes", "model": "llama3-8b"},
    "model": {"name": "llama3-8b"},
    "gpu": {"name": "h100"},
    "formula": {"name": "kv_bytes"},
    "answer": {"question_id": "kv-sizing-13b"},
}
