"""Model sizes for the fixture family (small, committed) and the benchmark family (--full)."""
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ModelConfig:
    name: str
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    n_experts: int
    top_k: int
    expert_hidden: int
    vocab: int
    head_splits: int
    seq: int
    n_layers: int
    cache_len: int = 16        # KV-cache length of the stateful attention variant
    kv_chunk: int = 4          # tokens per call of the stateful attention variant
    n_packs: int = 2           # MoE pack shards per layer in the sample chain
    eps: float = 1e-5          # RMSNorm epsilon (stored as fp16 in the shards)
    rope_theta: float = 10000.0
    mask_value: float = -3.0e4  # finite causal-mask value: -inf would poison fp16 softmax sums
    # Residual-stream channels carrying large systematic values (the "outlier features" of
    # LLM.int8(), Dettmers et al. 2022), and their magnitudes. Empty for the benchmark family.
    outlier_channels: tuple = ()
    outlier_values: tuple = ()

    @property
    def q_dim(self):
        return self.n_heads * self.head_dim

    @property
    def kv_dim(self):
        return self.n_kv_heads * self.head_dim

    @property
    def bank_dim(self):
        return self.n_experts * self.expert_hidden

    @property
    def vocab_split(self):
        return self.vocab // self.head_splits


SMALL = ModelConfig(
    name="tiny-moe", d_model=64, n_heads=4, n_kv_heads=2, head_dim=16, n_experts=16, top_k=2,
    expert_hidden=32, vocab=192, head_splits=3, seq=8, n_layers=4,
    outlier_channels=(7, 45), outlier_values=(12.0, -10.0))

# Benchmark size: d_model 2048, 16 heads / 2 KV heads of 128. Expert hidden 768 gives
# 16 experts x 3 matrices x 2048 x 768 = 75.5 M weights = 151 MB fp16 per MoE shard, inside
# the 100-200 MB range of real layer shards (1024 would give 201 MB).
FULL = ModelConfig(
    name="full-moe", d_model=2048, n_heads=16, n_kv_heads=2, head_dim=128, n_experts=16,
    top_k=2, expert_hidden=768, vocab=192, head_splits=3, seq=8, n_layers=1)
