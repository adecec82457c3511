"""Launch overhead of a decode step: eager dispatch against a captured CUDA graph.

In eager mode the CPU launches every kernel of every layer; the launches run ahead of the GPU
asynchronously, so a step takes the longer of the GPU's work and the CPU's launching. A CUDA
graph replays the whole step from one launch; each kernel then costs only the GPU's own
per-node gap.
"""

import sympy

from derive.library import formula
from derive.symbols import define
from formulas.fusion import t_l
from formulas.notation import L, k_l, t_step

t_node = define(
    "graph_node_overhead",
    "t_gnode",
    "second",
    r"t_{node}",
    "GPU-side gap per kernel when a CUDA graph replays the step (assumed)",
)
n_kern = define("kernels_per_step", "n_kstep", "", r"n_{kern}", "kernels one decode step launches")
t_eag = define(
    "eager_launch_time", "t_eager", "second", r"t_{eager}", "CPU time to launch one step's kernels in eager mode"
)
t_gra = define(
    "graph_launch_time",
    "t_graph",
    "second",
    r"t_{graph}",
    "launch cost of one step replayed as a CUDA graph: one launch plus a gap per kernel",
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

graph_launch_time = formula(
    t_gra,
    t_l.symbol + n_kern.symbol * t_node.symbol,
    "One graph launch for the whole step, then a small GPU-side gap per node (NVIDIA, CUDA C++ Programming "
    "Guide, 'CUDA Graphs').",
)

eager_step_time = formula(
    t_se,
    sympy.Max(t_step.symbol, t_eag.symbol),
    "Launches are asynchronous: the CPU runs ahead, so the step is bound by the slower of the two.",
)

graph_step_time = formula(
    t_sg, sympy.Max(t_step.symbol, t_gra.symbol), "The same step with the launches replayed from one graph."
)

graph_saving = formula(t_gs, t_se.symbol - t_sg.symbol, "Eager step time minus graph step time.")
