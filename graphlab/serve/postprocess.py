"""Post-processing: scores copied back from the GPU become each request's top-k answer.

Runs on the post-processing thread, after the batch's CUDA event has completed, on CPU tensors:
softmax over the scores, the k best, and their names (the next token's text for gpt, "class N"
for the classifiers). The GPU worker's thread never waits for this.

    >>> import torch
    >>> from graphlab.serve.postprocess import top_k_rows
    >>> top_k_rows(torch.tensor([[0.0, 2.0, 1.0]]), k=2, kind="vector")[0][0]["id"]
    1
"""
from __future__ import annotations

from typing import Any

import torch

from graphlab.serve.preprocess import ByteTokenizer


def top_k_rows(scores: torch.Tensor, k: int, kind: str, vocab: int = 512) -> list[list[dict[str, Any]]]:
    """For each row of `scores` (rows, classes): the k best as [{"id", "label", "prob"}], best first."""
    probs = torch.softmax(scores.float(), dim=-1)
    values, indices = torch.topk(probs, min(k, probs.shape[-1]), dim=-1)
    tokenizer = ByteTokenizer(vocab) if kind == "text" else None
    out = []
    for row_values, row_ids in zip(values.tolist(), indices.tolist()):
        out.append([{"id": i, "label": tokenizer.decode_token(i) if tokenizer else f"class {i}", "prob": round(p, 6)}
                    for i, p in zip(row_ids, row_values)])
    return out


__all__ = ["top_k_rows"]
