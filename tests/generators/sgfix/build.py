"""Program → converted, compressed, saved shard; returns what the oracle needs from it."""
import os

from . import compress, package


def build_shard(prog, variant, path, description, cfg, stateful=False, metadata=None,
                keep_fp16=()):
    model = compress.compress(compress.convert(prog, stateful), variant,
                              router_rows=cfg.n_experts, keep_fp16=keep_fp16)
    md = {"com.shardgate.variant": variant}
    md.update(metadata or {})
    package.save(model, path, description, md)
    weights = compress.weights_by_consumer(model)
    return {"path": path, "name": os.path.basename(path), "variant": variant,
            "weights": weights, "op_types": compress.op_types(model),
            "inputs": [i.name for i in model.get_spec().description.input],
            "outputs": [o.name for o in model.get_spec().description.output],
            "states": [s.name for s in model.get_spec().description.state]}


def decoded(shard, consumer):
    return shard["weights"][consumer]["decoded"]


def attention_weights(shard, dense):
    w = dict(dense)
    for key, op in (("wq", "q_proj"), ("wk", "k_proj"), ("wv", "v_proj"), ("wo", "o_proj")):
        w[key] = decoded(shard, op)
    return w


def moe_weights(shard, dense, down_op):
    w = dict(dense)
    for key, op in (("router", "router"), ("gate", "experts_gate"), ("up", "experts_up"),
                    ("down", down_op)):
        w[key] = decoded(shard, op)
    return w


def head_weights(shard, dense):
    w = dict(dense)
    w["w"] = decoded(shard, "logits")
    return w


def embed_table(shard):
    (entry,) = shard["weights"].values()
    return entry["decoded"]
