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


def test_each_layer_kind_splits_its_own_cache_under_tensor_parallelism():
    """Nemotron-3 Nano at tp 4: its 6 attention layers keep 2 KV heads (split 2 ways, then copied), its 23 Mamba-2
    layers 64 heads of state (split 4 ways), as vLLM shards each layer. One accelerator holds S·k_full/2 + state/4
    of a sequence, not the whole cache over min(4, 2)."""
    import math

    import derive
    from formulas import notation as sym

    d = derive.fit("nemotron3-nano", tp=4)
    v = {str(k): val for k, val in d.sheet.values.items()}
    attention = v["S"] * v["k_full"]
    state = v["b_kv"] * v["q_cv_ssm"] + v["b_st"] * v["s_st_ssm"]
    per_rank = attention / 2 + state / 4
    assert d.sheet.values[sym.kv_seq] == attention + state
    assert d.sheet.values[sym.s_kv] == (attention + state) / per_rank
    held = math.floor((v["M"] - v["W"] / 4) / per_rank)
    assert d.results["max_sequences"].magnitude == held
    # A model whose layers all split alike keeps min(n, h_kv): Llama 3 70B's 8 KV heads at tp 4.
    assert derive.fit("llama3-70b", tp=4).sheet.values[sym.s_kv] == 4


def test_the_default_tp_holds_the_cache_as_fit_splits_it():
    """On 15.84 GB, Nemotron-3 Nano's weights over 4 (15.79 GB) leave room for one 10,000-token sequence only with its
    Mamba state split over its own 64 heads (fit at tp 4: 1 sequence): predict's default degree is 4, not the 8 that
    splitting the whole cache over the 2 attention KV heads would take."""
    import derive

    assert derive.fit("nemotron3-nano", tp=4, context=10000, memory="15.84 GB").results["max_sequences"].magnitude == 1
    chosen = derive.predict("nemotron3-nano", memory="15.84 GB", batch=1, prompt=9000, output=1000)
    assert chosen.inputs["tp"] == 4
