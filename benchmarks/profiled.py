"""aiconfigurator's profiled grid, and derive's predictor compiled for each of its (accelerator, model) pairs.

Shared by tools/calibrate.py (which fits the calibrated terms) and benchmarks/predictor_error.py
(which prints how far the floor and the fit are from the profiled values). The grids are
benchmarks/data/aiconfigurator-0.12.json (bf16), aiconfigurator-0.12-fp8.json, and one per weight recipe that
aiconfigurator has tables for (-fp8-block.json, -nvfp4.json), made by tools/aiconfigurator_grid.py. Beside them,
aiconfigurator's MoE kernel tables (benchmarks/data/aiconfigurator-0.12-moe.json, copied out of its wheel by
`tools/calibrate.py --moe-tables`): one routed-expert kernel's time by tokens, per shape, format and layout.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import sympy

from derive.calibration import FITTED
from derive.catalog import Model, dtype_bytes, load_config_path, load_gpu, load_model
from derive.sweeps import compile_expression, predictor_inputs
from formulas import calibrated as cal
from formulas import notation as sym
from formulas import prefill as pf

DATA = Path(__file__).resolve().parent / "data"
# Precision (the fit's name, formulas/recipes.toml's `fit`) -> its grid. Each grid's precision is a recipe derive
# sizes and prices its points in.
GRIDS = {
    "bf16": DATA / "aiconfigurator-0.12.json",
    "fp8": DATA / "aiconfigurator-0.12-fp8.json",
    "fp8-block": DATA / "aiconfigurator-0.12-fp8-block.json",
    "nvfp4": DATA / "aiconfigurator-0.12-nvfp4.json",
}
# aiconfigurator's KV-cache mode -> derive's --kv-dtype: the cache as the grid ran it (nvfp4's profile keeps it in
# fp8, where derive's nvfp4 recipe would default to 16 bits).
KV_DTYPES = {"bfloat16": "bf16", "fp8": "fp8"}
CONFIGS = DATA / "configs"

# aiconfigurator's system -> derive's catalog name: the same GPU, the same dense peaks and link. Only b200's
# memory bandwidth differs (8.0 TB/s in the catalog, 7.7 in aiconfigurator's b200_sxm.yaml), which its fitted
# efficiencies absorb (they are relative to the catalog's figures), and memory sizes, which no latency reads.
SYSTEMS = {
    "h100_sxm": "h100",
    "h200_sxm": "h200",
    "a100_sxm": "a100",
    "b200_sxm": "b200",
    "gb200": "gb200",
    "l40s": "l40s",
}
# One-way GPU-to-GPU bandwidth where the catalog has no link but aiconfigurator's tables run tensor parallel:
# the L40S has no NVLink, its all-reduces cross PCIe 4.0 x16 (aiconfigurator-core systems/l40s.yaml,
# intra_node_bw = pcie_bw = 32 GB/s per GPU, one way). The catalog's own link wins where it has one.
LINKS = {"l40s": sympy.Integer(32 * 10**9)}
# The largest tensor-parallel size a fit covers where one link efficiency cannot follow the tables beyond it.
# L40S all-reduces cross PCIe switches and sockets: aiconfigurator's l40s TensorRT-LLM all-reduce table takes
# 53 ms for 512 Mi bf16 values at tp 2, 319 at tp 4 and 885 at tp 8, where a ring over one link would take
# 1.5x and 1.75x its tp 2 time, not 6x and 17x. Points beyond are held out of the fit and their error is said.
MAX_TP = {"l40s": 2}
# aiconfigurator's name (the Hugging Face id) -> derive's catalog name, or a config under data/configs.
# Llama 3.1 differs from Llama 3 only in its RoPE scaling, which costs nothing here.
MODELS = {
    "meta-llama/Meta-Llama-3.1-8B": "llama3-8b",
    "meta-llama/Meta-Llama-3.1-70B": "llama3-70b",
    "meta-llama/Llama-2-7b-hf": "llama2-7b",
    "meta-llama/Llama-2-13b-hf": "llama2-13b",
    "meta-llama/Llama-2-70b-hf": "llama2-70b",
    "Qwen/Qwen2.5-7B": "qwen2.5-7b",
    "Qwen/Qwen3-8B": "qwen3-8b",
    "Qwen/Qwen3-32B": "qwen3-32b",
    "mistralai/Mixtral-8x7B-v0.1": "mixtral-8x7b",
    "Qwen/Qwen3-30B-A3B": "qwen3-30b-a3b",
    "deepseek-ai/DeepSeek-V3": "deepseek-v3",
}
# The training set: dense, GQA and MHA, two families, and one MoE: Qwen3 30B-A3B where the accelerator's tables have
# it, else the MoE they have. The dense models fit every term a dense model has; the MoE model then only the fixed
# time a MoE layer adds to a dense layer's (tools/calibrate.py: the routed experts' shares of the peaks come from
# aiconfigurator's MoE kernel tables). Everything else is held out.
TRAIN_DENSE = ("llama3-8b", "llama3-70b", "qwen2.5-7b", "llama2-7b")
TRAIN_MOE = ("qwen3-30b-a3b", "mixtral-8x7b")


def training_models(groups: list[Group]) -> set[str]:
    """The models one accelerator's fit trains on, from the models its grid has."""
    have = {g.model for g in groups}
    moe = next((m for m in TRAIN_MOE if m in have), None)
    return set(TRAIN_DENSE) | ({moe} if moe else set())


AXES = (sym.n, sym.B, pf.S_p, pf.S_o)
OUTPUTS = {
    "ttft_floor": pf.ttft.symbol,
    "tpot_floor": pf.tpot.symbol,
    "ttft": cal.t_calp.symbol,
    "tpot": cal.t_cal.symbol,
}


# aiconfigurator's MoE kernel tables, as extracted (MoeTable): derive's expert format -> aiconfigurator's MoE quant
# mode, the recipe whose bytes a weight takes, and the recipe whose datasheet peak its matmuls run at (the w4a16
# MXFP4 kernel dequantises its 4-bit weights for 16-bit matmuls). The formats are the fits' precisions, and MXFP4.
MOE = DATA / "aiconfigurator-0.12-moe.json"
MOE_FORMATS = {
    "bf16": ("bfloat16", "bf16", "bf16"),
    "fp8": ("fp8", "fp8", "fp8"),
    "fp8-block": ("fp8_block", "fp8-block", "fp8-block"),
    "nvfp4": ("nvfp4", "nvfp4", "nvfp4"),
    "mxfp4": ("w4a16_mxfp4", "mxfp4", "bf16"),
}
# The routing aiconfigurator prices its MOE family with (Qwen3, Mixtral, gpt-oss: aiconfigurator-core's
# sdk/models/moe.py, power_law_alpha 1.2); its DeepSeek family's 1.01 is left out. One node: moe_tp·moe_ep <= 8.
MOE_DISTRIBUTION = "power_law_1.2"
MOE_MAX_GPUS = 8
# aiconfigurator's MoE op answers NVFP4 queries of at most 128 tokens from its low-latency twin (TensorRT-LLM's
# min-latency MoE kernel, rows tagged moe_torch_flow_min_latency) and larger ones from the regular table: its
# `operations.MoE(...)._engine_query` on b200_sxm (trtllm 1.3.0rc20) returns the twin's row at 1-128 tokens and the
# regular row from 256, for Mixtral's, DeepSeek-V3's and Qwen3-30B-A3B's shapes alike; a shape the twin lacks (Kimi
# K2's 384 experts, every nongated table) it answers from the regular table at every count.
MIN_LATENCY_SOURCE = "moe_torch_flow_min_latency"
MIN_LATENCY_FORMAT = "nvfp4"
MIN_LATENCY_TOKENS = 128
# Each accelerator's L2 cache, bytes. aiconfigurator times one MoE layer over and over, so where a rank holds no more
# expert weights than its L2, they stay resident from one run to the next and its table reads them from L2 (its L40S
# fp8 tables for Qwen3-30B-A3B's experts at 8 GPUs, 72 MiB a rank, stream them at over twice the 864 GB/s datasheet
# bandwidth); in a model's step every other layer's weights pass through between two reads of one layer's, so those
# rows measure what no step sees, and the kernel fit leaves such tables out (tools/calibrate.py fit_kernels).
L2_BYTES = {
    "a100": 40 * 2**20,  # NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020): 40 MB L2
    "h100": 50 * 2**20,  # NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), H100 SXM5: 50 MB L2
    "h200": 50 * 2**20,  # the H100's GH100 die
    "b200": 126 * 2**20,  # Chips and Cheese, "Nvidia's B200: Keeping the CUDA Juggernaut Rolling": 126 MB, two dies
    "gb200": 126 * 2**20,  # the B200's dies
    # NVIDIA Ada GPU Architecture whitepaper: AD102's 98,304 KB L2; the L40S keeps AD102's whole 384-bit memory
    # interface, and aiconfigurator's L40S tables read ranks of up to 96 MiB of experts from L2 (above)
    "l40s": 96 * 2**20,
}


@dataclass
class MoeTable:
    """One MoE kernel shape on one accelerator, format and layout: its profiled time by routed tokens."""

    system: str
    gpu: str
    format: str  # derive's (MOE_FORMATS)
    experts: int
    topk: int
    hidden: int
    inter: int
    tp: int  # moe_tp: each expert's intermediate split tp ways
    ep: int  # moe_ep: the experts spread over ep ranks
    gated: bool  # gate, up and down projections (3 matrices an expert), else up and down
    tokens: np.ndarray  # tokens routed through the layer, all ranks together
    latency: np.ndarray  # seconds

    @property
    def params(self) -> int:
        """Parameters of one expert on one rank."""
        return (3 if self.gated else 2) * self.hidden * self.inter // self.tp

    @property
    def l2_resident(self) -> bool:
        """Whether every expert weight one rank holds fits in its accelerator's L2 (L2_BYTES), so the profiling loop
        read them from there."""
        _, weight, _ = MOE_FORMATS[self.format]
        held = self.experts / self.ep * self.params * float(dtype_bytes(weight))
        return held <= L2_BYTES.get(self.gpu, 0)


def moe_tables(path: Path = MOE) -> list[MoeTable]:
    """Every MoE kernel table of the extract whose accelerator derive has a fit for (SYSTEMS)."""
    data = json.loads(path.read_text())
    return [
        MoeTable(
            t["system"],
            SYSTEMS[t["system"]],
            t["format"],
            t["experts"],
            t["topk"],
            t["hidden"],
            t["inter"],
            t["tp"],
            t["ep"],
            t["gated"],
            np.array([p[0] for p in t["points"]], float),
            np.array([p[1] for p in t["points"]]) / 1e3,
        )
        for t in data["tables"]
        if t["system"] in SYSTEMS
    ]


def _moe_shape(r: dict[str, Any]) -> tuple[Any, ...]:
    """A MoE table row's format and shape: moe_dtype, experts, top-k, hidden, intermediate, moe_tp, moe_ep."""
    return (
        r["moe_dtype"],
        r["num_experts"],
        r["topk"],
        r["hidden_size"],
        r["inter_size"],
        r["moe_tp_size"],
        r["moe_ep_size"],
    )


def extract_moe_tables(root: Path, versions: dict[str, str]) -> dict[str, Any]:
    """aiconfigurator-core's MoE tables under `root` (its systems/data folder), for each system at `versions`' database
    (the grids'), in MOE_FORMATS, at MOE_DISTRIBUTION, on at most MOE_MAX_GPUS: the content of MOE."""
    import pyarrow.parquet as pq

    modes = {mode: name for name, (mode, _, _) in MOE_FORMATS.items()}
    tables: dict[tuple[Any, ...], list[list[float]]] = {}
    for system, version in sorted(versions.items()):
        path = root / system / "moe" / "trtllm" / version / "moe_perf.parquet"
        if not path.exists():
            continue
        rows = [
            r
            for r in pq.read_table(path).to_pylist()
            if r["moe_dtype"] in modes
            and r["distribution"] == MOE_DISTRIBUTION
            and r["moe_tp_size"] * r["moe_ep_size"] <= MOE_MAX_GPUS
        ]
        # Each row as aiconfigurator's MoE op selects it: a gated table's few NVFP4 tokens from its min-latency twin
        # where the twin has that shape, else (and for every other row) from the regular table.
        twins = {_moe_shape(r) for r in rows if r["kernel_source"] == MIN_LATENCY_SOURCE}
        for r in rows:
            low_latency = r["kernel_source"] == MIN_LATENCY_SOURCE
            few = r["moe_dtype"] == MIN_LATENCY_FORMAT and r["num_tokens"] <= MIN_LATENCY_TOKENS
            gated = r["kernel_source"] != "moe_torch_flow_nongated"
            if low_latency != (few and gated and _moe_shape(r) in twins):
                continue
            key = (system, version, modes[r["moe_dtype"]], *_moe_shape(r)[1:], gated)
            tables.setdefault(key, []).append([int(r["num_tokens"]), float(f"{r['latency']:.6g}")])
    names = ("system", "version", "format", "experts", "topk", "hidden", "inter", "tp", "ep", "gated")
    return {
        "source": "aiconfigurator-core 0.12.0's profiled TensorRT-LLM MoE kernel tables "
        "(systems/data/<system>/moe/trtllm/<version>/moe_perf.parquet, SILICON), each row as its MoE op selects it: "
        "a gated NVFP4 table's rows of at most 128 tokens from its min-latency twin where the twin has that shape "
        "(benchmarks/profiled.py MIN_LATENCY_TOKENS)",
        "distribution": MOE_DISTRIBUTION,
        "meaning": {
            "format": "derive's expert format (benchmarks/profiled.py MOE_FORMATS: aiconfigurator's moe_dtype)",
            "tp": "moe_tp_size: each expert's intermediate split tp ways",
            "ep": "moe_ep_size: the experts spread over ep ranks",
            "gated": "gate, up and down projections an expert (false: aiconfigurator's nongated kernel, up and down)",
            "points": "[tokens routed through the layer (all ranks), latency in ms] of one MoE layer's kernel",
        },
        "tables": [
            {**dict(zip(names, key, strict=True)), "points": sorted(points)} for key, points in sorted(tables.items())
        ],
    }


def model_for(name: str) -> Model:
    local = CONFIGS / name
    return load_config_path(local) if local.is_dir() else load_model(name)


@dataclass
class Group:
    """The grid's points for one accelerator and model, as arrays, and the predictor compiled for them."""

    system: str
    gpu: str
    precision: str
    model: str
    moe: bool
    columns: dict[str, np.ndarray]  # tp, batch, isl, osl, ttft, tpot (profiled, seconds)
    functions: dict[str, Callable[..., Any]]  # output -> f(n, B, S_p, S_o, *fitted)

    @property
    def workload(self) -> tuple[np.ndarray, ...]:
        return tuple(self.columns[c] for c in ("tp", "batch", "isl", "osl"))

    def predict(self, output: str, fitted: dict[str, float]) -> np.ndarray:
        args = [fitted[s.key] for s in FITTED]
        return np.broadcast_to(self.functions[output](*self.workload, *args), self.columns["tp"].shape)

    def subset(self, mask: np.ndarray) -> Group | None:
        """The group's points where `mask` holds, or None if there are none."""
        if not mask.any():
            return None
        return replace(self, columns={k: v[mask] for k, v in self.columns.items()})


def by_tp_scope(groups: list[Group]) -> tuple[list[Group], list[Group]]:
    """The groups' points at the tensor-parallel sizes their accelerator's fit covers (MAX_TP), and the rest."""
    within, beyond = [], []
    for g in groups:
        inside = g.columns["tp"] <= MAX_TP.get(g.gpu, np.inf)
        within.append(g.subset(inside))
        beyond.append(g.subset(~inside))
    return [g for g in within if g], [g for g in beyond if g]


def groups(precision: str = "bf16") -> Iterator[Group]:
    """Every (accelerator, model) pair of the precision's grid that derive can read, compiled once."""
    grid = json.loads(GRIDS[precision].read_text())
    points = grid["points"]
    kv_dtype = KV_DTYPES[grid["settings"]["quant"]["kvcache_quant_mode"]]
    keys = sorted({(p["system"], p["model"]) for p in points if p["model"] in MODELS and p["system"] in SYSTEMS})
    for system, hf_name in keys:
        rows = [p for p in points if (p["system"], p["model"]) == (system, hf_name)]
        gpu, name = SYSTEMS[system], MODELS[hf_name]
        model = model_for(name)
        catalog = load_gpu(gpu)
        if catalog.link is None and gpu in LINKS:
            catalog = replace(catalog, link=LINKS[gpu])
        values, library = predictor_inputs(model, catalog, precision, fitted=False, kv_dtype=kv_dtype)
        swept = list(AXES) + list(FITTED)
        functions = {
            column: compile_expression(expr, swept, values, library, predict=True) for column, expr in OUTPUTS.items()
        }
        columns = {
            "tp": np.array([p["tp"] for p in rows], float),
            "batch": np.array([p["batch"] for p in rows], float),
            "isl": np.array([p["isl"] for p in rows], float),
            # aiconfigurator's osl counts the first token, which the prompt pass makes: osl - 1 decode steps.
            "osl": np.array([p["osl"] - 1 for p in rows], float),
            "ttft": np.array([p["ttft_ms"] for p in rows]) / 1e3,
            "tpot": np.array([p["tpot_ms"] for p in rows]) / 1e3,
        }
        yield Group(system, gpu, precision, name, bool(model.config.is_moe), columns, functions)
