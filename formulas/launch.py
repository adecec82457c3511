"""Launch overhead of a decode step: eager dispatch against a captured CUDA graph.

One model of launching, for every answer: the GPU runs a step's kernels one after another with a
small idle gap between each (GPU time, in series with the work, eager or graphed); the CPU launches
them asynchronously, running ahead of the GPU, so its launching counts only where it is the longer
path. In eager mode the CPU launches every kernel of every layer; a CUDA graph replays the whole
step from one launch, which removes the CPU's cost but not the GPU's gaps. For the same reason the
launches fusion removes shorten a step only while the CPU's launching is the longer of the two.
"""

from derive.core.library import formula, larger
from derive.core.symbols import define
from formulas.fusion import n_ew, n_fk, t_fus, t_l, t_ls, t_unf
from formulas.notation import L, k_l, t_step

t_node = define(
    "graph_node_overhead",
    "t_gnode",
    "second",
    r"t_{node}",
    "GPU-side gap between two kernels, queued eagerly or replayed from a CUDA graph",
)
t_gap = define("kernel_gap_time", "t_kgaps", "second", r"t_{gaps}", "GPU time between one step's kernels")
n_kern = define("kernels_per_step", "n_kstep", "", r"n_{kern}", "kernels one decode step launches")
t_eag = define(
    "eager_launch_time", "t_eager", "second", r"t_{eager}", "CPU time to launch one step's kernels in eager mode"
)
t_gra = define(
    "graph_launch_time",
    "t_graph",
    "second",
    r"t_{graph}",
    "CPU time to launch one step replayed as a CUDA graph: one launch",
)
t_se = define(
    "eager_step_time",
    "t_step_eager",
    "second",
    r"t_{step,eager}",
    "decode step in eager mode: the GPU's work or the CPU's launching, whichever is longer",
)
t_sg = define("graph_step_time", "t_step_graph", "second", r"t_{step,graph}", "decode step replayed as a CUDA graph")
t_gs = define("graph_saving", "t_gsave", "second", r"t_{saved}", "time per step a CUDA graph saves")

kernels_per_step = formula(n_kern, k_l.symbol * L.symbol, "Every layer launches its kernels once per step.")

eager_launch_time = formula(
    t_eag,
    n_kern.symbol * t_l.symbol,
    "Each eager launch costs the CPU t_launch (PyTorch dispatch plus cudaLaunchKernel).",
)

kernel_gap_time = formula(
    t_gap,
    n_kern.symbol * t_node.symbol,
    "The GPU idles a small gap before each kernel, queued or replayed (NVIDIA, CUDA C++ Programming Guide, "
    "'CUDA Graphs'): GPU time, in series with the work.",
)

graph_launch_time = formula(t_gra, t_l.symbol, "One graph launch for the whole step.")

eager_step_time = formula(
    t_se,
    larger(t_step.symbol + t_gap.symbol, t_eag.symbol),
    "Launches are asynchronous: the CPU runs ahead, so the step is the longer of the GPU's work with its gaps "
    "and the CPU's launching, never their sum.",
)

graph_step_time = formula(
    t_sg,
    larger(t_step.symbol + t_gap.symbol, t_gra.symbol),
    "The same step with the launches replayed from one graph: the CPU's cost goes, the GPU's gaps stay.",
)

graph_saving = formula(t_gs, t_se.symbol - t_sg.symbol, "Eager step time minus graph step time.")

t_gw = define(
    "step_gpu_work",
    "t_gw",
    "second",
    r"t_{gpu}",
    "GPU time of the step's other kernels: its roofline floor without the elementwise chain",
)
t_su = define(
    "unfused_eager_step_time",
    "t_step_unf",
    "second",
    r"t_{step,unf}",
    "eager step with the chain unfused: the GPU's work or the CPU's launching, whichever is longer",
)
t_sf = define(
    "fused_eager_step_time",
    "t_step_fus",
    "second",
    r"t_{step,fus}",
    "eager step with the chain fused: fewer bytes on the GPU, fewer launches on the CPU",
)
t_fss = define("fusion_step_saving", "t_fss", "second", r"t_{step,saved}", "time per step fusion actually saves")

t_gf = define(
    "fusion_gap_saving", "t_gfus", "second", r"t_{gaps,fus}", "GPU gaps between kernels fusion removes per step"
)

fusion_gap_saving = formula(
    t_gf,
    (n_ew.symbol - n_fk.symbol) * L.symbol * t_node.symbol,
    "Each kernel fusion removes takes its GPU gap with it, in every layer.",
)
unfused_eager_step_time = formula(
    t_su,
    larger(t_gw.symbol + t_unf.symbol + t_gap.symbol, t_eag.symbol),
    "Launches are asynchronous: the GPU's kernels, chain included, and the gaps between them run behind the CPU's "
    "launching, and the step takes the longer of the two.",
)
fused_eager_step_time = formula(
    t_sf,
    larger(t_gw.symbol + t_fus.symbol + t_gap.symbol - t_gf.symbol, t_eag.symbol - t_ls.symbol),
    "Fused, the chain moves fewer bytes, the GPU idles between fewer kernels and the CPU launches fewer; still the "
    "longer of the two.",
)
fusion_step_saving = formula(
    t_fss,
    t_su.symbol - t_sf.symbol,
    "The launches removed count only while the CPU is the longer path; otherwise the bytes and the GPU gaps do.",
)
