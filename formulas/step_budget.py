"""Where a decode step's time goes beyond the roofline floor, and what a wrong MBU operand does.

A measured step splits into the bandwidth floor and buckets a profiler can confirm:
tensor-parallel all-reduces, idle gaps between kernels, kernels reading below peak
bandwidth, host work between steps, and what is left unattributed. Every bucket is a
formula of stated assumptions (kernel gap, all-reduce latency, achieved bandwidth),
so changing an assumption moves its bucket and nothing else.

The MBU variants are the dashboard mistakes of seed 004, question 8: the same
division with one operand taken wrongly.
"""

from derive.core.library import formula, larger
from derive.core.symbols import define
from formulas.calibrated import X_ew, t_ar
from formulas.fusion import t_l
from formulas.notation import BW, B, K_pr, L, M, P, W, k_l, kv_total, n, t_mem, t_step, tau
from formulas.prefill import S_o, e2e, eta_bw, ttft
from formulas.reads import W_read
from formulas.utilisation import D_gpu, F_step, t_meas

# The step budget.
U_rep = define(
    "reported_mbu",
    "MBU_rep",
    "",
    r"\mathrm{MBU}_{rep}",
    "MBU a server reports: the bandwidth floor over the measured step",
)
t_obs = define("step_time_at_reported_mbu", "t_obs_mbu", "second", r"t_{obs}", "step time the reported MBU implies")
t_k = define("budget_kernel_gap", "t_kgap", "second", r"t_k", "idle GPU time between two consecutive kernels")
t_launch = define(
    "budget_launch_gap_time",
    "t_gaps",
    "second",
    r"t_{launch}",
    "what launching adds to the GPU's kernels: the gaps between them, and the CPU's excess where it is the longer",
)
t_cpu = define("budget_cpu_launch_time", "t_cpu", "second", r"t_{cpu}", "CPU time to launch one step's kernels eagerly")
t_gk = define(
    "budget_gpu_kernel_time",
    "t_gk",
    "second",
    r"t_{gk}",
    "the GPU's own kernel time in a step: the floor, its all-reduces and the reads below peak",
)
t_cpux = define(
    "budget_cpu_excess_time",
    "t_cpux",
    "second",
    r"t_{cpu,x}",
    "what the CPU's launching adds past the GPU's work and gaps: what a CUDA graph saves",
)
t_bwl = define(
    "budget_bandwidth_shortfall_time",
    "t_bwloss",
    "second",
    r"t_{bw}",
    "extra time from reading at the achieved rather than the peak bandwidth",
)
t_host = define(
    "budget_host_time",
    "t_hostw",
    "second",
    r"t_{host}",
    "host work per step outside the kernels: sampling, scheduling, Python",
)
t_rest = define("budget_unattributed_time", "t_unattr", "second", r"t_{rest}", "measured step time no bucket explains")

step_time_at_reported_mbu = formula(
    t_obs,
    D_gpu.symbol / (U_rep.symbol * BW.symbol),
    "MBU = D_gpu / (t · BW) (formulas/utilisation.py) solved for the step time t.",
)

cpu_launch_time = formula(
    t_cpu,
    L.symbol * k_l.symbol * t_l.symbol,
    "Each eager launch costs the CPU t_launch (PyTorch dispatch plus cudaLaunchKernel), every kernel of every layer.",
)
gpu_kernel_time = formula(
    t_gk,
    t_step.symbol + t_ar.symbol + t_bwl.symbol,
    "The floor, the all-reduces' kernels and the time reads below peak add, all on the GPU.",
)
launch_gap_time = formula(
    t_launch,
    larger(t_gk.symbol + L.symbol * k_l.symbol * t_k.symbol, t_cpu.symbol) - t_gk.symbol,
    "Launches are asynchronous (formulas/launch.py): the GPU runs its kernels with a gap t_k between each, and the "
    "step takes the longer of that and the CPU's launching. Past the kernels' own time that is the gaps, or all "
    "the CPU's excess where the CPU is the longer path (a trace shows both as white space on the stream).",
)
cpu_excess_time = formula(
    t_cpux,
    t_launch.symbol - L.symbol * k_l.symbol * t_k.symbol,
    "A CUDA graph launches the step once, so the CPU's excess goes; the GPU's gaps between kernels stay.",
)

bandwidth_shortfall_time = formula(
    t_bwl,
    t_mem.symbol * (1 / eta_bw.symbol - 1),
    "Reading the step's bytes at a fraction eta_bw of the peak takes t_mem / eta_bw instead of t_mem.",
)

unattributed_step_time = formula(
    t_rest,
    t_meas.symbol - t_step.symbol - t_ar.symbol - t_launch.symbol - t_bwl.symbol - t_host.symbol,
    "The measured step less the floor and each bucket: what the assumptions leave for a profiler to find.",
)

# The step a real server approaches at batch 1, by hand (formulas/calibrated.py fits it instead).
t_est = define(
    "decode_step_estimate",
    "t_est",
    "second",
    r"t_{est}",
    "decode step a real server approaches: the floor, bandwidth below peak, then the all-reduces",
)
x_floor = define(
    "floor_share_of_step",
    "x_floor",
    "",
    r"x_{floor}",
    "fraction of the estimated step that the floor (weights and cache at peak bandwidth) explains",
)

decode_step_estimate = formula(
    t_est,
    t_step.symbol + t_bwl.symbol + t_ar.symbol,
    "The floor, the time lost to bandwidth below peak, then the all-reduces: at batch 1 each all-reduce sits "
    "between two layers' matmuls, on the critical path, so nothing overlaps it.",
)

floor_share_of_step = formula(x_floor, t_step.symbol / t_est.symbol, "The floor over the estimated step.")


# Dashboard MBU with one operand wrong.
K_p = define(
    "mbu_kv_bytes_at_prompt", "K_prompt", "byte", r"K_{p}", "KV-cache bytes of the batch counted at the prompt length"
)
t_wall = define(
    "mbu_wall_time_per_output_token",
    "t_wallclk",
    "second",
    r"t_{wall}",
    "wall time per output token when the prompt pass is included",
)
c_sp = define(
    "datasheet_sparsity_factor",
    "c_sparse",
    "",
    r"c_{sp}",
    "how much the sparse datasheet headline exceeds the dense peak (2:4 structured sparsity)",
)
U_nokv = define("mbu_without_kv", "MBU_noKV", "", r"\mathrm{MBU}_{noKV}", "MBU counting the weights but no KV reads")
U_kvp = define(
    "mbu_kv_at_prompt", "MBU_Sp", "", r"\mathrm{MBU}_{S_p}", "MBU counting the KV cache at the prompt length"
)
U_tot = define(
    "mbu_total_bytes_one_gpu",
    "MBU_tot",
    "",
    r"\mathrm{MBU}_{tot}",
    "MBU dividing the bytes of all n accelerators by one accelerator's bandwidth",
)
U_wall = define(
    "mbu_wall_time",
    "MBU_wall",
    "",
    r"\mathrm{MBU}_{wall}",
    "MBU timing wall clock per output token, prompt pass included",
)
U_all = define(
    "mbu_all_weights",
    "MBU_allW",
    "",
    r"\mathrm{MBU}_{all}",
    "MBU counting every weight: experts the step does not touch and the whole embedding table",
)
U_sp = define("mfu_sparse_peak", "MFU_sp", "", r"\mathrm{MFU}_{sp}", "MFU against the sparse datasheet headline")

kv_bytes_at_prompt = formula(K_p, B.symbol * K_pr.symbol, "The batch's cache as if each sequence held only its prompt.")
mbu_without_kv = formula(
    U_nokv,
    W_read.symbol / (n.symbol * t_meas.symbol * BW.symbol),
    "The MBU division with the KV reads left out of the bytes.",
)
mbu_kv_at_prompt = formula(
    U_kvp,
    (W_read.symbol + K_p.symbol) / (n.symbol * t_meas.symbol * BW.symbol),
    "The MBU division with the cache counted at the prompt, not the live context.",
)
mbu_total_bytes_one_gpu = formula(
    U_tot,
    (W_read.symbol + kv_total.symbol) / (t_meas.symbol * BW.symbol),
    "The MBU division with all accelerators' bytes over one accelerator's bandwidth.",
)
wall_time_per_output_token = formula(
    t_wall,
    t_meas.symbol + ttft.symbol * tau.symbol / S_o.symbol,
    "Request wall time over its output tokens: each token carries tau/S_o of the prompt pass.",
)
mbu_wall_time = formula(
    U_wall, D_gpu.symbol / (t_wall.symbol * BW.symbol), "The MBU division timed by wall clock per output token."
)
mbu_all_weights = formula(
    U_all,
    (W.symbol + kv_total.symbol) / (n.symbol * t_meas.symbol * BW.symbol),
    "The MBU division with every stored weight as if the step read it: a MoE step reads only the experts its "
    "tokens touch, and any step only the embedding rows it gathers (formulas/reads.py).",
)
mfu_sparse_peak = formula(
    U_sp,
    F_step.symbol / (t_meas.symbol * n.symbol * c_sp.symbol * P.symbol),
    "The MFU division against the sparse headline (c_sp times the dense peak).",
)

# The long-context coincidence.
phi_M = define("cache_memory_share", "phi_Mem", "", r"\phi_M", "the batch's KV cache over one accelerator's memory")
cache_memory_share = formula(phi_M, kv_total.symbol / M.symbol, "Cache bytes over one accelerator's memory.")

# Fusion at decode: what elementwise passes cost in activation bytes.
x_ew = define("decode_elementwise_share", "x_ewb", "", r"x_{ew}", "elementwise activation bytes over the weight bytes")
elementwise_share = formula(x_ew, X_ew.symbol / W.symbol, "What fusion could remove, against what it cannot.")

# The predictor against published measurements.
R_sb = define(
    "predicted_static_batch_throughput_per_gpu",
    "R_sbp",
    "token/second",
    r"R_{sb}",
    "output tokens per second per accelerator of a static batch, prompt pass included",
)
R_m = define(
    "published_output_throughput_per_gpu",
    "R_pub",
    "token/second",
    r"R_{m}",
    "published output tokens per second per accelerator",
)
T_m = define("published_latency", "T_pub", "second", r"T_{m}", "published latency")
eta_R = define(
    "published_throughput_efficiency", "eta_Rpub", "", r"\eta_{R}", "measured throughput over the roofline's ceiling"
)
eta_ttft = define(
    "published_ttft_efficiency", "eta_TTFTpub", "", r"\eta_{TTFT}", "the roofline's TTFT floor over the measured TTFT"
)
eta_e2e = define(
    "published_e2e_efficiency",
    "eta_e2epub",
    "",
    r"\eta_{e2e}",
    "the roofline's latency floor over the measured latency",
)

static_batch_output_throughput_per_gpu = formula(
    R_sb,
    B.symbol * S_o.symbol / (n.symbol * e2e.symbol),
    "A static batch of B requests produces B·S_o tokens in one prompt pass plus its decode steps, the end-to-end "
    "latency T_e2e (TensorRT-LLM's gptSessionBenchmark measures so), shared by n accelerators.",
)
throughput_efficiency = formula(eta_R, R_m.symbol / R_sb.symbol, "Measured over predicted: at most 1 for a ceiling.")
ttft_efficiency = formula(eta_ttft, ttft.symbol / T_m.symbol, "Predicted floor over measured: at most 1 for a floor.")
e2e_efficiency = formula(eta_e2e, e2e.symbol / T_m.symbol, "Predicted floor over measured: at most 1 for a floor.")
