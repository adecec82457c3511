"""Every decoder family transformers ships: derive's counts against transformers' own, to the integer (issue 24).

tests/data/families holds transformers 5.25's default config for each decoder-only family in its causal-LM
mapping and real published configs, with their exact counts made by tools/transformers_families.py
(transformers' modules on the meta device). The README's coverage table is generated from the same rows.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from derive.architecture.build import model_formulas
from derive.architecture.reader import read_architecture
from derive.core.errors import CatalogError

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("family_coverage", ROOT / "tools" / "family_coverage.py")
assert _spec is not None and _spec.loader is not None
coverage = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(coverage)

ROWS = coverage.rows()
NOT_READ = {row["family"] for row in ROWS if row["status"] not in ("exact", "oracle cannot build it")}


def test_readme_coverage_table_is_current():
    text = (ROOT / "README.md").read_text()
    section = text[text.index(coverage.START) : text.index(coverage.END) + len(coverage.END)]
    assert section == coverage.table(ROWS), "run: python3 tools/family_coverage.py --readme"


# Issue 24 asks for 95 %; this ratchet holds what is reached, so coverage never falls back.
READ_AT_LEAST = 0.95


def test_coverage_never_falls_back():
    checked = {r["family"] for r in ROWS if r["status"] != "oracle cannot build it"}
    read = checked - NOT_READ
    assert len(read) / len(checked) >= READ_AT_LEAST, f"{len(read)} of {len(checked)}: {sorted(NOT_READ)}"


@pytest.mark.parametrize("row", ROWS, ids=[r["config"] for r in ROWS])
def test_counts_equal_transformers(row):
    if row["status"] == "oracle cannot build it":
        pytest.skip(f"transformers cannot build {row['config']}: {row['oracle'].get('error', '')}")
    if row["family"] in NOT_READ and row["status"] != "exact":  # a family's other configs may still read exactly
        pytest.xfail(f"{row['family']} is listed in the README as not read: {row['status']}")
    assert row["status"] == "exact"


@pytest.mark.parametrize(
    "family", sorted(p.stem for p in (ROOT / "derive" / "architecture" / "families").glob("*.toml"))
)
def test_every_entry_loads_with_known_settings(family):
    from derive.architecture.reader import entry

    if family != "_excluded":
        assert entry(family) is not None


def test_a_misspelt_setting_is_named(tmp_path, monkeypatch):
    from derive.architecture import reader

    (tmp_path / "_base.toml").write_text("")
    (tmp_path / "typo.toml").write_text("norm_s = 4\n")
    monkeypatch.setattr(reader, "FAMILIES", tmp_path)
    reader.entry.cache_clear()
    try:
        with pytest.raises(CatalogError, match="family entry typo has the setting 'norm_s'"):
            reader.entry("typo")
    finally:
        reader.entry.cache_clear()


def _read(raw: dict) -> dict[str, int]:
    return model_formulas(read_architecture(raw, "test")).counts()


LLAMA = json.loads((ROOT / "formulas" / "models" / "llama3-8b.json").read_text())


def test_an_unknown_model_type_is_read_with_its_assumptions_named():
    raw = {**LLAMA, "model_type": "brand_new_llm", "architectures": ["BrandNewForCausalLM"]}
    note = next(n for n in read_architecture(raw, "new").notes if "brand_new_llm" in n)
    assert "assumed: gated SiLU MLP, RMSNorm without bias" in note and "no q/k norm" in note
    assert _read(raw)["total_params"] == 8_030_261_248  # Llama 3 8B's published count (shared/data/param_counts)


def test_a_wrapper_is_read_through_its_text_config():
    # A llava-style wrapper whose text_config is a Llama: the text decoder is counted (issue 27's example).
    raw = {"model_type": "llava", "text_config": {**LLAMA}, "vision_config": {"hidden_size": 1024}}
    arch = read_architecture(raw, "wrapped")
    assert arch.family == "llama"
    assert _read(raw)["total_params"] == 8_030_261_248


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"model_type": None}, "config for test has no 'model_type'"),
        ({"model_type": 123}, "config for test: 'model_type' is 123, not a string"),
        ({"model_type": "bert"}, "model_type 'bert' is not a decoder-only language model"),
        ({"layer_types": ["full_attention"] * 3}, "'layer_types' has 3 entries but num_hidden_layers is 32"),
    ],
)
def test_bad_configs_are_one_line_errors(change, message):
    with pytest.raises(CatalogError) as err:
        read_architecture({**LLAMA, **change}, "test")
    assert message in str(err.value)


def test_top_k_above_the_expert_count_is_refused():
    mixtral = json.loads((ROOT / "formulas" / "models" / "mixtral-8x7b.json").read_text())
    with pytest.raises(CatalogError, match="num_experts_per_tok=9 routes each token to more experts than the 8"):
        read_architecture({**mixtral, "num_experts_per_tok": 9}, "test")


KINDS = sorted(p.stem for p in (ROOT / "derive" / "architecture" / "kinds").glob("*.py") if p.stem != "__init__")


def test_no_isinstance_on_a_layer_kind_outside_its_own_module():
    """A new kind is one module: nothing else may ask which kind it holds."""
    kinds = ROOT / "derive" / "architecture" / "kinds"
    names = sorted({m for p in kinds.glob("*.py") for m in re.findall(r"^class (\w+)\(", p.read_text(), re.M)})
    assert "Attention" in names and "Mamba2" in names
    pattern = re.compile(r"isinstance\([^)]*\b(" + "|".join(names) + r")\b")
    offenders = []
    for path in [*ROOT.glob("derive/**/*.py"), *ROOT.glob("formulas/**/*.py"), *ROOT.glob("reports/**/*.py")]:
        if path.parent.name == "kinds":
            continue
        offenders += [
            f"{path.relative_to(ROOT)}:{i}"
            for i, line in enumerate(path.read_text().splitlines(), 1)
            if pattern.search(line)
        ]
    offenders += [
        f"cli.py:{i}" for i, line in enumerate((ROOT / "cli.py").read_text().splitlines(), 1) if pattern.search(line)
    ]
    assert not offenders


# KV cache and recurrent state of one sequence at 131,072 tokens, by hand from each config (bf16 cache: 2 B a
# value; a state kept in fp32 where the family keeps it so). Configs from tests/data/families.
DATA = ROOT / "tests" / "data" / "families"


def _kv_at_131k(tmp: Path, path: Path, **changes: object) -> dict[str, int]:
    import derive

    where = tmp / f"{path.parent.name}.json"
    where.write_text(json.dumps({**json.loads(path.read_text()), **changes}))
    results = derive.kv(config=str(where), context=131072, allow_long_context=True).results
    return {name: int(q.magnitude) for name, q in results.items()}


def test_jamba_v0_1_cache_and_mamba_state(tmp_path):
    # Jamba-v0.1: 32 layers, attention where i % 8 == 4 (layers 4, 12, 20, 28), Mamba-1 in the other 28.
    # Attention: 2 (K, V) x 8 KV heads x 128 (4096 / 32) x 2 B = 4,096 B a token a layer; x 4 layers x 131,072.
    # Mamba-1: d_inner = 2 x 4096 = 8,192; state 8,192 x 16 = 131,072 values, conv (4 - 1) x 8,192 = 24,576 values,
    # both in the model's dtype as vLLM keeps them by default (mamba_ssm_cache_dtype "auto"): x 2 B x 28 layers.
    r = _kv_at_131k(tmp_path, DATA / "jamba" / "ai21labs__Jamba-v0.1.json")
    assert r["kv_bytes_full"] == 4 * 131072 * 4096 == 2_147_483_648
    assert r["kv_bytes_ssm1"] == 28 * (131072 + 24576) * 2 == 8_716_288
    assert r["kv_marginal_bytes_per_token"] == 4 * 4096 and r["kv_fixed_bytes_per_sequence"] == 8_716_288


def test_falcon_h1_attention_beside_mamba2(tmp_path):
    # transformers' default FalconH1Config: 32 layers, each attention (8 KV heads x 128) beside a Mamba-2 of
    # 128 heads x 8 (1,024 wide) with a 256-wide state and one group. Cache: 2 x 8 x 128 x 2 B = 4,096 B a token a
    # layer. State: 1,024 x 256 = 262,144 values; conv (4 - 1) x (1,024 + 2 x 256) = 4,608 values; 2 B each.
    r = _kv_at_131k(tmp_path, DATA / "falcon_h1" / "default.json")
    assert r["kv_marginal_bytes_per_token"] == 32 * 4096 == 131_072
    assert r["kv_fixed_bytes_per_sequence"] == 32 * (262144 + 4608) * 2 == 17_072_128
    assert r["kv_bytes_per_sequence"] == 131072 * 131_072 + 17_072_128


def test_minimax_lightning_state(tmp_path):
    # transformers' default MiniMaxConfig (its docstring: a configuration like MiniMax-Text-01's): 32 layers
    # alternating full and lightning attention. Full: 2 x 8 KV heads x 128 x 2 B = 4,096 B a token a layer, 16 layers.
    # Lightning: one 128 x 128 state per head, 32 heads: 524,288 values a layer in the cache dtype (vLLM), 16 layers.
    r = _kv_at_131k(tmp_path, DATA / "minimax" / "default.json")
    assert r["kv_bytes_full"] == 16 * 131072 * 4096 == 8_589_934_592
    assert r["kv_bytes_ltn"] == 16 * 32 * 128 * 128 * 2 == 16_777_216


def test_kimi_linear_mla_and_kda_state(tmp_path):
    # transformers' default KimiLinearConfig: 27 layers, MLA at 4, 8, ..., 24 (6 layers), Kimi delta attention in 21.
    # MLA caches the 512-wide latent and the 64-wide rotary key: 576 x 2 B = 1,152 B a token a layer.
    # KDA: a 128 x 128 state per head, 32 heads, in fp32 (vLLM's kda_state_dtype): 524,288 x 4 B a layer; and the
    # q, k, v short-conv windows, 3 x 32 x 128 x (4 - 1) = 36,864 values in the cache dtype.
    r = _kv_at_131k(tmp_path, DATA / "kimi_linear" / "default.json")
    assert r["kv_bytes_mla"] == 6 * 131072 * 1152 == 905_969_664
    assert r["kv_bytes_kda"] == 21 * (524288 * 4 + 36864 * 2) == 45_588_480


def test_lfm2_short_convolutions(tmp_path):
    # transformers' default Lfm2Config (hidden 2,560, 32 heads, 8 KV heads, conv_L_cache 3), with every fourth layer
    # attention and the rest short convolutions (its default lists every layer as attention). Attention: 2 x 8 x 80
    # (2,560 / 32) x 2 B = 2,560 B a token a layer, 8 layers. A conv layer keeps its last L_cache - 1 = 2 inputs,
    # 2 x 2,560 values x 2 B = 10,240 B, 24 layers.
    types = ["full_attention" if i % 4 == 3 else "conv" for i in range(32)]
    r = _kv_at_131k(tmp_path, DATA / "lfm2" / "default.json", layer_types=types)
    assert r["kv_bytes_full"] == 8 * 131072 * 2560 == 2_684_354_560
    assert r["kv_bytes_conv"] == 24 * 2 * 2560 * 2 == 245_760


def test_gemma3_1b_local_and_global_layers(tmp_path):
    # Gemma 3 1B: 26 layers, every sixth global (5, 11, 17, 23), the rest sliding over 512 tokens; one KV head of
    # 256: 2 x 1 x 256 x 2 B = 1,024 B a token a layer. Global: 4 x 131,072 x 1,024. Local: 22 x 512 x 1,024.
    r = _kv_at_131k(tmp_path, DATA / "gemma3_text" / "google__gemma-3-1b-it.json")
    assert r["kv_bytes_full"] == 4 * 131072 * 1024 == 536_870_912
    assert r["kv_bytes_swa"] == 22 * 512 * 1024 == 11_534_336
    # Past the windows each token adds only the 4 global layers' 4,096 B; the per-token rate of every layer is 26,624.
    assert r["kv_marginal_bytes_per_token"] == 4 * 1024 and r["kv_bytes_per_token"] == 26 * 1024


def test_minimax_m3_block_sparse_layers_cache_an_index_key(tmp_path):
    # MiniMax-M3 (nvidia/MiniMax-M3-NVFP4's text_config): 60 layers, sparse_attention_freq 0 for layers 0-2 (full
    # attention) and 1 for layers 3-59 (57 block-sparse). Every layer caches K and V: 2 x 4 KV heads x 128 x 2 B =
    # 2,048 B a token. A block-sparse layer also caches its indexer's one 128-wide key (sparse_index_dim; the index
    # value is off, sparse_disable_index_value 1): 128 x 2 B = 256 B, so 2,304 B a token. It attends to only the
    # top 16 blocks of 128 tokens (2,048), but caches every token. Full: 3 x 131,072 x 2,048; sparse: 57 x 131,072
    # x 2,304; no window, so each further token adds 3 x 2,048 + 57 x 2,304 = 137,472 B.
    r = _kv_at_131k(tmp_path, DATA / "minimax_m3_vl_text" / "nvidia__MiniMax-M3-NVFP4.json")
    assert r["kv_bytes_full"] == 3 * 131072 * 2048 == 805_306_368
    assert r["kv_bytes_bsa"] == 57 * 131072 * 2304 == 17_213_423_616
    assert r["kv_marginal_bytes_per_token"] == 3 * 2048 + 57 * 2304 == 137_472
    assert r["kv_bytes_per_sequence"] == 131072 * 137_472 and r["kv_fixed_bytes_per_sequence"] == 0


def test_minimax_m3_sparse_layers_as_transformers_saves_them():
    # MiniMaxM3VLTextConfig saves layer_types ("minimax_m3_sparse") and flat index_* keys in place of the checkpoint's
    # sparse_attention_config: the same model. Without either, every layer is full attention (its default), and an
    # indexer with a value path (sparse_disable_index_value 0 on a sparse layer) is refused: transformers has none.
    raw = json.loads((DATA / "minimax_m3_vl_text" / "nvidia__MiniMax-M3-NVFP4.json").read_text())
    sparse = raw["sparse_attention_config"]
    flat = {k: v for k, v in raw.items() if k != "sparse_attention_config"}
    flat["layer_types"] = ["minimax_m3_sparse" if f else "full_attention" for f in sparse["sparse_attention_freq"]]
    flat |= {"index_n_heads": 4, "index_head_dim": 128, "index_block_size": 128, "index_topk_blocks": 16}
    assert _read(flat)["total_params"] == _read(raw)["total_params"]
    dense = _read({k: v for k, v in raw.items() if k != "sparse_attention_config"})
    assert _read(raw)["total_params"] - dense["total_params"] == 57 * (6144 * 4 * 128 + 6144 * 128 + 2 * 128)
    valued = {**raw, "sparse_attention_config": {**sparse, "sparse_disable_index_value": [0] * 60}}
    with pytest.raises(CatalogError, match="sparse_disable_index_value"):
        _read(valued)


def test_gpt_oss_marginal_rate_is_the_full_layers_alone():
    # Issue 24: gpt-oss-120b reported 73.73 kB/token where, past 128 tokens, a token adds 2 x 18 x 8 x 64 x 2 B.
    # gpt-oss-20b (catalog): 12 full layers of 8 KV heads x 64: 2 x 12 x 8 x 64 x 2 B = 24,576 B a token.
    import derive

    r = derive.kv("gpt-oss-20b", context=4096).results
    assert int(r["kv_marginal_bytes_per_token"].magnitude) == 2 * 12 * 8 * 64 * 2
    assert int(r["kv_fixed_bytes_per_sequence"].magnitude) == 12 * 128 * 2 * 8 * 64 * 2  # 12 windows of 128 tokens


def test_latent_moe_and_layers_block_type_read_like_transformers():
    # Nemotron 3 Nano with moe_latent_size 1,024 (the experts in a narrower latent, as Nemotron 3 Super's are):
    # transformers 5.25 counts 13,520,147,904 parameters (tools/transformers_families.py's oracle on this config).
    raw = json.loads((ROOT / "formulas" / "models" / "nemotron3-nano.json").read_text())
    latent = {**raw, "moe_latent_size": 1024}
    counts = _read(latent)
    assert counts["total_params"] - counts["router_correction_params"] == 13_520_147_904
    # The same model given as layers_block_type with no num_hidden_layers (issue 24: "lacks 'num_hidden_layers'").
    pattern = raw["hybrid_override_pattern"]
    listed = {k: v for k, v in raw.items() if k not in ("hybrid_override_pattern", "num_hidden_layers")}
    listed["layers_block_type"] = [{"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}[c] for c in pattern]
    assert _read(listed)["total_params"] == _read(raw)["total_params"]


def test_shared_dsa_indexers_are_counted_once():
    # GLM-5 with every other layer reusing the previous layer's top-k (indexer_types "shared"): those layers have no
    # indexer (wq_b, wk, weights_proj, k_norm). Per layer: 2048 x 32 x 128 + 6144 x 128 + 6144 x 32 + 2 x 128.
    raw = json.loads((ROOT / "formulas" / "models" / "glm-5.json").read_text())
    layers = raw["num_hidden_layers"]
    shared = {**raw, "indexer_types": ["full" if i % 2 == 0 else "shared" for i in range(layers)]}
    indexer = (
        raw["q_lora_rank"] * raw["index_n_heads"] * raw["index_head_dim"]
        + raw["hidden_size"] * (raw["index_head_dim"] + raw["index_n_heads"])
        + 2 * raw["index_head_dim"]
    )
    assert _read(raw)["total_params"] - _read(shared)["total_params"] == (layers // 2) * indexer


def test_looped_layers_hold_their_weights_once_and_run_once_a_pass(tmp_path, monkeypatch):
    # Llama 3 8B with layers 1 and 2 run three times a token (as Dory loops its middle layers): the parameters
    # are Llama's (8,030,261,248, published), each pass caches its own keys and values (32 + 2 x 2 layer-runs of
    # 2 x 8 x 128 values), and each extra pass multiplies through the two layers' weights again.
    import shutil

    import derive
    from derive.architecture import reader

    families = ROOT / "derive" / "architecture" / "families"
    shutil.copy(families / "_base.toml", tmp_path / "_base.toml")
    shutil.copy(families / "_excluded.toml", tmp_path / "_excluded.toml")
    (tmp_path / "looped.toml").write_text("[layers]\nloop = { first = 1, count = 2, times = 3 }\n")
    monkeypatch.setattr(reader, "FAMILIES", tmp_path)
    reader.entry.cache_clear()
    try:
        raw = {**LLAMA, "model_type": "looped"}
        assert _read(raw)["total_params"] == 8_030_261_248
        (tmp_path / "config.json").write_text(json.dumps(raw))
        kv = derive.kv(config=str(tmp_path / "config.json"), context=1024).results
        assert int(kv["kv_bytes_per_token"].magnitude) == (32 + 2 * 2) * 2 * 8 * 128 * 2
        plain = derive.flops("llama3-8b", context=1024).results["flops_per_token"].magnitude
        looped = derive.flops(config=str(tmp_path / "config.json"), context=1024).results["flops_per_token"]
        per_layer = 4096 * (4096 + 2 * 1024 + 4096) + 3 * 4096 * 14336  # q, k, v, o and the gated MLP
        runs = 2 * (3 - 1)  # two layers, two passes more each
        attention = runs * 2 * 32 * (128 + 128) * 1024  # each run scores and sums over 1,024 tokens, 32 heads
        assert looped.magnitude - plain == runs * 2 * per_layer + attention
    finally:
        reader.entry.cache_clear()


def test_dory_caches_its_looped_layers_once_a_pass(tmp_path):
    # transformers' default DoryConfig: 36 layers (stored as 72 half-layers, attention then MLP), three sliding
    # (1,024 tokens) to one full; layers 8-27 run twice (n_recurrent_loops 2), each pass with its own cache
    # (recurrent_kv_cache_mode "per_loop"). Full: 2 + 5 x 2 + 2 = 14 caches; sliding: 6 + 15 x 2 + 6 = 42.
    # K and V: 2 x 4 KV heads x 256 x 2 B = 4,096 B a token.
    r = _kv_at_131k(tmp_path, DATA / "dory" / "default.json")
    assert r["kv_bytes_full"] == 14 * 131072 * 4096
    assert r["kv_bytes_swa"] == 42 * 1024 * 4096
    assert r["kv_marginal_bytes_per_token"] == 14 * 4096
