"""The formula library: one cost family a module, each formula a few lines.

Importing this package defines (and so unit-checks) every library formula.
"""

from formulas import (  # noqa: F401  (defining is the point)
    attention_memory,
    claim,
    energy,
    flops,
    intensity,
    memory,
    moe,
    prefill,
    roofline,
    sharding,
    utilisation,
)
