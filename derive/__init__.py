"""derive: unit-checked, closed-form costs of running transformers.

The Python API (derive/api.py): one function per command, each returning a result object.

    >>> import derive
    >>> derive.knee("llama70b").results["max_batch_by_memory"]
    <Quantity(28, 'sequence')>
"""

from derive.api import *  # noqa: F403
from derive.api import __all__  # noqa: F401
