"""Speculative decoding as `plan` and `predict` take it: a draft's length, its acceptance and its cost, or a
checkpoint's own multi-token-prediction (MTP) modules, checked once here (formulas/speculative.py has the math).

With --mtp the draft is the config's MTP modules (DeepSeek-V3's num_nextn_predict_layers): k of them propose k
tokens, each module one layer of the model's L (the shared embedding and head's reads left out: DeepSeek-V3's
head is 0.14% of its weights), so a draft step costs 1/L of a pass; their acceptance is 0.85 unless given,
the low end of the 85-90% DeepSeek reports for its second token (DeepSeek-V3 Technical Report, 2024, sec. 5.4.3).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy

from derive.core import validate
from derive.core.errors import DeriveError
from derive.core.symbols import Sym

# DeepSeek-V3 Technical Report (2024), sec. 5.4.3: "the acceptance rate of the second token prediction ranges
# between 85% and 90%".
MTP_ACCEPTANCE = sympy.Rational(85, 100)
OPTIONS = ("draft_tokens", "acceptance", "draft_cost", "mtp")


@dataclass(frozen=True)
class Speculation:
    """k drafted tokens a pass, each accepted with probability alpha, each draft step c_d of a pass; k = 0 is none."""

    draft_tokens: int = 0
    acceptance: sympy.Rational = sympy.Integer(0)
    draft_cost: sympy.Rational = sympy.Integer(0)
    source: str = ""  # where the figures come from, as a note says it

    def values(self) -> dict[Sym, sympy.Expr]:
        """formulas/speculative.py's inputs (all zero without a draft: the layout step is then the plain one)."""
        from formulas import speculative as sp

        return {
            sp.k_d: sympy.Integer(self.draft_tokens),
            sp.alpha_acc: sympy.Rational(self.acceptance),
            sp.c_d: sympy.Rational(self.draft_cost),
        }

    def __bool__(self) -> bool:
        return self.draft_tokens > 0

    def describe(self) -> str:
        return (
            f"speculative decoding: {self.draft_tokens} drafted token(s) a pass, each accepted with probability "
            f"{float(self.acceptance):g}, a draft step {float(self.draft_cost):.3g} of a pass ({self.source}); the "
            "draft's own weights and cache are not counted in memory"
        )


NONE = Speculation()


def speculation(model: Any, values: dict[str, Any]) -> Speculation:
    """The speculation `values` ask for (draft_tokens, acceptance, draft_cost, mtp), checked: none where none."""
    mtp = bool(values.get("mtp"))
    draft_tokens, acceptance, draft_cost = (values.get(k) for k in OPTIONS[:3])
    if not mtp and draft_tokens is None:
        for name in ("acceptance", "draft_cost"):
            if values.get(name) is not None:
                raise DeriveError(
                    f"--{name.replace('_', '-')} describes a draft, and none is given",
                    "Add --draft-tokens K (a draft model's tokens a pass), or --mtp for the config's own MTP modules",
                )
        return NONE
    # From 0 to below 1: formulas/speculative.py's (1 - alpha^(k+1))/(1 - alpha) is 0/0 at 1.
    chance = None if acceptance is None else validate.chance(acceptance, "--acceptance")
    cost = None if draft_cost is None else validate.number(draft_cost, "draft_cost", "--draft-cost", zero=True, high=1)
    if mtp:
        modules = model.config.mtp_layers
        if not modules:
            raise DeriveError(
                f"{model.name}'s config has no multi-token-prediction modules (num_nextn_predict_layers)",
                "Describe a draft model instead: --draft-tokens K --acceptance A --draft-cost C",
            )
        k = validate.count(draft_tokens, "draft_tokens", "--draft-tokens") if draft_tokens is not None else modules
        return Speculation(
            k,
            MTP_ACCEPTANCE if chance is None else chance,
            sympy.Rational(1, model.config.layers) if cost is None else cost,
            f"--mtp: the config's {modules} MTP module(s); a draft step one layer of {model.config.layers}"
            + ("" if chance is not None else ", acceptance 0.85 (DeepSeek-V3 report, sec. 5.4.3)"),
        )
    k = validate.count(draft_tokens, "draft_tokens", "--draft-tokens")
    missing = [name for name, value in (("--acceptance", chance), ("--draft-cost", cost)) if value is None]
    if missing:
        raise DeriveError(
            f"--draft-tokens needs {' and '.join(missing)} too",
            "For example --draft-tokens 4 --acceptance 0.7 --draft-cost 0.05 (a draft step 5% of a pass)",
        )
    assert chance is not None and cost is not None
    return Speculation(k, chance, cost, "--draft-tokens, --acceptance, --draft-cost")
