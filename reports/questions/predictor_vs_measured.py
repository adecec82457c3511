"""Seed 004, question 15: the roofline TTFT/TPOT predictor held against published measurements."""

from __future__ import annotations

import tomllib
from functools import partial
from pathlib import Path

import sympy

from derive import figures as plots
from derive.answers import Answer, FollowUp, Inputs, Question
from derive.core.errors import DeriveError
from derive.core.evaluation import evaluate
from derive.core.sheet import Figure, Prose, Quantity, Section, Table, Work
from derive.core.units import format_quantity, parse_quantity
from derive.derivations.common import model_library
from derive.derivations.costs import predict
from formulas import prefill as pf
from formulas import step_budget as sb

DATA = Path(__file__).resolve().parent.parent / "data" / "measured.toml"
PROFILED = DATA.with_name("profiled.toml")  # aiconfigurator 0.12 at each measurement's configuration


def measurements() -> list[dict]:  # type: ignore[type-arg]
    with DATA.open("rb") as fh:
        return tomllib.load(fh)["measurement"]


def profiled() -> dict[str, dict]:  # type: ignore[type-arg]
    with PROFILED.open("rb") as fh:
        return {row["id"]: row for row in tomllib.load(fh)["profiled"]}


def side_by_side(entry: dict, sheet, measured: sympy.Expr) -> dict[str, Quantity]:  # type: ignore[no-untyped-def,type-arg]
    """The floor, the calibrated estimate and aiconfigurator's profiled value of the measured figure, and errors."""
    row = profiled()[entry["id"]]
    kind = entry["kind"]
    if kind.startswith("output_throughput"):
        unit, tokens = "token/second", sympy.Integer(entry["batch"] * entry["output"]) / entry["count"]
        floor = sheet.results["predicted"].value
        calibrated = tokens / sheet.results["e2e_latency"].value
        aic = parse_quantity(row["output_throughput_per_gpu"], unit, f"profiled.toml {entry['id']}")
    else:
        unit = "second"
        key = "ttft" if kind == "ttft" else "e2e_latency"
        floor, calibrated = sheet.results[f"{key}_floor"].value, sheet.results[key].value
        aic = parse_quantity(row["ttft" if kind == "ttft" else "e2e"], unit, f"profiled.toml {entry['id']}")
    out = {"measured": Quantity(measured, unit)}
    for name, value in (("floor", floor), ("calibrated", calibrated), ("profiled", aic)):
        out[name] = Quantity(value, unit)
        out[f"{name}_error"] = Quantity((value / measured - 1) * 100)
    return out


def _setup_for(entry: dict, inputs: Inputs, dtype: str | None = None):  # type: ignore[no-untyped-def,type-arg]
    """The setup one measurement ran at; `dtype` predicts it in another precision (its cache follows)."""
    return inputs.setup(
        model=entry["model"],
        gpu=entry["gpu"],
        dtype=dtype or entry["dtype"],
        kv_dtype=None,
        tp=entry["count"],
        batch=entry["batch"],
        prompt=entry["prompt"],
        output=entry["output"],
    )


def held_against(entry: dict, inputs: Inputs):  # type: ignore[no-untyped-def,type-arg]
    """The predictor's sheet for one measurement, with the measured value and the implied efficiency."""
    setup = _setup_for(entry, inputs)
    sheet = predict(setup)
    work = Work(sheet, model_library(setup.model))
    kind = entry["kind"]
    work.heading("Against the measurement")
    if kind.startswith("output_throughput"):
        value = parse_quantity(entry["value"], "token/second", f"measured.toml {entry['id']}")
        if kind == "output_throughput_system":  # the whole TP group: per accelerator is a share of it
            value = value / entry["count"]
            note = f"{entry['value']} for the whole TP group, over n accelerators ({entry['source']})"
        else:
            note = f"published per GPU ({entry['source']})"
        work.given(sb.R_m, value, note)
        measured = value
        work.compute(sb.static_batch_output_throughput_per_gpu, "predicted")
        eta = work.compute(sb.throughput_efficiency, "efficiency")
    else:
        measured = parse_quantity(entry["value"], "second", f"measured.toml {entry['id']}")
        work.given(sb.T_m, measured, f"published ({entry['source']})")
        formula = sb.ttft_efficiency if kind == "ttft" else sb.e2e_efficiency
        work.result(
            "predicted", pf.ttft if kind == "ttft" else pf.e2e, sheet.values[pf.ttft if kind == "ttft" else pf.e2e]
        )
        eta = work.compute(formula, "efficiency")
    if eta > 1:
        raise DeriveError(
            f"measurement {entry['id']} beats the roofline bound ({float(eta):.2f} of it)",
            "The comparison is wrong: check the dtype, per-GPU against whole-system and prefill time",
        )
    work.note(
        f"{entry['id']}: {entry['metric']}, {entry['parallelism']}, {entry['precision']}; "
        f"the measurement reaches {format_quantity(eta * 100, '')} % of the roofline bound"
    )
    if entry.get("notes"):
        work.note(f"source note: {entry['notes']}")
    return setup, sheet, eta, side_by_side(entry, sheet, measured)


def _median(values: list[sympy.Expr]) -> sympy.Expr:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _draw(labels, errors, stem):  # type: ignore[no-untyped-def]
    plots.bars(stem, labels, errors, "error against the measurement (%)", "Predicted against measured")


_METRIC = {
    "output_throughput_per_gpu": "tokens/s a GPU",
    "output_throughput_system": "tokens/s a group / n",
    "ttft": "TTFT",
    "e2e_latency": "request latency",
}
_COLUMNS = (
    "run",
    "model, GPUs, dtype",
    "batch,\nin/out",
    "metric",
    "measured",
    "floor\noff %",
    "calibrated\noff %",
    "aiconfigurator\noff %",
    "of the\nfloor %",
)


def _title(entry, setup) -> str:  # type: ignore[no-untyped-def]
    return (
        f"{entry['id']}: {setup.model.title}, {entry['count']} x {setup.gpu.name}, {entry['dtype']}, "
        f"batch {entry['batch']}, {entry['prompt']} in / {entry['output']} out, {entry['metric']}"
    )


def _quantities(sheet, eta):  # type: ignore[no-untyped-def]
    measured_unit = "token/second" if sb.R_m in sheet.values else "second"
    return {
        "measured": Quantity(sheet.values.get(sb.R_m, sheet.values.get(sb.T_m)), measured_unit),
        "predicted": Quantity(sheet.results["predicted"].value, sheet.results["predicted"].unit),
        "eta": Quantity(eta * 100),
    }


def build(inputs: Inputs) -> Answer:
    answer = Answer(QUESTION, inputs, Prose("summary", ""))
    rows = []
    lines: list[tuple[Quantity, ...]] = []
    per_run = []
    errors: list[dict[str, sympy.Expr]] = []
    compared: dict[str, dict[str, Quantity]] = {}
    for entry in measurements():
        setup, sheet, eta, figures = held_against(entry, inputs)
        compared[entry["id"]] = figures
        rows.append((entry, setup, sheet, eta))
        errors.append({k: figures[f"{k}_error"].value for k in ("floor", "calibrated", "profiled")})
        per_run.append((entry, sheet, eta))
        q = {**_quantities(sheet, eta), **figures}
        lines.append(
            (
                Quantity(entry["id"]),
                Quantity(f"{setup.model.name}, {entry['count']}x{setup.gpu.name}, {entry['dtype']}"),
                Quantity(f"{entry['batch']}, {entry['prompt']}/{entry['output']}"),
                Quantity(_METRIC[entry["kind"]]),
                q["measured"],
                q["floor_error"],
                q["calibrated_error"],
                q["profiled_error"],
                q["eta"],
            )
        )
    # Every measurement in one list; the derivation worked in full for one throughput and one latency figure.
    worked = [
        next(row for row in rows if row[0]["kind"].startswith("output")),
        next(row for row in rows if not row[0]["kind"].startswith("output")),
    ]
    for i, (entry, setup, sheet, _eta) in enumerate(worked):
        answer.sections.append(
            Section(
                "Every measurement against its bound" if i == 0 else f"Worked: {_title(entry, setup)}",
                sheet,
                intro=(
                    (
                        Prose(
                            "text",
                            "Each published run against the floor, the calibrated estimate and aiconfigurator's "
                            "profiled figure, each one's error in per cent of the measurement, and the share of the "
                            "floor the run reaches.",
                        ),
                    )
                    if i == 0
                    else ()
                ),
                table=Table(_COLUMNS, tuple(lines)) if i == 0 else None,
                outro=(Prose("text", f"Worked above: {_title(entry, setup)}."),) if i == 0 else (),
            )
        )
    etas = [eta for *_, eta in rows]
    best = max(rows, key=lambda row: row[3])
    worst = min(rows, key=lambda row: row[3])
    throughput = [eta for entry, *_, eta in rows if entry["kind"].startswith("output")]
    latency = [eta for entry, *_, eta in rows if not entry["kind"].startswith("output")]
    q = {
        "count": Quantity(len(rows)),
        "first_id": Quantity(rows[0][0]["id"]),
        "last_id": Quantity(rows[-1][0]["id"]),
        "best": Quantity(max(etas) * 100),
        "best_id": Quantity(best[0]["id"]),
        "worst": Quantity(min(etas) * 100),
        "worst_id": Quantity(worst[0]["id"]),
        "thr_mean": Quantity(sum(throughput, sympy.Integer(0)) / len(throughput) * 100),
        "lat_mean": Quantity(sum(latency, sympy.Integer(0)) / len(latency) * 100),
    }
    for name in ("floor", "calibrated", "profiled"):
        median = _median([abs(e[name]) for e in errors])
        q[f"{name}_median"] = Quantity(median)
        answer.headline(f"{name}_median_abs_error_percent", median)
    answer.headline("max_efficiency", max(etas))
    answer.headline("min_efficiency", min(etas))
    answer.headline("mean_throughput_efficiency", q["thr_mean"].number / 100)
    answer.headline("mean_latency_efficiency", q["lat_mean"].number / 100)
    # Each run's own figures after the aggregates: the page leads with what the bank of runs says.
    for entry, sheet, eta in per_run:
        answer.headline(f"{entry['id']}_efficiency", eta)
        answer.headline(f"{entry['id']}_predicted", sheet.results["predicted"].value, sheet.results["predicted"].unit)
    labels = [f"{entry['id']}: {setup.model.name}, {entry['kind'].replace('_', ' ')}" for entry, setup, *_ in rows]
    errors_by_kind = {
        name: [float(e[kind]) for e in errors]
        for name, kind in (("floor", "floor"), ("calibrated", "calibrated"), ("aiconfigurator", "profiled"))
    }
    answer.figures.append(
        Figure(
            "errors",
            "Each predictor's error against each published measurement, in per cent of it (0 is exact).",
            partial(_draw, labels, errors_by_kind),
        )
    )
    answer.summary = Prose(
        "summary",
        "The predictor is the roofline twice: TTFT = max(weight bytes over bandwidth, prompt FLOPs at peak); "
        "TPOT = max(step bytes over bandwidth, step FLOPs at peak) at the mean context; a request takes TTFT + "
        "output·TPOT. Held against {count} published measurements (runs {first_id} to {last_id}, tabled in the "
        "appendix) in the precision each ran, per accelerator, with a static batch's prompt pass in its wall "
        "time, none beats it: measurements reach {worst} % ({worst_id}) to {best} % ({best_id}) of the bound, "
        "{thr_mean} % on average for throughput and {lat_mean} % for latency. Where it is wrong is where that "
        "efficiency is not a constant. Beside it, the calibrated estimate (the floor plus fitted per-layer, "
        "all-reduce, kernel-efficiency and elementwise terms) is off by {calibrated_median} % at the median, the "
        "floor by {floor_median} %, and aiconfigurator's profiled tables by {profiled_median} %.",
        q,
    )
    _wrong_answers(answer, inputs, rows, compared, q)
    _follow_up(answer, inputs, rows, compared, q)
    answer.takeaways += [
        Prose(
            "takeaway",
            "Wrong comparisons first: an FP8 run against a 16-bit prediction, a whole-system figure "
            "against a per-GPU one, or a static batch's output throughput without its prompt pass "
            "each makes a measurement 'beat' the floor; each run here states all three.",
        ),
        Prose(
            "takeaway",
            "The lowest efficiency, {worst} % ({worst_id}), is the first to re-check: a figure far "
            "below the rest more often means the comparison (per GPU or per system, the precision) "
            "than the server.",
            q,
        ),
        Prose(
            "takeaway",
            "The calibrated estimate carries a fixed time per layer, all-reduce latency and bandwidth, and kernels "
            "below peak, fitted on profiled kernels. It leaves out in-flight batching and scheduler overheads, "
            "speculative decoding, other software versions (these runs used TensorRT-LLM 0.6, the tables 1.0 and "
            "1.3) and a KV pool too small for the batch (m06): calibrate on the target stack, and re-measure when "
            "model, precision, TP degree or context leaves the calibrated range.",
        ),
    ]
    answer.caveats += [
        Prose(
            "caveat",
            "Datasheet peaks, tensor parallelism without its communication: the floor is a floor on time and a "
            "ceiling on throughput, never an estimate of either; the calibrated figure is the estimate, fitted to "
            "aiconfigurator's kernel tables in each run's precision (its fp8 fit for the FP8 runs) on the run's "
            "accelerator, or borrowed where that has none, as each run's notes say.",
        ),
        Prose(
            "caveat",
            "Where a source does not state the precision, the prediction uses bf16; an FP8 run would lower the floor.",
        ),
    ]
    return answer


def _wrong_answers(answer: Answer, inputs: Inputs, rows, compared, q: dict[str, Quantity]) -> None:  # type: ignore[no-untyped-def]
    """Predictors candidates commonly design, each held against the same measurements."""
    latency = [row for row in rows if not row[0]["kind"].startswith("output")]
    if latency and q["floor_median"].number > q["calibrated_median"].number:
        entry = max(latency, key=lambda row: abs(compared[row[0]["id"]]["floor_error"].number))[0]
        figures = compared[entry["id"]]
        q.update(lat_id=Quantity(entry["id"]), lat_floor=figures["floor"], lat_measured=figures["measured"])
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Stopping at the pure roofline, with no fixed time per step or layer: it is off by {floor_median} % "
                "at the median here, and for "
                + ("{lat_id}'s single request" if entry["batch"] == 1 else "{lat_id}")
                + " it predicts {lat_floor} against a measured {lat_measured}; the calibrated estimate's fixed and "
                "efficiency terms cut the median to {calibrated_median} %.",
                q,
            )
        )
    throughput = [row for row in rows if row[0]["kind"].startswith("output")]
    mean = q["thr_mean"].number / 100
    low, high = min(throughput, key=lambda row: row[3]), max(throughput, key=lambda row: row[3])
    if low[3] < mean < high[3]:
        q.update(
            low_id=Quantity(low[0]["id"]),
            high_id=Quantity(high[0]["id"]),
            over=Quantity((mean / low[3] - 1) * 100),
            under=Quantity((1 - mean / high[3]) * 100),
        )
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Scaling the roofline by one constant efficiency, the throughput mean of {thr_mean} %: it then "
                "over-predicts {low_id} by {over} % and under-predicts {high_id} by {under} %; the efficiency moves "
                "with batch, lengths and TP degree.",
                q,
            )
        )
    # The FP8 run nearest its bound whose 16-bit prediction still fits its accelerators.
    for entry, setup, _sheet, eta in sorted((row for row in rows if row[0]["dtype"] == "fp8"), key=lambda row: -row[3]):
        try:
            wide = predict(_setup_for(entry, inputs, dtype="bf16"))
        except DeriveError:
            continue
        figures = compared[entry["id"]]
        if entry["kind"].startswith("output"):
            library = model_library(setup.model)
            bound = evaluate(sb.static_batch_output_throughput_per_gpu.expr, wide.values, library)
            wide_eta = figures["measured"].number / bound
        else:
            bound = wide.values[pf.ttft if entry["kind"] == "ttft" else pf.e2e]
            wide_eta = bound / figures["measured"].number
        q.update(
            fp8_id=Quantity(entry["id"]),
            fp8_floor=figures["floor"],
            bf16_floor=Quantity(bound, figures["floor"].unit),
            fp8_eta=Quantity(eta * 100),
            bf16_eta=Quantity(wide_eta * 100),
        )
        answer.wrong_answers.append(
            Prose(
                "wrong",
                "Predicting {fp8_id}'s FP8 run at bf16: the bound moves from {fp8_floor} to {bf16_floor}, and the "
                "measurement "
                + (
                    "'beats' it, at {bf16_eta} % of it."
                    if wide_eta > 1
                    else "reaches {bf16_eta} % of it instead of {fp8_eta} %, crediting the server with what the "
                    "precision did."
                )
                + " Predict in the precision the run used.",
                q,
            )
        )
        break


def _follow_up(answer: Answer, inputs: Inputs, rows, compared, q: dict[str, Quantity]) -> None:  # type: ignore[no-untyped-def]
    """A request's latency in fp8: the same prediction with one input changed, floor against calibrated."""
    requests = [row for row in rows if row[0]["kind"] == "e2e_latency" and row[0]["dtype"] != "fp8"]
    if not requests:
        return
    entry = requests[0][0]
    try:
        r = predict(_setup_for(entry, inputs, dtype="fp8")).results
    except DeriveError:
        return
    if "e2e_latency" not in r:
        return
    figures = compared[entry["id"]]
    floor, calibrated = r["e2e_latency_floor"].value, r["e2e_latency"].value
    floor_share = floor / figures["floor"].number
    calibrated_share = calibrated / figures["calibrated"].number
    q.update(
        req_id=Quantity(entry["id"]),
        req_floor=figures["floor"],
        req_cal=figures["calibrated"],
        req_floor8=Quantity(floor, "second"),
        req_cal8=Quantity(calibrated, "second"),
        req_floor_share=Quantity(floor_share),
        req_cal_share=Quantity(calibrated_share),
    )
    fixed = calibrated_share > floor_share
    answer.follow_up = FollowUp(
        "And if the end-to-end request had run in fp8?",
        Prose(
            "follow-up",
            "For {req_id} the floor falls from {req_floor} to {req_floor8} ({req_floor_share} of it), the calibrated "
            "estimate "
            + ("only " if fixed else "")
            + "from {req_cal} to {req_cal8} ({req_cal_share} of it)"
            + (": the fixed per-layer times do not shrink with the bytes." if fixed else "."),
            q,
        ),
    )


QUESTION = Question(
    id="predictor-vs-measured",
    title="Design a roofline-based performance model that predicts TTFT and TPOT for any model, GPU and batch. "
    "Where will it be wrong?",
    source="Seed 004, question 15",
    level="Senior",
    kind="comparison",
    defaults={},
    changeable=(),
    build=build,
)
