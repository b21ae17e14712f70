"""A toy device and a toy dense transformer whose serving estimate is checked by hand."""

from roofkit.testing import make_registry, write_spec

DEVICE = """
name = "toy-gpu"
display_name = "Toy GPU"
category = "cloud"
default_slot = "bf16"

[compute]
bf16 = "100 TFLOP/s"

[memory]
capacity = "10 GB"
bandwidth = "1 TB/s"

[interconnect]
bandwidth = "100 GB/s"
latency = "1 us"
max_devices = 4

[overheads]
dispatch = "10 us"
layer = "0 us"
launch = "5 us"

[sources]
toy = "https://example.com/toy-gpu"

[provenance]
compute = "toy"
memory = "toy"
interconnect = "toy"
overheads = "toy"
"""

WORKLOAD = """
name = "toy-lm"
display_name = "Toy LM"
domain = "language"
template = "dense"

[dims]
layers = 2
hidden = 256
heads = 4
kv_heads = 2
head_dim = 64
ffn = 512
vocab = 1000
tie_embeddings = 0
max_context = 4096
gated_ffn = 1
qkv_bias = 0
norm = 0
learned_pos = 0
sliding_window = 0
sliding_every = 0
attn_sinks = 0

[sources]
config = "https://example.com/toy-lm"

[provenance]
dims = "config"
"""

#: bytes one decode step of the toy reads at batch 1 and tp 1, without the attention's
#: context term, node by node from the circuit's op rules (see test_serving_itl)
STEP_BYTES_AT_ZERO_CONTEXT = 2_911_652
#: KV cache bytes per token: 2 (K, V) * 2 layers * 2 KV heads * 64 * 2 bytes
KV_PER_TOKEN = 1024
#: parameters: per layer 256*(4+2*2)*64 + 4*64*256 + 2*256 + 3*256*512, embedding, head
#: and the final norm
PARAMS = 2 * (131072 + 65536 + 512 + 393216) + 2 * 1000 * 256 + 256
#: norm weights (replicated under tensor parallelism): 2 per layer and the final one
NORM_PARAMS = 5 * 256


def toy_registry(tmp_path):
    write_spec(tmp_path, "devices", "toy-gpu", DEVICE)
    write_spec(tmp_path, "workloads", "toy-lm", WORKLOAD)
    return make_registry(spec_paths=[tmp_path], cache=False)
