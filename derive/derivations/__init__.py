"""The worked derivations behind the commands: each takes a Setup and returns a Sheet.

Nothing here prints; cli.py renders what these return.
"""

from derive.derivations.common import Setup
from derive.derivations.slice import knee, kv, params

__all__ = ["Setup", "knee", "kv", "params"]
