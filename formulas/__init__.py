"""The formula library: one cost family a module, each formula a few lines.

Importing this package defines (and so unit-checks) every library formula.
"""

from formulas import flops, intensity, memory, prefill, roofline  # noqa: F401  (defining is the point)
