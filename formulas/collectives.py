"""Collectives over a link: the bytes each accelerator sends, and the time that takes.

Every parallel layout moves activations with four patterns. In a group of g
accelerators holding X bytes each, a ring all-reduce sends 2(g-1)/g·X from each
(a reduce-scatter then an all-gather, Patarasuk and Yuan 2009, 'Bandwidth optimal
all-reduce algorithms'); an all-gather or an all-to-all sends the (g-1)/g of X that
is for the others (NCCL's collective docs; Rajbhandari et al. 2022, 'DeepSpeed-MoE',
sec. 5); a point-to-point send moves X once. The time is the link's fixed latency
plus the bytes at a share of the one-way bandwidth of the link the group crosses:
NVLink inside a node or rack, the scale-out network beyond it (formulas/systems.toml).
A group of one sends nothing and waits for nothing (Min(g - 1, 1) = 0).
"""

import sympy

from derive.core.library import formula, smaller
from derive.core.symbols import Sym, define

g_c = define("group_size", "g_c", "", r"g", "accelerators taking part in one collective")
X_c = define("collective_data", "X_c", "byte", r"X", "bytes each accelerator holds going into the collective")
BW_c = define(
    "collective_link_bandwidth", "BW_c", "byte/second", r"BW_{c}", "one-way bandwidth of the link the group crosses"
)
alpha_c = define("collective_latency", "alpha_c", "second", r"\alpha_{c}", "fixed latency of one collective")
eta_c = define("collective_efficiency", "eta_c", "", r"\eta_{c}", "share of the link bandwidth a collective gets")

Y_ar = define("allreduce_sent_bytes", "Y_ar", "byte", r"Y_{ar}", "bytes each accelerator sends in a ring all-reduce")
Y_ag = define("allgather_sent_bytes", "Y_ag", "byte", r"Y_{ag}", "bytes each accelerator sends in an all-gather")
Y_a2a = define("alltoall_sent_bytes", "Y_a2a", "byte", r"Y_{a2a}", "bytes each accelerator sends in an all-to-all")
Y_p2p = define("p2p_sent_bytes", "Y_p2p", "byte", r"Y_{p2p}", "bytes one accelerator sends to the next stage")


def ring_allreduce(group: sympy.Expr, data: sympy.Expr) -> sympy.Expr:
    """Bytes each of `group` accelerators sends to all-reduce `data` bytes in a ring."""
    return 2 * (group - 1) / group * data


def exchange(group: sympy.Expr, data: sympy.Expr) -> sympy.Expr:
    """Bytes each accelerator sends in an all-gather or all-to-all of `data` bytes: the others' share."""
    return (group - 1) / group * data


def over_link(sent: sympy.Expr, group: sympy.Expr, latency: Sym, efficiency: Sym, link: Sym) -> sympy.Expr:
    """Time of one collective: a latency plus the bytes at a share of the link; nothing in a group of one."""
    return smaller(group - 1, 1) * (latency.symbol + sent / (efficiency.symbol * link.symbol))


allreduce_sent_bytes = formula(
    Y_ar,
    ring_allreduce(g_c.symbol, X_c.symbol),
    "A ring all-reduce is a reduce-scatter then an all-gather, each sending (g-1)/g of the data from every "
    "accelerator (Patarasuk and Yuan 2009, 'Bandwidth optimal all-reduce algorithms').",
)
allgather_sent_bytes = formula(
    Y_ag,
    exchange(g_c.symbol, X_c.symbol),
    "Each accelerator sends its piece to the g-1 others; a ring moves (g-1)/g of the gathered whole "
    "(NCCL collective operations).",
)
alltoall_sent_bytes = formula(
    Y_a2a,
    exchange(g_c.symbol, X_c.symbol),
    "Expert-parallel dispatch (and combine) sends each token's copies to the accelerators holding its experts; "
    "the 1/g already at home stays (Rajbhandari et al. 2022, 'DeepSpeed-MoE', sec. 5).",
)
p2p_sent_bytes = formula(
    Y_p2p, X_c.symbol, "A pipeline stage sends its output activations to the next once (Huang et al. 2019, 'GPipe')."
)
