"""Energy per output token: the accelerators' power over the tokens they produce.

The power is the datasheet TDP, drawn for the whole step: an upper bound on the
accelerators' own draw (a memory-bound step usually draws less), and nothing for
the host, the network or cooling.
"""

from derive.core.library import formula
from derive.core.symbols import define
from formulas.notation import B, n, t_step, tau

P_acc = define("accelerator_power", "P_acc", "watt", r"P_{acc}", "power drawn by one accelerator (datasheet TDP)")
E_step = define("step_energy", "E_step", "joule", r"E_{step}", "energy the accelerators use in one decode step")
e_tok = define("energy_per_token", "e_tok", "joule/token", r"e_{tok}", "energy per output token")

step_energy = formula(
    E_step,
    P_acc.symbol * n.symbol * t_step.symbol,
    "n accelerators at their datasheet power (TDP) for one roofline step; an upper bound on their draw.",
)

energy_per_token = formula(
    e_tok,
    E_step.symbol / (B.symbol * tau.symbol),
    "One step's energy shared by the B·tau tokens it produces: power over throughput.",
)
