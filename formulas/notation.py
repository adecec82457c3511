"""Every symbol the formulas use: one definition a line (key, name, unit, LaTeX, meaning).

Units are base units; a blank unit is a pure number. Shapes from a config are
pure numbers (a hidden size counts values); counts of parameters, tokens and
sequences carry their own dimension.
"""

from derive.core.symbols import alias, constant, define

# Shapes read from a model's config.json.
V = define("vocab", "V", "", "V", "vocabulary size")
d = define("hidden", "d", "", "d", "hidden size (d_model)")
L = define("layers", "L", "", "L", "transformer layers")
n_h = define("heads", "n_h", "", "n_h", "attention (query) heads")
n_kv = define("kv_heads", "n_kv", "", r"n_{kv}", "key/value heads (GQA groups)")
d_h = define("head_dim", "d_h", "", "d_h", "dimension of one attention head")
d_hv = define("value_head_dim", "d_hv", "", r"d_{hv}", "dimension of one value head, where it differs from d_h")
d_ff = define("intermediate", "d_ff", "", r"d_{ff}", "MLP intermediate size")
n_pos = define("positions", "n_pos", "", r"n_{pos}", "learned position embeddings")
d_pl = define("per_layer_input", "d_pl", "", r"d_{pl}", "width of each layer's own input embedding (Gemma 4)")
V_pl = define("per_layer_vocab", "V_pl", "", r"V_{pl}", "rows of the per-layer input embedding table")
d_b = define("bridge_width", "d_b", "", "d_b", "hidden width of the model a drafter's projections bridge to")
n_xr = define("extra_rows", "n_xr", "", r"n_{xr}", "input-embedding rows past the vocabulary (the head has none)")
E = define("experts", "E", "", "E", "routed experts per MoE layer")
k_e = define("experts_per_token", "k_e", "", "k_e", "routed experts each token uses (top-k)")
E_s = define("shared_experts", "E_s", "", "E_s", "shared experts per MoE layer (every token uses them)")
d_e = define("expert_intermediate", "d_e", "", "d_e", "intermediate size of one expert")
L_e = define("moe_layers", "L_e", "", "L_e", "layers whose MLP is a mixture of experts")
L_d = define("dense_layers", "L_d", "", "L_d", "layers whose MLP is dense")
r_q = define("q_lora_rank", "r_q", "", "r_q", "MLA query compression rank")
r_kv = define("kv_lora_rank", "r_kv", "", r"r_{kv}", "MLA key/value latent rank (what is cached)")
d_nope = define("qk_nope_dim", "d_nope", "", r"d_{nope}", "MLA query/key dimension without rotary")
d_rope = define("qk_rope_dim", "d_rope", "", r"d_{rope}", "MLA rotary query/key dimension (cached beside the latent)")
d_v = define("v_head_dim", "d_v", "", "d_v", "MLA value head dimension")
d_s = define("shared_expert_intermediate", "d_s", "", "d_s", "intermediate size of one shared expert")
n_idx = define("index_heads", "n_idx", "", r"n_{idx}", "sparse-attention indexer heads")
d_idx = define(
    "index_head_dim", "d_idx", "", r"d_{idx}", "sparse-attention indexer head dimension (its keys are cached)"
)
n_lk = define("linear_key_heads", "n_lk", "", r"n_{lk}", "linear-attention key heads")
n_lv = define("linear_value_heads", "n_lv", "", r"n_{lv}", "linear-attention value heads")
d_lk = define("linear_key_dim", "d_lk", "", r"d_{lk}", "linear-attention key head dimension")
d_lv = define("linear_value_dim", "d_lv", "", r"d_{lv}", "linear-attention value head dimension")
n_m = define("mamba_heads", "n_m", "", "n_m", "Mamba-2 heads")
d_m = define("mamba_head_dim", "d_m", "", "d_m", "Mamba-2 head dimension")
d_st = define("ssm_state", "d_st", "", r"d_{st}", "Mamba-2 state size per head and group")
g_m = define("mamba_groups", "g_m", "", "g_m", "Mamba-2 groups sharing B and C")
c_cv = define("conv_kernel", "c_cv", "", r"c_{cv}", "causal convolution kernel width (linear attention, Mamba)")
d_lat = define("moe_latent", "d_lat", "", r"d_{lat}", "latent width the routed experts work in (latent MoE)")
g_o = define("output_groups", "g_o", "", "g_o", "groups of DeepSeek V4's grouped output projection")
r_o = define("o_lora_rank", "r_o", "", "r_o", "rank of DeepSeek V4's output projection, per group")
m_c = define("compress_ratio", "m_c", "", "m_c", "tokens compressed into one cached entry (DeepSeek V4)")
n_hc = define("hyper_connections", "n_hc", "", r"n_{hc}", "hyper-connection residual streams")

# Token spans that cap what a layer attends to and caches (tokens of one sequence).
S_win = define("sliding_window", "S_win", "token/sequence", r"S_{win}", "tokens a sliding-window layer attends to")
S_chunk = define("attention_chunk", "S_chunk", "token/sequence", r"S_{chunk}", "tokens of a chunked-attention chunk")
S_top = define("index_topk", "S_top", "token/sequence", r"S_{top}", "tokens the sparse-attention indexer selects")

# Parameter counts, from the shapes (derive/architecture/build.py).
N = define("total_params", "N", "parameter", "N", "parameters in the checkpoint")
N_act = define("active_params", "N_act", "parameter", r"N_{act}", "parameters one token uses")
N_emb = define(
    "embedding_params", "N_emb", "parameter", r"N_{emb}", "input embedding parameters (a lookup: no arithmetic)"
)
N_attn = define("attention_params", "N_attn", "parameter", r"N_{attn}", "attention projection parameters")
N_mlp = define("mlp_params", "N_mlp", "parameter", r"N_{mlp}", "dense MLP parameters")
N_router = define("router_params", "N_router", "parameter", r"N_{router}", "MoE router parameters")
N_routed = define(
    "routed_expert_params", "N_routed", "parameter", r"N_{routed}", "routed expert parameters, all experts"
)
N_routed_act = define(
    "active_routed_params", "N_routed_act", "parameter", r"N_{routed,act}", "routed expert parameters one token uses"
)
N_rb = define(
    "router_correction_params",
    "N_rb",
    "parameter",
    r"N_{rb}",
    "router score-correction biases (stored in the checkpoint; a buffer in transformers)",
)
N_shared = define("shared_expert_params", "N_shared", "parameter", r"N_{shared}", "shared expert parameters")
N_norm = define("norm_params", "N_norm", "parameter", r"N_{norm}", "normalisation parameters (elementwise: no matmul)")
N_reuse = define(
    "reused_shared_params",
    "N_reuse",
    "parameter",
    r"N_{reuse}",
    "shared-block weights a token multiplies through again",
)
N_skip = define(
    "skipped_mixer_params", "N_skip", "parameter", r"N_{skip}", "routed attention-expert parameters a token skips"
)
N_ple = define(
    "per_layer_input_params", "N_ple", "parameter", r"N_{ple}", "per-layer input projections and gates (Gemma 4)"
)
N_bridge = define(
    "bridge_params", "N_bridge", "parameter", r"N_{bridge}", "a drafter's projections from and to its backbone's width"
)
N_mlat = define(
    "moe_latent_params", "N_mlat", "parameter", r"N_{mlat}", "latent MoE projections into and out of the experts' width"
)
N_head = define("head_params", "N_head", "parameter", r"N_{head}", "LM head parameters stored apart from the embedding")
N_lm = define(
    "lm_head_matmul_params", "N_lm", "parameter", r"N_{lm}", "parameters of the LM head matmul (V x d, tied or not)"
)
N_res = define(
    "residual_params", "N_res", "parameter", r"N_{res}", "residual-stream mixing parameters (hyper-connections)"
)
N_mm = define(
    "matmul_params", "N_mm", "parameter", r"N_{mm}", "parameters each token multiplies through (head included)"
)

N_look = define(
    "lookup_params",
    "N_look",
    "parameter",
    r"N_{look}",
    "parameters only looked up, never multiplied whole: the input embedding (unless the head shares it), positions",
)
n_g = define(
    "lookup_params_per_token",
    "n_g",
    "parameter/token",
    "n_g",
    "parameters one token gathers from the lookup tables: one row of each",
)

# Kernels, shared by the launch-overhead and step-budget formulas.
k_l = define("kernels_per_layer", "k_l", "", "k_l", "kernels one layer launches per step")

# Per-token cache and attention work, from the shapes.
v_kv = define("kv_values_per_token", "v_kv", "1/token", r"v_{kv}", "values cached per token of context")
a = define(
    "attention_flops_per_cached_token",
    "a",
    "FLOP*sequence/token**2",
    "a",
    "attention FLOPs per query token, per cached token of its sequence",
)
a_pre = define(
    "prompt_attention_flops_per_cached_token",
    "a_pre",
    "FLOP*sequence/token**2",
    r"a_{pre}",
    "attention FLOPs per prompt token, per earlier token of its prompt, where a prompt pass attends another way",
)

s_st = define("state_values", "s_st", "1/sequence", r"s_{st}", "recurrent-state values one sequence keeps")
q_cv = define("conv_state_values", "q_cv", "1/sequence", r"q_{cv}", "convolution-window values one sequence keeps")
f_st = define(
    "state_flops_per_token", "f_st", "FLOP/token", r"f_{st}", "FLOPs per token to update and read recurrent state"
)
a_idx = define(
    "index_flops_per_cached_token",
    "a_idx",
    "FLOP*sequence/token**2",
    r"a_{idx}",
    "sparse-attention indexer FLOPs per query token, per cached token",
)

# Number formats.
b_w = define("weight_dtype_bytes", "b_w", "byte/parameter", "b_w", "bytes per stored weight")
b_kv = define("kv_dtype_bytes", "b_kv", "byte", r"b_{kv}", "bytes per cached value")
b_st = define(
    "state_dtype_bytes", "b_st", "byte", r"b_{st}", "bytes per recurrent-state value (linear attention, Mamba)"
)
b_x = define(
    "expert_dtype_bytes", "b_x", "byte/parameter", "b_x", "bytes per routed-expert weight, as the checkpoint ships them"
)

# Constants.
c_mac = constant(
    "flops_per_mac",
    "c_MAC",
    2,
    "FLOP/(parameter*token)",
    r"c_{\mathrm{MAC}}",
    "FLOPs per parameter per token: one multiply and one add",
)

S_sc = constant(
    "scored_tokens",
    "S_sc",
    1,
    "token/sequence",
    r"S_{sc}",
    "prompt tokens per sequence the LM head scores: the last, whose logits give the first output token",
)

# Workload.
B = define("batch", "B", "sequence", "B", "sequences decoded together")
S = define("context", "S", "token/sequence", "S", "tokens of context each sequence holds")
S_p = define("prompt", "S_p", "token/sequence", r"S_p", "prompt tokens per sequence")
S_o = define("output", "S_o", "token/sequence", r"S_o", "output tokens per sequence")
tau = define("tokens_per_step", "tau", "token/sequence", r"\tau", "tokens each sequence gains per forward pass")

# Accelerator and parallelism.
BW = define("bandwidth", "BW", "byte/second", r"BW", "memory bandwidth of one accelerator")
P = define("peak_flops", "P", "FLOP/second", "P", "peak dense FLOP/s of one accelerator in the compute dtype")
M = define("memory", "M", "byte", "M", "memory of one accelerator")
n = define("tp", "n", "", "n", "tensor-parallel degree (accelerators sharing each layer)")
h_kv = define(
    "kv_splits", "h_kv", "", r"h_{kv}", "most ways tensor parallelism splits the cache: its KV heads (1 for a latent)"
)
s_kv = define(
    "kv_shards",
    "s_kv",
    "",
    r"s_{kv}",
    "ways tensor parallelism splits the cache: the whole over one accelerator's share",
)
s_kvp = define(
    "prompt_kv_shards",
    "s_kvp",
    "",
    r"s_{kv,p}",
    "ways tensor parallelism splits the cache after a prompt: the whole over one accelerator's share",
)

# Derived quantities (defined in memory.py, flops.py, roofline.py).
W = define("weight_bytes", "W", "byte", "W", "bytes of weights")
k = define("kv_bytes_per_token", "k", "byte/token", "k", "KV-cache bytes per token of context")
k_m = define(
    "kv_marginal_bytes_per_token",
    "k_m",
    "byte/token",
    "k_m",
    "KV-cache bytes each further token adds, past every window",
)
K_fix = define(
    "kv_fixed_bytes_per_sequence",
    "K_fix",
    "byte/sequence",
    r"K_{fix}",
    "cache one sequence holds whatever its length, past every window: full windows and recurrent state",
)
kv_seq = define("kv_bytes_per_sequence", "K_seq", "byte/sequence", r"K_{seq}", "KV-cache bytes of one sequence")
K_pr = define(
    "prompt_kv_bytes_per_sequence",
    "K_pr",
    "byte/sequence",
    r"K_{pr}",
    "KV-cache bytes one sequence holds after its prompt",
)
F_pre = define(
    "prefill_attention_flops_per_token",
    "F_pre",
    "FLOP/token",
    r"F_{pre}",
    "attention FLOPs per prompt token, averaged over a causal prompt of S_p tokens",
)
kv_total = define("kv_bytes", "K", "byte", "K", "KV-cache bytes of the batch (read once per decode step)")
alias("kv_read_bytes", kv_total)
F = define("weight_flops_per_token", "F", "FLOP/token", "F", "matmul FLOPs per token through the weights")
F_lm = define("lm_head_flops_per_token", "F_lm", "FLOP/token", r"F_{lm}", "FLOPs a token spends in the LM head")
F_pw = define(
    "prompt_weight_flops_per_sequence",
    "F_pw",
    "FLOP/sequence",
    r"F_{pw}",
    "matmul FLOPs of one sequence's prompt pass: every prompt token through the weights, the head on the last",
)
t_mem = define("memory_time", "t_mem", "second", r"t_{mem}", "time to read the step's bytes from memory")
t_comp = define("compute_time", "t_comp", "second", r"t_{comp}", "time for the step's FLOPs at peak")
t_step = define("step_time", "t_step", "second", r"t_{step}", "decode step time (roofline)")
R = define("throughput_floor", "R", "token/second", "R", "tokens per second, all sequences, at the roofline step time")
B_max = define(
    "max_batch_by_memory", "B_max", "sequence", r"B_{max}", "most sequences the memory holds beside the weights"
)
B_knee = define("knee_batch", "B_knee", "sequence", r"B_{knee}", "batch where compute time meets memory time")
S_knee = define("knee_context_limit", "S_knee", "token/sequence", r"S_{knee}", "context above which no knee exists")
R_max = define(
    "throughput_ceiling", "R_inf", "token/second", r"R_{\infty}", "throughput as the batch grows without bound"
)
B_half = define(
    "half_ceiling_batch",
    "B_half",
    "sequence",
    r"B_{1/2}",
    "batch where memory-bound throughput is half its ceiling: the cache read equals the weights the step reads "
    "(solved in derive knee)",
)
R_at_max = define(
    "throughput_at_max_batch", "R_Bmax", "token/second", r"R(B_{max})", "throughput at the largest batch memory holds"
)
