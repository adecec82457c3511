"""A Zamba hybrid layer: its own Mamba and linear, and a call to a transformer block every hybrid layer shares."""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from derive.architecture.keys import Keys
from derive.architecture.kinds.attention import Attention
from derive.architecture.kinds.base import Resolve, kind_module
from derive.architecture.kinds.parallel import Parallel
from derive.architecture.spec import Spec
from derive.core.errors import CatalogError
from derive.core.symbols import Sym, define
from formulas import notation as n

n_blk = define("shared_blocks", "n_blk", "", r"n_{blk}", "shared transformer blocks the hybrid layers take in turn")
r_ad = define("adapter_rank", "r_ad", "", r"r_{ad}", "rank of a hybrid layer's LoRA adapters on the shared block")


@dataclass(frozen=True)
class ZambaHybrid(Parallel):
    """A Zamba / Zamba2 hybrid layer (Glorioso et al. 2024, arXiv:2405.16712, fig. 2; transformers' ZambaHybridLayer,
    Zamba2HybridLayer): the shared transformer block reads [h, x_0] (the hidden state beside the original
    embeddings, 2d wide), its output goes through the layer's own d x d `linear`, then the layer's own Mamba.

    Per layer (weights): the Mamba (Mamba-1's parameters for Zamba's multi-head mixer, a Mamba-2 for Zamba2),
    the linear (d x d), and Zamba2's LoRA adapters on the shared block: gate_up d -> r_ad -> 2 d_ff always, and
    q, k, v 2d -> r_ad -> 2d each with use_shared_attention_adapter. Held once (shared_weights): n_blk blocks
    (Zamba: 1; Zamba2: num_mem_blocks, at most the hybrid layers), each attention with q, k, v 2d -> heads and
    o_proj heads -> d, a gated MLP d -> d_ff -> d (biased with add_bias_linear), and its two RMSNorms (2d and d).

    Cache and state: each hybrid layer calls the shared attention with its own layer index, so it caches its own
    keys and values (n_kv x 2 d_h a token) and attends over them; its Mamba keeps its own state and conv window.
    """

    width: int  # the shared MLP's d_ff (the attention and the Mamba are Parallel's fields)
    blocks: int
    rank: int = 0  # Zamba2's adapter rank (0: no adapters, Zamba)
    attention_adapters: bool = False
    mlp_bias: bool = False
    tied: bool = True  # the blocks are shared (transformers ties them only when tie_word_embeddings is true)
    spare_adapters: int = 0  # adapter copies transformers builds that no layer uses (untied blocks, below)

    tag = "hyb"
    names = {"hyb": "Mamba-with-shared-attention"}
    label = "Mamba with the shared attention block (hybrid)"
    softmax = True

    def shapes(self) -> dict[Sym, int]:
        out = {**self.attention.shapes(), **self.recurrent.shapes(), n.d_ff: self.width, n_blk: self.blocks}
        return out | ({r_ad: self.rank} if self.rank else {})

    def weights(self, s: Resolve) -> sympy.Expr:
        d = n.d.symbol
        total = self.recurrent.weights(s) + d * d  # the layer's Mamba and its linear
        return total + (self._adapter(s) if self.rank else 0)

    def norms(self, s: Resolve) -> sympy.Expr:
        return self.recurrent.norms(s)

    def activation_values(self, s: Resolve) -> sympy.Expr:
        return 3 * s(n.d_ff)  # the shared block's gated MLP, run on every hybrid layer

    def _block_matmuls(self, s: Resolve) -> sympy.Expr:
        d, nh, nkv, dh, f = n.d.symbol, s(n.n_h), s(n.n_kv), s(n.d_h), s(n.d_ff)
        attention = 2 * d * (nh + 2 * nkv) * dh + nh * dh * d  # q, k, v read 2d; o_proj writes d
        return attention + 3 * d * f + ((2 * f + d) if self.mlp_bias else 0)

    def shared_used(self, s: Resolve) -> sympy.Expr:
        return self._block_matmuls(s)  # every hybrid layer runs one shared block

    def shared_weights(self, s: Resolve) -> sympy.Expr:
        block_norms = 2 * n.d.symbol + n.d.symbol  # input_layernorm over 2d, pre_ff_layernorm over d
        total = s(n_blk) * (self._block_matmuls(s) + block_norms)
        if self.spare_adapters:
            total += self.spare_adapters * self._adapter(s)
        return total

    def _adapter(self, s: Resolve) -> sympy.Expr:
        """One hybrid layer's adapters on the shared block."""
        d, r = n.d.symbol, s(r_ad)
        total = r * (d + 2 * s(n.d_ff))  # gate_up_proj adapter: d -> r -> 2 d_ff
        if self.attention_adapters:
            total += 3 * 2 * (2 * d * r)  # q, k, v adapters: 2d -> r -> 2d each
        return total

    def notes(self) -> tuple[str, ...]:
        if not self.tied:
            return (
                "tie_word_embeddings is false: transformers ties the shared blocks only with tied embeddings, so each "
                f"of the {self.blocks} hybrid layers holds its own copy of the block"
                + (f" (and {self.spare_adapters} adapter copies no layer uses)" if self.spare_adapters else ""),
                *self.recurrent.notes(),
            )
        return (
            "the hybrid layers share "
            + ("one transformer block" if self.blocks == 1 else f"{self.blocks} transformer blocks, taken in turn")
            + ": counted once in the parameters, but each hybrid layer runs it and caches its own keys and values",
            *self.recurrent.notes(),
        )

    def describe(self) -> str:
        return f"{self.recurrent.describe()} with the shared attention block"


def read(k: Keys, spec: Spec) -> ZambaHybrid:
    """The entry's `[zamba_hybrid]` names the Mamba's module (`recurrent`, with its settings in
    `[zamba_hybrid.MODULE]`), whether the config's own head width is read (`own_head_dim`: Zamba's attention_head_dim;
    Zamba2Config always takes 2d / heads), and the adapters (`adapters`, `attention_adapters`, `mlp_bias`)."""
    if isinstance(spec.raw("refuse"), str):  # the entry's stand-in type for a config that lists no layer pattern
        raise CatalogError(f"config for {k.name} does not list its layers_block_type", spec.raw("refuse"))
    hidden, heads = k.int("hidden_size"), k.int("num_attention_heads")
    kv_heads = k.int("num_key_value_heads", heads)
    k.divides("num_attention_heads", heads, k.spelt("num_key_value_heads"), kv_heads)
    given = k.int("attention_hidden_size", 2 * hidden) if spec.flag(k, "own_head_dim") else 2 * hidden
    if given != 2 * hidden:
        raise k.fail("attention_hidden_size", given, f"not 2 x hidden_size ({2 * hidden}): the block reads [h, x_0]")
    head_dim = k.int("head_dim", 2 * hidden // heads) if spec.flag(k, "own_head_dim") else 2 * hidden // heads
    module = spec.raw("recurrent", "mamba2")
    part_spec = spec.sub(module)
    reader = kind_module(k.name, module)
    hybrids = sum(t == "hybrid" for t in k.texts("layers_block_type") or [])
    blocks = k.int(spec.raw("blocks"), 1) if spec.raw("blocks") else 1
    adapters = spec.flag(k, "adapters")
    # transformers 5 ties Zamba's shared blocks through _tied_weights_keys, which it applies only when
    # tie_word_embeddings is true (PreTrainedModel.get_expanded_tied_weights_keys): untied, every hybrid layer keeps
    # its own block, and each holds the adapters of every hybrid layer i with i % num_mem_blocks = its block_id.
    tied = k.flag("tie_word_embeddings", True)
    if not tied and not hybrids:
        raise CatalogError(
            f"config for {k.name}: untied embeddings and no layers_block_type",
            "Untied, each hybrid layer holds its own block: give layers_block_type so derive can count them",
        )
    spare = 0
    if not tied and adapters:
        per_block = [len(range(c, hybrids, blocks)) for c in range(min(blocks, hybrids))]
        spare = sum(count * count for count in per_block) - hybrids
    width_factor = spec.number(k, "width_factor", 0)  # Zamba2Config: 4 x hidden when intermediate_size is absent
    return ZambaHybrid(
        Attention(heads, kv_heads, head_dim),
        reader.read(part_spec.keys(k), part_spec),
        k.int("intermediate_size", width_factor * hidden or None),
        (min(blocks, hybrids) if hybrids else blocks) if tied else hybrids,
        rank=k.int("adapter_rank") if adapters else 0,
        attention_adapters=adapters and spec.flag(k, "attention_adapters"),
        mlp_bias=spec.flag(k, "mlp_bias"),
        tied=tied,
        spare_adapters=spare,
    )
