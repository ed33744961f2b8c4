"""Write a tiny llama-architecture GGUF that always answers "[1]" (run with an interpreter that has
the ``gguf`` package: ``python tiny_gguf.py OUT.gguf``).

Its vocabulary is SentencePiece-style: ``<unk>``, ``<s>``, ``</s>``, the 256 byte tokens (any text
tokenizes) and a few words. Attention and feed-forward weights are zero, so the residual stream is the
token embedding, which is the same all-ones vector for every token; the output row of ``[1]`` is the
only non-zero one, so every next token is ``[1]`` until the server's length limit. A real model file,
read and run by llama.cpp's own code, with no download.
"""

from __future__ import annotations

import sys

import numpy as np
from gguf import GGUFWriter, TokenType

N_EMBD, N_HEAD, N_FF, N_LAYER, N_CTX = 32, 4, 64, 1, 4096
WORDS = ["[1]", "▁The", "▁answer", "."]
ANSWER = "[1]"


def vocab() -> tuple[list[bytes], list[float], list[int]]:
    tokens = [b"<unk>", b"<s>", b"</s>"] + [f"<0x{b:02X}>".encode() for b in range(256)]
    types = [TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL] + [TokenType.BYTE] * 256
    tokens += [w.encode() for w in WORDS]
    types += [TokenType.NORMAL] * len(WORDS)
    scores = [0.0] * 259 + [-float(i) for i in range(len(WORDS))]
    return tokens, scores, [int(t) for t in types]


def write(path: str) -> None:
    tokens, scores, types = vocab()
    n_vocab = len(tokens)
    w = GGUFWriter(path, "llama")
    w.add_name("aide-tui tiny test model")
    w.add_context_length(N_CTX)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD)
    w.add_rope_dimension_count(N_EMBD // N_HEAD)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(0)  # all F32
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    f32 = np.float32
    w.add_tensor("token_embd.weight", np.ones((n_vocab, N_EMBD), f32))
    w.add_tensor("output_norm.weight", np.ones(N_EMBD, f32))
    out = np.zeros((n_vocab, N_EMBD), f32)
    out[tokens.index(ANSWER.encode())] = 1.0
    w.add_tensor("output.weight", out)
    for i in range(N_LAYER):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(N_EMBD, f32))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(N_EMBD, f32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            w.add_tensor(f"blk.{i}.{name}.weight", np.zeros((N_EMBD, N_EMBD), f32))
        w.add_tensor(f"blk.{i}.ffn_gate.weight", np.zeros((N_FF, N_EMBD), f32))
        w.add_tensor(f"blk.{i}.ffn_up.weight", np.zeros((N_FF, N_EMBD), f32))
        w.add_tensor(f"blk.{i}.ffn_down.weight", np.zeros((N_EMBD, N_FF), f32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    write(sys.argv[1])
