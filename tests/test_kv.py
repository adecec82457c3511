"""KV-cache bytes: MHA, GQA and MLA, against the question documents and the papers."""

from __future__ import annotations

import json

import pytest


def kv_json(run, *args):
    result = run("kv", *args, "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)["results"]


def test_llama2_13b_2048_tokens_16_bit_is_1_68_gb(run):
    # Seed 000: "2 x 40 layers x 5,120 x 2,048 tokens x 2 bytes = 1.68 GB".
    results = kv_json(run, "--model", "llama2-13b", "--context", "2048", "--kv-dtype", "fp16")
    assert results["kv_bytes_per_sequence"]["value"] == 2 * 40 * 5120 * 2048 * 2
    assert round(results["kv_bytes_per_sequence"]["value"] / 1e9, 2) == 1.68
    assert results["kv_bytes_per_sequence"]["unit"] == "byte/sequence"


def test_gqa_reads_kv_heads_not_query_heads(run):
    # Llama 3 70B: 8 KV heads of 128 over 80 layers, 2 bytes: 2*80*8*128*2 = 327,680 bytes per token.
    results = kv_json(run, "--model", "llama70b")
    assert results["kv_bytes_per_token"]["value"] == 327_680


def test_mla_caches_latent_and_rotary_key(run):
    # DeepSeek-V2 paper, Table 1: MLA caches (d_c + d_h^R) * l elements per token;
    # V3 config: d_c = kv_lora_rank 512, d_h^R = qk_rope_head_dim 64, l = 61 layers.
    results = kv_json(run, "--model", "deepseek-v3", "--kv-dtype", "bf16")
    assert results["kv_bytes_per_token"]["value"] == (512 + 64) * 61 * 2


@pytest.mark.parametrize("batch", [1, 8, 64])
def test_batch_multiplies_sequences(run, batch):
    results = kv_json(run, "--model", "llama3-8b", "--batch", str(batch), "--context", "4096")
    assert results["kv_bytes"]["value"] == batch * results["kv_bytes_per_sequence"]["value"]
    assert results["kv_bytes"]["unit"] == "byte"


def test_kv_dtype_halves_bytes(run):
    bf16 = kv_json(run, "--model", "mistral-7b", "--kv-dtype", "bf16")
    fp8 = kv_json(run, "--model", "mistral-7b", "--kv-dtype", "fp8")
    assert fp8["kv_bytes_per_token"]["value"] * 2 == bf16["kv_bytes_per_token"]["value"]
