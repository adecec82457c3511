"""Grid of NVIDIA aiconfigurator 0.12 static-batch latency predictions.

Writes ``benchmarks/data/aiconfigurator-0.12.json``: aiconfigurator's profiled
(offline TensorRT-LLM table) predictions of TTFT and TPOT for a static batch,
used to calibrate and test derive's predictor.  aiconfigurator is never a
product dependency; run this in a throw-away venv:

    python3 -m venv .venv-calibrate && .venv-calibrate/bin/pip install aiconfigurator==0.12.0 && .venv-calibrate/bin/python tools/aiconfigurator_grid.py

Options: ``--out PATH`` (default benchmarks/data/aiconfigurator-0.12.json),
``--no-check`` (skip the per-(system, model, tp) cross-check against the
public ``aiconfigurator.cli.api.cli_estimate(mode="static")`` entry point).

API used (read from the aiconfigurator 0.12.0 source): the same steps as
``aiconfigurator.cli.api._run_static_estimate`` (what ``aiconfigurator cli
estimate --estimate-mode static`` runs), but with the model and engine built once per
(system, model, tp) and reused for every (batch, isl):

    db = perf_database.get_database_view(system, "trtllm", <latest version>, database_mode="SILICON")
    mc = config_builders.build_model_config(tp, 1, 1, moe_tp, ep, "bfloat16", ...)
    [MoE] moe_comm_resolver.resolve_model_config_moe_comm(mc, ...)
    models.resolve_context_fmha_by_data / resolve_dsv4_moe_arch / resolve_nvfp4_for_system
    session = InferenceSession(models.get_model(path, mc, "trtllm"), db, get_backend("trtllm"))
    summary = session.run_static(RuntimeConfig(batch_size, isl=isl, osl=osl), mode="static", stride=1)

``--fp8`` runs the same grid with aiconfigurator's "fp8" profile, as ``--measured`` uses for fp8
measurements (fp8 GEMM with per-tensor dynamic activation scale, fp8 KV cache, fp8 context FMHA, 16-bit
all-reduce; MoE experts fp8), only on systems whose tables have fp8 GEMM (a MoE model is skipped where they
have no fp8 MoE; KV / context FMHA fall back to bf16 where the attention op has no fp8 table, listed in
``settings.quant_fallbacks``), and writes ``benchmarks/data/aiconfigurator-0.12-fp8.json``.

``--recipe fp8-block`` / ``--recipe nvfp4`` runs it with the GEMM and MoE modes of derive's weight recipe of
that name (formulas/recipes.toml) instead: fp8_block (128 x 128 block-scaled weights, DeepSeek's) or nvfp4,
with KV cache, context FMHA and all-reduce as the fp8 profile has them (aiconfigurator's "nvfp4" profile does
the same), on the systems whose tables have that GEMM mode (a MoE model is skipped where they have no MoE table
in it; KV / FMHA fallbacks as for --fp8), and writes ``benchmarks/data/aiconfigurator-0.12-<recipe>.json``.

``--measured`` instead runs one static estimate per published measurement in
``reports/data/measured.toml`` (same model, GPU, tp = count, batch, isl = prompt,
osl = output; dtype fp8 -> aiconfigurator's "fp8" profile, else bfloat16) and
writes ``reports/data/profiled.toml`` (``--out`` overrides; its header says what
the fields mean).

Imports only aiconfigurator and the standard library.
"""  # noqa: E501 (the one-line run command above)

from __future__ import annotations

import argparse
import importlib.metadata
import json
import math
import os
import shutil
import sys
import tempfile
import time

import aiconfigurator_common as shared

# Every system whose GPU the catalog (formulas/gpus.toml) also has: h100, h200, a100, b200, gb200, l40s.
# gb200 is a GB200 NVL72 GPU (tp 8 spans two 4-GPU trays over the rack's NVLink switch); l40s talks over PCIe 4.0.
SYSTEMS = ["h100_sxm", "h200_sxm", "a100_sxm", "b200_sxm", "gb200", "l40s"]
BACKEND = "trtllm"
# HF ids; aiconfigurator names its models by HF id.
MODELS = [
    "meta-llama/Meta-Llama-3.1-8B",
    "meta-llama/Meta-Llama-3.1-70B",
    "meta-llama/Llama-2-7b-hf",
    "meta-llama/Llama-2-13b-hf",
    "meta-llama/Llama-2-70b-hf",
    "mistralai/Mistral-7B-v0.1",
    "Qwen/Qwen2.5-7B",
    "Qwen/Qwen3-8B",
    "Qwen/Qwen3-32B",
    "mistralai/Mixtral-8x7B-v0.1",
    "Qwen/Qwen3-30B-A3B",
    "openai/gpt-oss-20b",
    "deepseek-ai/DeepSeek-V3",
]
TP_ONLY_8 = {"deepseek-ai/DeepSeek-V3"}
TPS = [1, 2, 4, 8]
BATCHES = [1, 4, 16, 64, 256]
ISLS = [128, 1024, 4096]
OSL = 128
# stride=1: every decode step is evaluated (the CLI default 32 interpolates the
# osl sweep; the difference is ~1e-5 relative, and stride 1 costs < 1 ms here).
STRIDE = 1
# Unquantized: bf16 GEMM/MoE weights+activations, bf16 KV cache, bf16 FMHA,
# half-precision all-reduce.  (aiconfigurator's trtllm tables use bf16 as the
# 16-bit format; fp16 and bf16 cost the same on these GPUs.)
QUANT = shared.BF16_QUANT

# Models whose config aiconfigurator 0.12 does not ship (it would download them from the Hub; this
# script runs offline): the project already holds their published Hugging Face config.json files.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROJECT_CONFIGS = {
    "meta-llama/Llama-2-7b-hf": os.path.join(_ROOT, "formulas", "models", "llama2-7b.json"),
    "meta-llama/Llama-2-13b-hf": os.path.join(_ROOT, "formulas", "models", "llama2-13b.json"),
    "meta-llama/Llama-2-70b-hf": os.path.join(_ROOT, "formulas", "models", "llama2-70b.json"),
    "mistralai/Mistral-7B-v0.1": os.path.join(_ROOT, "formulas", "models", "mistral-7b.json"),
    "Qwen/Qwen2.5-7B": os.path.join(_ROOT, "benchmarks", "data", "configs", "qwen2.5-7b", "config.json"),
}


def project_config(hf_id: str) -> dict:
    """The published config.json the project holds for `hf_id`, without the project's own `_source` note."""
    with open(PROJECT_CONFIGS[hf_id]) as f:
        return {k: v for k, v in json.load(f).items() if not k.startswith("_")}


MEANING = {
    "system": "aiconfigurator system name (one GPU type; tp GPUs of it in one NVLink node)",
    "backend": "aiconfigurator backend whose kernel tables are used (TensorRT-LLM)",
    "version": (
        "TensorRT-LLM database version: the newest one aiconfigurator 0.12.0 ships for the system (its 'current' slot)"
    ),
    "model": "aiconfigurator model name = HuggingFace id (top-level 'models' says where each config came from)",
    "tp": "tensor-parallel size of attention and dense layers; pp = 1, attention dp = 1, no context parallelism",
    "moe_tp": "tensor-parallel size of the MoE experts (= tp: experts sharded, not distributed); null for dense",
    "ep": "expert-parallel size (1 for MoE); null for dense models",
    "batch": "static batch size: batch requests prefilled together, then decoded together until all have osl tokens",
    "isl": "input (prompt) tokens per request; no prefix caching",
    "osl": "output tokens per request, counting the first token produced by the prefill",
    "ttft_ms": (
        "context (prefill) phase latency: ONE forward pass over the whole batch of prompts (batch*isl tokens) "
        "ending with the LM head on the last position of each sequence, i.e. it yields the first output token. "
        "It does NOT include any generation step, queueing, scheduling, tokenisation or network. Sum of per-op "
        "latencies (embedding, GEMMs, attention, norms, activation, all-reduces, logits)."
    ),
    "tpot_ms": (
        "generation_ms / (osl - 1): mean latency of one decode step over the osl - 1 decode steps that produce "
        "tokens 2..osl. Each step decodes one token for every sequence of the batch; the KV cache grows step by "
        "step (step i attends over ~isl + i tokens) and every step is evaluated (stride 1), so this is the exact "
        "mean over a growing KV cache, not the latency at one context length. Small (<~6%) non-monotonic dips "
        "(e.g. tpot at batch 4 or isl 4096 below batch 1 / isl 1024) come from aiconfigurator's measured "
        "decode-attention tables, not from this script."
    ),
    "generation_ms": (
        "total generation phase latency = tpot_ms * (osl - 1); static-batch request latency = ttft_ms + generation_ms"
    ),
    "mem_gib": (
        "aiconfigurator's estimated peak memory per GPU in GiB (weights + activations at the prefill peak + KV "
        "cache for batch*(isl+osl) tokens + NCCL/runtime overhead). Points with mem_gib >= GPU capacity "
        "(aiconfigurator's OOM flag) are not recorded."
    ),
    "kv_cache_oom": (
        "aiconfigurator's KV-budget flag: true when the batch's KV cache exceeds TensorRT-LLM's KV pool "
        "(free_gpu_memory_fraction 0.9 of the memory left after weights/activations). The batch fits in total "
        "memory but a real TRT-LLM server would not admit it all at once; latencies are still the static estimate."
    ),
    "silicon_frac_ctx": (
        "fraction of ttft_ms priced from measured silicon tables; the rest is aiconfigurator's empirical formula "
        "fallback (norms, activation and embedding are always empirical) or 'mixed' (e.g. attention shapes "
        "partly outside the tables)"
    ),
    "silicon_frac_gen": "same as silicon_frac_ctx, for generation_ms",
}


def _r(x: float, nd: int = 4) -> float:
    return float(round(float(x), nd))


def _silicon_frac(lat: dict, src: dict) -> float | None:
    total = sum(lat.values())
    if total <= 0:
        return None
    return _r(sum(v for k, v in lat.items() if src.get(k) == "silicon") / total, 3)


def _why(e: Exception, core_dir: str) -> str:
    """The exception in 300 characters, its table paths relative to site-packages (the same in any venv)."""
    text = str(e).replace(os.path.dirname(core_dir) + os.sep, "")
    return f"{type(e).__name__}: {text[:300]}"


def resolve_model_path(hf_id: str, tmp_root: str, aic_common, core_dir: str):
    """Return (model_path, config_source) or (None, reason)."""
    if hf_id in aic_common.DefaultHFModels:
        return hf_id, "bundled with aiconfigurator (model_configs/, DefaultHFModels)"
    bundled = os.path.join(core_dir, "model_configs", hf_id.replace("/", "--") + "_config.json")
    target = os.path.join(tmp_root, hf_id.replace("/", "--"))
    if os.path.isfile(bundled):
        os.makedirs(target, exist_ok=True)
        shutil.copyfile(bundled, os.path.join(target, "config.json"))
        return target, "aiconfigurator model_configs/ file (shipped but not in DefaultHFModels), loaded as a local dir"
    if hf_id in PROJECT_CONFIGS:
        os.makedirs(target, exist_ok=True)
        with open(os.path.join(target, "config.json"), "w") as f:
            json.dump(dict(project_config(hf_id), _name_or_path=hf_id), f)
        return target, (
            "the published HF config.json the project holds (formulas/models, benchmarks/data/configs; not "
            "shipped by aiconfigurator), loaded as a local dir"
        )
    return None, "no config available offline"


# ---------------------------------------------------------------------------
# --measured: aiconfigurator's estimate for each published measurement.

MEASURED_MODELS = {"llama2-70b": "meta-llama/Llama-2-70b-hf", "llama2-7b": "meta-llama/Llama-2-7b-hf"}
MEASURED_SYSTEMS = {"h100": "h100_sxm", "a100": "a100_sxm"}
# aiconfigurator's own "fp8" profile (aiconfigurator.sdk.task_v1_compat._PROFILE_TO_QUANT): fp8 GEMM
# (per-tensor, dynamic activation scale), fp8 KV cache, fp8 context FMHA, 16-bit all-reduce (its trtllm
# nccl tables hold only half/int8).
QUANT_FP8 = dict(QUANT, gemm_quant_mode="fp8", kvcache_quant_mode="fp8", fmha_quant_mode="fp8")
DTYPE_QUANT = {"fp8": QUANT_FP8, "bf16": QUANT, "fp16": QUANT, "bfloat16": QUANT, "float16": QUANT}
MEASURED_SOURCE = "NVIDIA aiconfigurator 0.12.0 (pip), TensorRT-LLM backend tables, static mode"
# --fp8 grid: the same "fp8" profile, with the MoE experts in fp8 too (moe_quant_mode matters for MoE only).
QUANT_FP8_GRID = dict(QUANT_FP8, moe_quant_mode="fp8")
# --recipe grids: derive's recipe -> aiconfigurator's GEMM and MoE mode for it; the rest as the fp8 profile.
RECIPE_MODES = {"fp8-block": "fp8_block", "nvfp4": "nvfp4"}
# Why a GPU has no tables in a GEMM mode. aiconfigurator would price nvfp4 off Blackwell as weight-only nvfp4_wo
# (resolve_nvfp4_for_system: bf16 tables scaled by a transfer ladder), which is no table of its own.
NO_TENSOR_CORES = {"fp8": "FP8", "fp8_block": "FP8", "nvfp4": "FP4"}


def _gemm_missing(db, version: str, mode: str = "fp8") -> str | None:
    """Why `db` cannot price GEMMs in `mode` at all (no tables in it), else None."""
    gemm = db.supported_quant_mode.get("gemm", [])
    if mode in gemm:
        return None
    why = f"the GPU has no {NO_TENSOR_CORES[mode]} tensor cores"
    return f"its {BACKEND} {version} tables have no {mode} GEMM (gemm modes {gemm}); {why}"


def _fp8_quant(db, version: str, path: str, moe: bool = False, mode: str = "fp8"):
    """aiconfigurator's "fp8" profile resolved against `db`'s tables for the model at `path`, GEMMs in `mode`.

    Returns (quant, notes, skip_reason): `mode` GEMM (+ `mode` MoE experts for a MoE model), fp8 KV cache unless
    the model's generation-attention op has no fp8-KV table, fp8 context FMHA unless its context-attention op
    has no fp8 table jointly with that KV mode (each fallback to bf16 is described in notes); skip_reason is
    set (and quant None) when there is no `mode` GEMM, or no `mode` MoE table for a MoE model.
    """
    from aiconfigurator.sdk import common as aic_common
    from aiconfigurator.sdk.models import attention_op_keys
    from aiconfigurator.sdk.perf_database import context_fmha_supported_modes
    from aiconfigurator.sdk.utils import get_model_config_from_model_path

    reason = _gemm_missing(db, version, mode)
    if reason:
        return None, [], reason
    sq = db.supported_quant_mode
    quant, notes = dict(QUANT_FP8, gemm_quant_mode=mode), []
    if moe:
        if mode not in sq.get("moe", []):
            return None, [], f"its {BACKEND} {version} tables have no {mode} MoE (moe modes {sq.get('moe', [])})"
        quant["moe_quant_mode"] = mode
    arch = get_model_config_from_model_path(path)["architecture"]
    ctx_op, gen_op = attention_op_keys(aic_common.ARCHITECTURE_TO_MODEL_FAMILY[arch], BACKEND)
    if "fp8" not in sq.get(gen_op, []):
        quant["kvcache_quant_mode"] = "bfloat16"
        notes.append(f"no fp8-KV {gen_op} table: KV cache fell back to bf16")
    kv = aic_common.KVCacheQuantMode[quant["kvcache_quant_mode"]]
    if "fp8" not in context_fmha_supported_modes(db, ctx_op, kv):
        quant["fmha_quant_mode"] = "bfloat16"
        notes.append(f"no fp8 {ctx_op} table with {kv.name} KV: context FMHA fell back to bf16")
    return quant, notes, None


def _sig(x: float, digits: int = 4) -> str:
    """x to `digits` significant digits, never in exponent form."""
    if x == 0:
        return "0"
    dec = max(0, digits - 1 - math.floor(math.log10(abs(x))))
    return f"{x:.{dec}f}"


def _toml_str(s: str) -> str:
    return json.dumps(s)  # a JSON string (ASCII, JSON escapes) is a valid TOML basic string


def _measured_header(aic_version: str, versions: dict, n: int) -> str:
    dbs = ", ".join(f"{s}: {BACKEND} {v}" for s, v in sorted(versions.items()))
    return f"""\
# aiconfigurator's profiled (offline kernel-table) estimate for each published measurement in
# reports/data/measured.toml, same configuration: model, GPU, tensor-parallel size = count, batch,
# isl = prompt, osl = output, precision = dtype.  {n} entries, one per measurement id.
#
# Generated by `/tmp/aic/bin/python tools/aiconfigurator_grid.py --measured`, i.e.
#   python3 -m venv .venv-calibrate && .venv-calibrate/bin/pip install aiconfigurator==0.12.0
#   .venv-calibrate/bin/python tools/aiconfigurator_grid.py --measured
# Do not edit by hand.  aiconfigurator {aic_version}; databases (the newest each system ships, SILICON
# mode): {dbs}.
#
# Settings: InferenceSession.run_static(RuntimeConfig(batch, isl, osl), mode="static", stride=1) -- a
# static batch: all `batch` prompts prefilled in one pass, then decoded together until each has osl
# tokens.  pp = 1, attention dp = 1, no prefix caching, no speculative decoding.  Models: Llama-2 HF
# config.json fields embedded in the script (aiconfigurator 0.12 does not ship them).
# Quant: dtype fp8 -> aiconfigurator's "fp8" profile (fp8 GEMM with per-tensor dynamic activation
# scaling, fp8 KV cache, fp8 context FMHA, 16-bit all-reduce); bf16 / fp16 -> bfloat16 everywhere
# (aiconfigurator's trtllm tables use bf16 as the 16-bit format).
#
# Fields (quantities are strings with units, for pint):
#   id        the measurement's id in measured.toml
#   system    aiconfigurator system (tp GPUs of it in one NVLink node); database = backend + version
#   quant     the quant modes aiconfigurator actually ran with (from its result row)
#   ttft      context-phase latency: ONE forward pass over the whole batch (batch*isl tokens) ending
#             with the first output token of every sequence; no queueing, tokenisation or network
#   tpot      generation time / (osl - 1): mean decode step over a growing KV cache, every step
#             evaluated; absent when osl = 1 (no decode step)
#   e2e       ttft + generation time (the static batch's request latency)
#   output_throughput_per_gpu  batch*osl / e2e / tp (static batch: the prompt pass is included)
#   note      fallbacks, aiconfigurator's memory estimate and KV-budget flag, share of latency priced
#             from measured kernel tables (silicon) rather than its empirical formulas, anything else
#   skipped   instead of the numbers: why no estimate is recorded (no tables, OOM, failure)
"""


def measured_main(args, here: str) -> int:
    import tomllib

    shared.quiet()
    t0 = time.time()
    import aiconfigurator_core
    from aiconfigurator.cli.api import cli_estimate
    from aiconfigurator.sdk import common as aic_common
    from aiconfigurator.sdk.backends.factory import get_backend
    from aiconfigurator.sdk.config import RuntimeConfig
    from aiconfigurator.sdk.config_builders import build_model_config
    from aiconfigurator.sdk.inference_session import InferenceSession
    from aiconfigurator.sdk.models import get_model, resolve_context_fmha_by_data
    from aiconfigurator.sdk.perf_database import get_database_view, get_latest_database_version

    src = os.path.join(here, "reports", "data", "measured.toml")
    out_path = args.out or os.path.join(here, "reports", "data", "profiled.toml")
    with open(src, "rb") as f:
        measurements = tomllib.load(f)["measurement"]
    aic_version = importlib.metadata.version("aiconfigurator")
    core_dir = os.path.dirname(os.path.abspath(aiconfigurator_core.__file__))
    tmp_root = tempfile.mkdtemp(prefix="aic-measured-")
    dbs, versions, sessions, entries = {}, {}, {}, []

    def database(system):
        if system not in dbs:
            version = get_latest_database_version(system=system, backend=BACKEND)
            dbs[system] = None
            if version is not None:
                dbs[system] = get_database_view(
                    system, BACKEND, version, allow_missing_data=False, database_mode="SILICON", transfer_policy=None
                )
                versions[system] = version
        return dbs[system]

    for m in measurements:
        e = {"id": m["id"]}
        entries.append(e)
        hf_id, system = MEASURED_MODELS.get(m["model"]), MEASURED_SYSTEMS.get(m["gpu"])
        quant = DTYPE_QUANT.get(m["dtype"])
        if hf_id is None or system is None or quant is None:
            e["skipped"] = f"no mapping for model {m['model']!r} / gpu {m['gpu']!r} / dtype {m['dtype']!r}"
            continue
        e["system"] = system
        db = database(system)
        if db is None:
            e["skipped"] = f"aiconfigurator {aic_version} ships no {BACKEND} database for {system}"
            continue
        e["database"] = f"{BACKEND} {versions[system]}"
        tp, b, isl, osl = m["count"], m["batch"], m["prompt"], m["output"]
        quant, notes = dict(quant), []
        path, _ = resolve_model_path(hf_id, tmp_root, aic_common, core_dir)
        if quant["gemm_quant_mode"] == "fp8":
            quant, notes, reason = _fp8_quant(db, versions[system], path)
            if reason:
                e["skipped"] = f"dtype fp8 on {system}: {reason}"
                continue
        key = (system, hf_id, tp, tuple(sorted(quant.items())))
        try:
            if key not in sessions:
                mc = build_model_config(tp, 1, 1, None, None, **quant)
                resolve_context_fmha_by_data(mc, path, db, BACKEND, is_context_role=True)
                sessions[key] = InferenceSession(get_model(path, mc, BACKEND), db, get_backend(BACKEND))
            s = sessions[key].run_static(RuntimeConfig(batch_size=b, isl=isl, osl=osl), mode="static", stride=STRIDE)
        except Exception as ex:  # noqa: BLE001 - record why and move on
            e["skipped"] = f"aiconfigurator failed: {type(ex).__name__}: {str(ex)[:300]}"
            continue
        d = s.get_result_dict()
        mem = float(d["memory"])
        if s.check_oom():
            e["skipped"] = (
                f"aiconfigurator OOM: estimated {mem:.1f} GiB per GPU for batch {b} x (isl {isl} + osl {osl}) "
                f"at tp {tp} ({d['gemm']} weights, {d['kvcache']} KV) exceeds the GPU's memory"
            )
            continue
        used = f"{d['gemm']} gemm, {d['kvcache']} kv, {d['fmha']} fmha"
        if tp > 1:
            used += f", {d['comm']} all-reduce"
        want = (quant["gemm_quant_mode"], quant["kvcache_quant_mode"], quant["fmha_quant_mode"])
        if (d["gemm"], d["kvcache"], d["fmha"]) != want:
            notes.append(f"aiconfigurator changed the requested quant modes {want}")
        ttft, gen = float(d["ttft"]), float(d["generation_latency"])
        e2e = ttft + gen
        thr = b * osl / (e2e / 1e3) / tp
        if abs(thr - float(d["tokens/s/gpu"])) > 1e-6 * thr or abs(e2e - float(d["request_latency"])) > 1e-6 * e2e:
            print(f"  {m['id']}: throughput / latency disagree with aiconfigurator's row", file=sys.stderr)
            return 1
        e["quant"] = used
        e["ttft"] = f"{_sig(ttft)} ms"
        if osl > 1:
            e["tpot"] = f"{_sig(gen / (osl - 1))} ms"
        else:
            notes.append("osl = 1: prefill only, no decode step, so no tpot (e2e = ttft)")
        e["e2e"] = f"{_sig(e2e / 1e3)} s"
        e["output_throughput_per_gpu"] = f"{_sig(thr)} token/s"
        notes.append(f"memory estimate {mem:.1f} GiB per GPU")
        if s.check_kv_cache_oom():
            notes.append(
                "kv_cache_oom: the batch's KV cache exceeds TensorRT-LLM's KV pool (0.9 of free memory); "
                "a real server would not admit the whole batch at once"
            )
        fc = _silicon_frac(s.get_context_latency_dict(), s.get_context_source_dict())
        fg = _silicon_frac(s.get_generation_latency_dict(), s.get_generation_source_dict())
        notes.append(f"silicon-table share of ttft {fc:.0%}" + (f", of generation {fg:.0%}" if fg is not None else ""))
        if quant["gemm_quant_mode"] == "fp8":
            # Sensitivity: aiconfigurator's default for a per-tensor FP8 checkpoint without a dynamic flag
            # (ModelOpt, as TensorRT-LLM's FP8 engines of the time) is fp8_static, priced from the
            # dynamic-fp8 GEMM tables plus its compute_scale / scale_matrix tables.
            skey = key + ("fp8_static",)
            try:
                if skey not in sessions:
                    mc = build_model_config(tp, 1, 1, None, None, **dict(quant, gemm_quant_mode="fp8_static"))
                    resolve_context_fmha_by_data(mc, path, db, BACKEND, is_context_role=True)
                    sessions[skey] = InferenceSession(get_model(path, mc, BACKEND), db, get_backend(BACKEND))
                ss = sessions[skey].run_static(
                    RuntimeConfig(batch_size=b, isl=isl, osl=osl), mode="static", stride=STRIDE
                )
                ds = ss.get_result_dict()
                alt = f"ttft {_sig(float(ds['ttft']))} ms"
                if osl > 1:
                    alt += f", tpot {_sig(float(ds['generation_latency']) / (osl - 1))} ms"
                notes.append(f"with fp8_static gemm (per-tensor static activation scale): {alt}")
            except Exception as ex:  # noqa: BLE001
                notes.append(f"fp8_static gemm variant failed: {type(ex).__name__}")
        if not args.no_check:
            r = cli_estimate(
                path,
                system,
                mode="static",
                backend_name=BACKEND,
                backend_version=versions[system],
                batch_size=b,
                isl=isl,
                osl=osl,
                tp_size=tp,
                stride=STRIDE,
                **quant,
            )
            rel = abs(r.ttft - ttft) / ttft
            if osl > 1:
                rel = max(rel, abs(r.tpot - float(d["tpot"])) / float(d["tpot"]))
            if rel > 1e-9:
                print(f"  CHECK MISMATCH {m['id']}: {rel:.3g}", file=sys.stderr)
                return 1
            notes.append("matches aiconfigurator.cli.api.cli_estimate(mode='static')")
        e["note"] = "; ".join(notes)
        e["source"] = MEASURED_SOURCE
        print(f"  {m['id']}: {e.get('ttft')} {e.get('tpot')} {e['output_throughput_per_gpu']}", flush=True)

    shutil.rmtree(tmp_root, ignore_errors=True)
    lines = [_measured_header(aic_version, versions, len(entries))]
    order = ["id", "system", "database", "quant", "ttft", "tpot", "e2e", "output_throughput_per_gpu"]
    order += ["note", "skipped", "source"]
    for e in entries:
        lines.append("\n[[profiled]]\n")
        for k in order:
            if k in e:
                lines.append(f"{k} = {_toml_str(e[k])}\n")
        if "skipped" in e:
            print(f"  {e['id']}: skipped: {e['skipped']}", flush=True)
    text = "".join(lines)
    assert [p["id"] for p in tomllib.loads(text)["profiled"]] == [m["id"] for m in measurements]
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    with open(out_path, "w") as f:
        f.write(text)
    print(f"{len(entries)} entries -> {out_path} in {time.time() - t0:.0f} s")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--out", default=None, help="output path (default depends on the mode)")
    ap.add_argument("--no-check", action="store_true")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument(
        "--measured",
        action="store_true",
        help="estimate each reports/data/measured.toml configuration; write reports/data/profiled.toml",
    )
    mode.add_argument(
        "--fp8",
        action="store_true",
        help="the same grid with aiconfigurator's fp8 profile; write benchmarks/data/aiconfigurator-0.12-fp8.json",
    )
    mode.add_argument(
        "--recipe",
        choices=sorted(RECIPE_MODES),
        help="fp8 profile, GEMMs and MoE in the recipe's mode; write benchmarks/data/aiconfigurator-0.12-<recipe>.json",
    )
    args = ap.parse_args(argv)
    if args.measured:
        return measured_main(args, here)
    # The precision the grid is in ("fp8", a recipe, or None for bf16) and aiconfigurator's GEMM mode for it.
    label = "fp8" if args.fp8 else args.recipe
    gemm_mode = RECIPE_MODES.get(label, label)
    if args.out is None:
        name = f"aiconfigurator-0.12-{label}.json" if label else "aiconfigurator-0.12.json"
        args.out = os.path.join(here, "benchmarks", "data", name)

    shared.quiet()
    t0 = time.time()
    import aiconfigurator_core
    from aiconfigurator.cli.api import cli_estimate
    from aiconfigurator.sdk import common as aic_common
    from aiconfigurator.sdk.backends.factory import get_backend
    from aiconfigurator.sdk.config import RuntimeConfig
    from aiconfigurator.sdk.config_builders import build_model_config
    from aiconfigurator.sdk.inference_session import InferenceSession
    from aiconfigurator.sdk.models import (
        check_is_moe,
        get_model,
        resolve_context_fmha_by_data,
        resolve_dsv4_moe_arch,
        resolve_nvfp4_for_system,
    )
    from aiconfigurator.sdk.moe_comm_resolver import resolve_model_config_moe_comm
    from aiconfigurator.sdk.perf_database import get_database_view, get_latest_database_version
    from aiconfigurator.sdk.utils import get_model_config_from_model_path

    aic_version = importlib.metadata.version("aiconfigurator")
    core_dir = os.path.dirname(os.path.abspath(aiconfigurator_core.__file__))
    tmp_root = tempfile.mkdtemp(prefix="aic-grid-")
    points, skipped, models_meta, versions, fallbacks = [], [], {}, {}, []
    n_checked, max_check_err = 0, 0.0

    def skip(system, model, tp, reason):
        skipped.append({"system": system, "model": model, "tp": tp, "reason": reason})
        print(f"  skip {system} {model} tp={tp}: {reason}", flush=True)

    # Resolve models once.
    resolved = {}
    for hf_id in MODELS:
        path, source = resolve_model_path(hf_id, tmp_root, aic_common, core_dir)
        if path is None:
            skip(None, hf_id, None, source)
            continue
        try:
            info = get_model_config_from_model_path(path)
        except ValueError as e:  # unsupported architecture
            skip(None, hf_id, None, f"aiconfigurator {aic_version} rejects the config: {str(e)[:120]}")
            continue
        arch = info["architecture"]
        resolved[hf_id] = (path, info, check_is_moe(path))
        models_meta[hf_id] = {"config_source": source, "architecture": arch, "moe": resolved[hf_id][2]}

    for system in SYSTEMS:
        version = get_latest_database_version(system=system, backend=BACKEND)
        db = None
        if version is not None:
            db = get_database_view(
                system, BACKEND, version, allow_missing_data=False, database_mode="SILICON", transfer_policy=None
            )
        if db is None:
            skip(system, None, None, f"no {BACKEND} database in the installed aiconfigurator")
            continue
        if gemm_mode and (reason := _gemm_missing(db, version, gemm_mode)):
            skip(system, None, None, f"{label}: {reason}")
            continue
        versions[system] = version
        print(f"{system}: {BACKEND} {version}", flush=True)
        t_system = time.time()
        backend = get_backend(BACKEND)
        for hf_id, (path, info, moe) in resolved.items():
            quant = QUANT
            if gemm_mode:
                quant, notes, reason = _fp8_quant(db, version, path, moe, gemm_mode)
                if reason:
                    skip(system, hf_id, None, f"{label}: {reason}")
                    continue
                fallbacks.extend({"system": system, "model": hf_id, "note": n} for n in notes)
            for tp in TPS:
                if hf_id in TP_ONLY_8 and tp != 8:
                    continue
                n, n_kv = info["n"], info["n_kv"] or info["n"]
                if n % tp or (n_kv % tp and tp % n_kv):
                    continue  # heads not divisible: not a valid TP config, recorded nowhere
                moe_tp, ep = (tp, 1) if moe else (None, None)
                try:
                    mc = build_model_config(tp, 1, 1, moe_tp, ep, **quant)
                    if moe:
                        resolve_model_config_moe_comm(
                            mc,
                            model_path=path,
                            backend_name=BACKEND,
                            database=db,
                            required_phases=("context", "generation"),
                            fmha_quant_mode_explicit=True,
                            kvcache_quant_mode_explicit=True,
                        )
                    if mc.moe_comm_backend is None:
                        resolve_context_fmha_by_data(mc, path, db, BACKEND, is_context_role=True)
                    resolve_dsv4_moe_arch(mc, path, system_name=system, backend_name=BACKEND)
                    resolve_nvfp4_for_system(mc, system, path, backend_name=BACKEND)
                    model = get_model(path, mc, BACKEND)
                    session = InferenceSession(model, db, backend)
                except Exception as e:  # noqa: BLE001 - record why and move on
                    skip(system, hf_id, tp, f"model build failed: {_why(e, core_dir)}")
                    continue
                got, n_oom, last, err = [], 0, None, None
                for isl in ISLS:
                    for b in BATCHES:
                        try:
                            s = session.run_static(
                                RuntimeConfig(batch_size=b, isl=isl, osl=OSL), mode="static", stride=STRIDE
                            )
                        except Exception as e:  # noqa: BLE001
                            err = _why(e, core_dir)
                            break
                        if s.check_oom():
                            n_oom += 1
                            continue
                        d = s.get_result_dict()
                        q = (d["gemm"], d["moe"], d["kvcache"], d["fmha"], d["comm"])
                        want = tuple(quant[k] for k in ("gemm_quant_mode", "moe_quant_mode", "kvcache_quant_mode"))
                        want += (quant["fmha_quant_mode"],)
                        if q[2] != want[2] or q[0] != want[0] or (moe and q[1] != want[1]) or q[3] != want[3]:
                            err = f"aiconfigurator switched quant modes to {q}"
                            break
                        ctx_l, gen_l = s.get_context_latency_dict(), s.get_generation_latency_dict()
                        got.append(
                            {
                                "system": system,
                                "backend": BACKEND,
                                "version": version,
                                "model": hf_id,
                                "tp": tp,
                                "moe_tp": d["moe_tp"] if moe else None,
                                "ep": d["moe_ep"] if moe else None,
                                "batch": b,
                                "isl": isl,
                                "osl": OSL,
                                "ttft_ms": _r(d["ttft"]),
                                "tpot_ms": _r(d["tpot"]),
                                "generation_ms": _r(d["generation_latency"]),
                                "mem_gib": _r(d["memory"], 2),
                                "kv_cache_oom": bool(s.check_kv_cache_oom()),
                                "silicon_frac_ctx": _silicon_frac(ctx_l, s.get_context_source_dict()),
                                "silicon_frac_gen": _silicon_frac(gen_l, s.get_generation_source_dict()),
                            }
                        )
                        last = (b, isl, d["ttft"], d["tpot"])
                    if err:
                        break
                if err:
                    skip(system, hf_id, tp, f"estimate failed: {err}")
                    continue
                if not got:
                    skip(system, hf_id, tp, f"OOM at every point ({n_oom} points; aiconfigurator memory check)")
                    continue
                if not args.no_check:
                    b, isl, ttft, tpot = last
                    r = cli_estimate(
                        path,
                        system,
                        mode="static",
                        backend_name=BACKEND,
                        backend_version=version,
                        batch_size=b,
                        isl=isl,
                        osl=OSL,
                        tp_size=tp,
                        moe_tp_size=moe_tp,
                        moe_ep_size=ep,
                        stride=STRIDE,
                        **quant,
                    )
                    rel = max(abs(r.ttft - ttft) / ttft, abs(r.tpot - tpot) / tpot)
                    max_check_err = max(max_check_err, rel)
                    n_checked += 1
                    if rel > 1e-9:
                        print(f"  CHECK MISMATCH {system} {hf_id} tp={tp}: {rel:.3g}", file=sys.stderr)
                        return 1
                points.extend(got)
                print(f"  {hf_id} tp={tp}: {len(got)} points ({n_oom} OOM skipped)", flush=True)
        print(f"{system}: {time.time() - t_system:.0f} s", flush=True)

    shutil.rmtree(tmp_root, ignore_errors=True)
    points.sort(key=lambda p: (p["system"], p["model"], p["tp"], p["isl"], p["batch"]))
    out = {
        "source": "NVIDIA aiconfigurator 0.12.0 (pip), TensorRT-LLM backend offline tables, static mode",
        "generated_by": "tools/aiconfigurator_grid.py",
        "aiconfigurator_version": aic_version,
        "database_versions": versions,
        "settings": {
            "mode": "static (InferenceSession.run_static, mode='static', stride=1)",
            "database_mode": "SILICON",
            "quant": dict(QUANT_FP8_GRID, gemm_quant_mode=gemm_mode, moe_quant_mode=gemm_mode) if gemm_mode else QUANT,
            "pp": 1,
            "attention_dp": 1,
            "cp": 1,
            "prefix": 0,
            "beam_width": 1,
            "speculative_decoding": "none (nextn=0)",
            "latency_correction_scale": 1.0,
            "moe_parallel": "moe_tp = tp, ep = 1",
            "grid": {
                "tp": TPS,
                "batch": BATCHES,
                "isl": ISLS,
                "osl": OSL,
                "note": "tp with num_attention_heads % tp != 0 (or kv heads neither dividing nor divisible "
                "by tp) is not run; DeepSeek-V3 only at tp 8",
            },
            "crosscheck": (
                "last point of each (system, model, tp) re-run through "
                f"aiconfigurator.cli.api.cli_estimate(mode='static'): {n_checked} checked, "
                f"max relative difference {max_check_err:.1e}"
            )
            if n_checked
            else "not run",
        },
        "models": models_meta,
        "skipped": sorted(skipped, key=lambda s: json.dumps(s, sort_keys=True)),
        "meaning": MEANING,
    }
    if args.fp8:
        out["source"] += ", fp8 quantisation"
        out["settings"]["quant_profile"] = (
            "aiconfigurator's 'fp8' profile, as --measured uses for fp8 measurements: fp8 GEMM (per-tensor, "
            "dynamic activation scale), fp8 KV cache, fp8 context FMHA, 16-bit (half) all-reduce (the trtllm "
            "nccl tables hold only half/int8); MoE models also run fp8 experts (moe_quant_mode). Only systems "
            "whose tables have fp8 GEMM are run; a MoE model is skipped where the tables have no fp8 MoE; KV "
            "and context FMHA fall back to bf16 where the model's attention op has no fp8 table "
            "(quant_fallbacks). Every recorded point ran with exactly these modes (checked on its result row)."
        )
    if args.recipe:
        out["source"] += f", {gemm_mode} quantisation (derive's {args.recipe} recipe)"
        out["settings"]["quant_profile"] = (
            f"derive's {args.recipe} weight recipe (formulas/recipes.toml) in aiconfigurator's {gemm_mode} modes: "
            f"{gemm_mode} GEMM, {gemm_mode} MoE experts (moe_quant_mode); KV cache, context FMHA and all-reduce as "
            "its 'fp8' profile has them (fp8 KV, fp8 context FMHA, 16-bit (half) all-reduce), as its 'nvfp4' "
            f"profile does too. Only systems whose tables have {gemm_mode} GEMM are run; a MoE model is skipped "
            f"where the tables have no {gemm_mode} MoE; KV and context FMHA fall back to bf16 where the model's "
            "attention op has no fp8 table (quant_fallbacks). Every recorded point ran with exactly these modes "
            "(checked on its result row)."
        )
    if gemm_mode:
        out["settings"]["quant_fallbacks"] = sorted(fallbacks, key=lambda f: (f["system"], f["model"], f["note"]))
    out["points"] = points
    shared.write_json(out, args.out)
    by = {}
    for p in points:
        by.setdefault((p["system"], p["model"]), 0)
        by[(p["system"], p["model"])] += 1
    for (s, m), c in sorted(by.items()):
        print(f"{s:10s} {m:32s} {c}")
    print(f"{len(points)} points -> {args.out} in {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
