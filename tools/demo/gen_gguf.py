#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Write a tiny llama-architecture GGUF (v3) model with random weights.

The model exists so that the demo and the end-to-end tests have a real
llama.cpp engine to trace without downloading anything: its output is
gibberish, but its prefill and decode cost real, measurable CPU time.

Tokenizer: SentencePiece ("llama") vocabulary of single characters: <unk>,
<s>, </s>, the byte token <0x0A> (llama.cpp looks up the newline token of an
SPM vocabulary by byte fallback) and the printable ASCII characters, space
written as U+2581 as SPM does. No merges can apply, so a prompt of P
printable characters is exactly P tokens (add_space_prefix is off), and
every sampled token decodes to valid text.

Python standard library only. Deterministic for a given --seed.
"""
import argparse
import math
import os
import random
import struct
import sys
from array import array

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
ALIGNMENT = 32

# gguf value types (ggml/include/gguf.h)
T_UINT32, T_INT32, T_FLOAT32, T_BOOL, T_STRING, T_ARRAY = 4, 5, 6, 7, 8, 9
# ggml tensor types
GGML_F32, GGML_F16 = 0, 1
# llama_token_type
TOK_NORMAL, TOK_UNKNOWN, TOK_CONTROL, TOK_BYTE = 1, 2, 3, 6


def gguf_str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, value):
    out = gguf_str(key) + struct.pack("<I", vtype)
    if vtype == T_UINT32:
        out += struct.pack("<I", value)
    elif vtype == T_INT32:
        out += struct.pack("<i", value)
    elif vtype == T_FLOAT32:
        out += struct.pack("<f", value)
    elif vtype == T_BOOL:
        out += struct.pack("<B", 1 if value else 0)
    elif vtype == T_STRING:
        out += gguf_str(value)
    else:
        raise ValueError(vtype)
    return out


def kv_array(key, etype, values):
    out = gguf_str(key) + struct.pack("<IIQ", T_ARRAY, etype, len(values))
    if etype == T_STRING:
        out += b"".join(gguf_str(v) for v in values)
    elif etype == T_FLOAT32:
        out += struct.pack("<%df" % len(values), *values)
    elif etype == T_INT32:
        out += struct.pack("<%di" % len(values), *values)
    else:
        raise ValueError(etype)
    return out


def vocab():
    tokens = ["<unk>", "<s>", "</s>", "<0x0A>"]
    types = [TOK_UNKNOWN, TOK_CONTROL, TOK_CONTROL, TOK_BYTE]
    for c in range(0x20, 0x7F):
        tokens.append("\u2581" if c == 0x20 else chr(c))
        types.append(TOK_NORMAL)
    scores = [0.0] * len(tokens)
    return tokens, scores, types


def tensor_list(a, n_vocab):
    """(name, ne) with ne in ggml order: ne[0] is the row length (input dim)."""
    n_kv = a.n_embd // a.n_head * a.n_head_kv
    ts = [("token_embd.weight", (a.n_embd, n_vocab))]
    for i in range(a.n_layer):
        p = "blk.%d." % i
        ts += [
            (p + "attn_norm.weight", (a.n_embd,)),
            (p + "attn_q.weight", (a.n_embd, a.n_embd)),
            (p + "attn_k.weight", (a.n_embd, n_kv)),
            (p + "attn_v.weight", (a.n_embd, n_kv)),
            (p + "attn_output.weight", (a.n_embd, a.n_embd)),
            (p + "ffn_norm.weight", (a.n_embd,)),
            (p + "ffn_gate.weight", (a.n_embd, a.n_ff)),
            (p + "ffn_up.weight", (a.n_embd, a.n_ff)),
            (p + "ffn_down.weight", (a.n_ff, a.n_embd)),
        ]
    ts += [("output_norm.weight", (a.n_embd,)), ("output.weight", (a.n_embd, n_vocab))]
    return ts


def tensor_data(name, ne, rng, f16):
    n = 1
    for d in ne:
        n *= d
    if name.endswith("norm.weight"):
        return GGML_F32, array("f", [1.0]) * n
    # Uniform with the variance of N(0, 1/fan_in): activations stay in range
    # through the layers, so sampling sees varied, finite logits.
    bound = math.sqrt(3.0 / ne[0])
    if name == "token_embd.weight":
        bound = math.sqrt(3.0)
    u = rng.random
    vals = [(2.0 * u() - 1.0) * bound for _ in range(n)]
    if f16:
        return GGML_F16, struct.pack("<%de" % n, *vals)
    return GGML_F32, array("f", vals)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", required=True, help="GGUF file to write")
    ap.add_argument("--n-embd", type=int, default=384)
    ap.add_argument("--n-layer", type=int, default=4)
    ap.add_argument("--n-head", type=int, default=4)
    ap.add_argument("--n-head-kv", type=int, default=4)
    ap.add_argument("--n-ff", type=int, default=1152)
    ap.add_argument("--n-ctx", type=int, default=2048)
    ap.add_argument("--f16", action="store_true", help="F16 matrices (default F32)")
    ap.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args()
    if a.n_embd % a.n_head or a.n_head % a.n_head_kv:
        print("Error: n_embd must divide by n_head, n_head by n_head_kv", file=sys.stderr)
        return 2
    if sys.byteorder != "little":
        print("Error: this writer emits little-endian GGUF from native arrays", file=sys.stderr)
        return 1

    tokens, scores, types = vocab()
    n_vocab = len(tokens)
    meta = [
        kv("general.architecture", T_STRING, "llama"),
        kv("general.name", T_STRING, "ttftrace-demo-random"),
        kv("general.file_type", T_UINT32, 1 if a.f16 else 0),
        kv("general.alignment", T_UINT32, ALIGNMENT),
        kv("llama.context_length", T_UINT32, a.n_ctx),
        kv("llama.embedding_length", T_UINT32, a.n_embd),
        kv("llama.block_count", T_UINT32, a.n_layer),
        kv("llama.feed_forward_length", T_UINT32, a.n_ff),
        kv("llama.attention.head_count", T_UINT32, a.n_head),
        kv("llama.attention.head_count_kv", T_UINT32, a.n_head_kv),
        kv("llama.attention.layer_norm_rms_epsilon", T_FLOAT32, 1e-5),
        kv("llama.rope.dimension_count", T_UINT32, a.n_embd // a.n_head),
        kv("llama.rope.freq_base", T_FLOAT32, 10000.0),
        kv("llama.vocab_size", T_UINT32, n_vocab),
        kv("tokenizer.ggml.model", T_STRING, "llama"),
        kv_array("tokenizer.ggml.tokens", T_STRING, tokens),
        kv_array("tokenizer.ggml.scores", T_FLOAT32, scores),
        kv_array("tokenizer.ggml.token_type", T_INT32, types),
        kv("tokenizer.ggml.unknown_token_id", T_UINT32, 0),
        kv("tokenizer.ggml.bos_token_id", T_UINT32, 1),
        kv("tokenizer.ggml.eos_token_id", T_UINT32, 2),
        kv("tokenizer.ggml.add_bos_token", T_BOOL, True),
        kv("tokenizer.ggml.add_eos_token", T_BOOL, False),
        kv("tokenizer.ggml.add_space_prefix", T_BOOL, False),
    ]

    rng = random.Random(a.seed)
    infos, blobs, offset = [], [], 0
    for name, ne in tensor_list(a, n_vocab):
        ttype, data = tensor_data(name, ne, rng, a.f16)
        raw = data.tobytes() if isinstance(data, array) else data
        infos.append(gguf_str(name) + struct.pack("<I", len(ne))
                     + struct.pack("<%dQ" % len(ne), *ne) + struct.pack("<IQ", ttype, offset))
        pad = -len(raw) % ALIGNMENT
        blobs.append(raw + b"\0" * pad)
        offset += len(raw) + pad

    head = GGUF_MAGIC + struct.pack("<IQQ", GGUF_VERSION, len(infos), len(meta))
    head += b"".join(meta) + b"".join(infos)
    head += b"\0" * (-len(head) % ALIGNMENT)

    os.makedirs(os.path.dirname(os.path.abspath(a.output)), exist_ok=True)
    tmp = a.output + ".tmp"
    with open(tmp, "wb") as f:
        f.write(head)
        for b in blobs:
            f.write(b)
    os.replace(tmp, a.output)
    n_params = offset // (2 if a.f16 else 4)
    print("wrote %s: %d tensors, ~%.1fM params, %d bytes"
          % (a.output, len(infos), n_params / 1e6, len(head) + offset), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
