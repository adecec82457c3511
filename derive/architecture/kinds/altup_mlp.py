"""Gemma 3n's dense MLP with the layer's AltUp and LAuReL blocks beside it (`[mlp] kind = "altup_mlp"`)."""

from __future__ import annotations

from dataclasses import dataclass, fields

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.base import Resolve
from derive.architecture.kinds.mlp import DenseMLP
from derive.architecture.kinds.mlp import read as read_mlp
from derive.architecture.spec import Spec
from derive.core.symbols import Sym, define
from formulas import notation as n

n_alt = define("altup_streams", "n_alt", "", r"n_{alt}", "AltUp residual streams (Gemma 3n's altup_num_inputs)")
r_lr = define("laurel_rank", "r_lr", "", r"r_{lr}", "rank of a LAuReL low-rank residual block (Gemma 3n)")


@dataclass(frozen=True)
class AltUpMLP(DenseMLP):
    """transformers' Gemma3nTextMLP (gate, up, down) with the decoder layer's Gemma3nTextAltUp and
    Gemma3nTextLaurelBlock, which every layer has once, as its MLP.

    AltUp (Baykal et al. 2023) over n_alt streams: modality_router (d -> n_alt), prediction_coefs (n_alt ->
    n_alt^2), correction_coefs (n_alt -> n_alt), a d-wide router_norm and a d-wide correct_output_scale. LAuReL:
    linear_left (d -> r_lr), linear_right (r_lr -> d) and a d-wide post_laurel_norm. The model holds the
    n_alt - 1 altup_projections and n_alt - 1 altup_unembed_projections (d x d each) once, around the layers: its
    shared weights. The MLP's activation sparsity (activation_sparsity_pattern, a Gaussian top-k on the gate) has
    no parameters; its matmuls are counted dense, and AltUp's mixing of the n_alt streams (about n_alt^2 d
    multiply-accumulates a layer and token) is not in the FLOPs.
    """

    streams: int = 0
    rank: int = 0

    label = "dense MLP with AltUp and LAuReL"

    def shapes(self) -> dict[Sym, int]:
        return {**super().shapes(), n_alt: self.streams, r_lr: self.rank}

    def weights(self, s: Resolve) -> sympy.Expr:
        d, a, r = n.d.symbol, s(n_alt), s(r_lr)
        altup = a * a + a * a * a + d * a  # correction_coefs, prediction_coefs, modality_router
        return super().weights(s) + altup + 2 * d * r  # LAuReL's linear_left and linear_right

    def norms(self, s: Resolve) -> sympy.Expr:
        return super().norms(s) + 3 * n.d.symbol  # router_norm, correct_output_scale, post_laurel_norm

    def shared_weights(self, s: Resolve) -> sympy.Expr:
        return 2 * (s(n_alt) - 1) * n.d.symbol * n.d.symbol  # altup_projections, altup_unembed_projections

    def notes(self) -> tuple[str, ...]:
        return ("Gemma 3n's AltUp and LAuReL blocks are counted with each layer's MLP",)


def read(k: Keys, spec: Spec) -> AltUpMLP:
    """The dense MLP; intermediate_size may be a list, one width a layer, which must all be the same (one dense MLP
    serves every layer); AltUp's streams from altup_num_inputs, LAuReL's rank from laurel_rank."""
    widths = k.get("intermediate_size")
    if isinstance(widths, list):
        layers = k.int("num_hidden_layers")
        if len(widths) != layers or not all(isinstance(w, int) and not isinstance(w, bool) for w in widths):
            raise k.fail("intermediate_size", widths[:8], f"not one whole number for each of the {layers} layers")
        if len(set(widths)) != 1:
            raise k.fail(
                "intermediate_size",
                sorted(set(widths)),
                "MLP widths that differ by layer",
                "derive reads one dense MLP width for every layer: it cannot describe this model",
            )
        k = k.overlay({"intermediate_size": widths[0]})
    dense = read_mlp(k, spec)
    return AltUpMLP(
        **{f.name: getattr(dense, f.name) for f in fields(dense)},
        streams=k.int(spec.raw("streams", "altup_num_inputs")),
        rank=k.int(spec.raw("rank", "laurel_rank")),
    )
