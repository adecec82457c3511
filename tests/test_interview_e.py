"""Issue 15: the wrong answers and follow-ups of compiler-fusion, framework-to-gpu, data-pipeline and
slow-training-serving, each pinned by one relation between a wrong answer's number and the right one; and the
eager launches, asynchronous, never added to a step the GPU's work already bounds."""

from __future__ import annotations

from derive.sheet_render import prose
from tests.interview import built as _answer
from tests.interview import placeholder as _wrong


def test_fusion_at_a_gpu_bound_decode_step_saves_only_the_bytes_and_the_gaps():
    """Llama 3 8B at batch 8 on an H100: 5.6 ms of GPU work and gaps hides 1.9 ms of eager launches; fusion saves the
    chain's bytes and the 1 us GPU gap of each of the 3 kernels it removes in each of 32 layers (formulas/launch.py)."""
    import sympy

    answer = _answer("compiler-fusion")
    r = answer.results
    assert r["decode_eager_launch_time"].number < r["decode_gpu_work"].number
    bytes_saved = _wrong(answer, "summed").quantities["dec_bytes_time"].number
    assert r["decode_step_saving"].number == bytes_saved + 32 * 3 * sympy.Rational(1, 10**6)
    summed = _wrong(answer, "summed").quantities["summed"].number
    assert summed == bytes_saved + r["decode_launch_saving"].number  # the sum a candidate gives
    assert "hides behind the GPU" in prose(answer.summary, "md")


def test_fusion_at_a_launch_bound_decode_step_saves_the_launches():
    """GPT-2 small is launch-bound: the launches fusion removes shorten the step one for one."""
    answer = _answer("compiler-fusion", model="gpt2")
    r = answer.results
    assert r["decode_eager_launch_time"].number > r["decode_gpu_work"].number
    assert r["decode_step_saving"].number == r["decode_launch_saving"].number
    assert "launch-bound" in prose(answer.summary, "md")
    assert not [w for w in answer.wrong_answers if "{summed}" in w.text]


def test_prefill_fusion_saves_bytes_and_attention_saves_more():
    answer = _answer("compiler-fusion")
    r, follow = answer.results, answer.follow_up.answer.quantities  # type: ignore[union-attr]
    assert r["prefill_step_saving"].number < r["prefill_unfused_bytes"].number / 3.35e12  # H100 SXM: 3.35 TB/s
    assert follow["t_scores"].number > 10 * r["prefill_step_saving"].number  # the score matrices dwarf the chain


def test_summing_launches_and_gpu_work_overstates_the_step():
    answer = _answer("framework-to-gpu")
    q = _wrong(answer, "summed").quantities
    assert q["summed"].number == q["floor"].number + q["launch"].number > answer.results["eager_step_time"].number


def test_fusing_the_norms_shortens_a_launch_bound_step_by_the_kernels_removed():
    """GPT-2 small: 12 layers, 3 kernels fewer each at 5 us a launch (the question's assumptions)."""
    answer = _answer("framework-to-gpu")
    follow = answer.follow_up.answer.quantities  # type: ignore[union-attr]
    removed = answer.results["eager_step_time"].number - follow["fused_eager"].number
    assert abs(removed - 12 * 3 * 5e-6) < 1e-12


def test_a_gpu_bound_step_gains_nothing_from_a_graph_and_says_so():
    answer = _answer("framework-to-gpu", model="llama3-70b", gpu="h200")
    assert answer.results["graph_saving"].number == 0
    assert "would save nothing here" in prose(answer.summary, "md")
    assert "{saved}" in _wrong(answer, "saved").text


def test_doubling_the_gpus_raises_the_idle_share_when_loading_is_serial():
    answer = _answer("data-pipeline")
    q = _wrong(answer, "idle2_pct").quantities
    assert q["idle2_pct"].number > q["idle_pct"].number
    assert q["step2"].number * 2 == answer.results["training_step_time"].number


def test_prefetching_hides_a_load_shorter_than_the_step():
    answer = _answer("data-pipeline")
    follow = answer.follow_up.answer  # type: ignore[union-attr]
    assert answer.results["batch_load_time"].number < answer.results["training_step_time"].number
    assert follow.quantities["wait"].number == 0


def test_prefetching_a_load_longer_than_the_step_names_the_workers_that_fix_it():
    answer = _answer("data-pipeline", loader_workers=4)
    q = answer.follow_up.answer.quantities  # type: ignore[union-attr]
    assert q["wait"].number > 0 and q["workers_for_step"].number > 4


def test_a_serving_step_reports_hfu_equal_to_mfu():
    answer = _answer("slow-training-serving")
    q = _wrong(answer, "hfu_wrong").quantities
    assert answer.results["hfu"].number == answer.results["mfu"].number
    assert q["hfu_wrong"].number == q["mfu_pct"].number * q["rc_factor"].number


def test_naive_scores_grow_with_the_square_of_the_prompt():
    q = _answer("slow-training-serving").follow_up.answer.quantities  # type: ignore[union-attr]
    assert q["grow"].number == 4 and q["flash_grow"].number == 2


def test_a_hybrid_materialises_scores_only_in_its_attention_layers():
    """Nemotron 3 Nano: 6 of its 52 layers are attention (its config's hybrid_override_pattern)."""
    dense = _answer("slow-training-serving").results["naive_score_bytes"].number / 32  # Llama 3 8B: 32 layers
    hybrid = _answer("slow-training-serving", model="nemotron3-nano").results["naive_score_bytes"].number
    assert hybrid == 6 * dense  # both: 32 query heads, bf16 scores, a 4,096-token prompt
