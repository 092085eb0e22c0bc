"""Build the workloads inside a worker, from the Keras of the worker's tree.

Runs only in a worker process (``worker.py``), after the tree's Keras was
imported: ``keras`` and ``torch`` are passed in, never imported here, so this
module cannot pick up an installed Keras by accident. Each builder returns a
``Built``: the call to time (no arguments, everything bound), a function
that gives the outputs to compare across arms, and the variables that take
the parent's weights. Keras objects are untyped, hence ``Any``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from series.runs.bench.spec import GENERATE, UP_VOCAB, UP_WINDOW, VOCAB

D_MODEL = 128
HEADS = 4
MAX_LEN = 64
# Upstream's LLM: width, heads (key_dim = UP_D // HEADS = 64), feed-forward.
UP_D = 256
UP_FF = 1024


@dataclass
class Built:
    call: Callable[[], Any]
    outputs: Callable[[], dict[str, np.ndarray]]
    variables: list[Any] = field(default_factory=list)  # weights, in a fixed order
    model: Any = None  # what scorecard traces (called with ``args``)
    args: tuple[Any, ...] = ()


def _np(value: Any) -> np.ndarray:
    if hasattr(value, "detach"):
        return np.asarray(value.detach().cpu().numpy())
    return np.asarray(value)


def _keras_out(keras: Any, call: Callable[[], Any]) -> Callable[[], dict[str, np.ndarray]]:
    return lambda: {"y": np.asarray(keras.ops.convert_to_numpy(call()))}


def _dense(keras: Any, torch: Any, x: Any) -> Built:
    layer = keras.layers.Dense(64)
    layer(x)
    call = lambda: layer(x)  # noqa: E731
    return Built(call, _keras_out(keras, call), list(layer.weights), layer, (x,))


def _dense_training(keras: Any, torch: Any, x: Any) -> Built:
    """``dense`` as a training loop's eval step calls it: ``training=`` given."""
    layer = keras.layers.Dense(64)
    layer(x, training=False)
    call = lambda: layer(x, training=False)  # noqa: E731
    return Built(call, _keras_out(keras, call), list(layer.weights), layer, (x,))


def _layer_call(keras: Any, torch: Any, x: Any) -> Built:
    class Identity(keras.layers.Layer):  # type: ignore[misc]
        def call(self, inputs: Any) -> Any:
            return inputs

    layer = Identity()
    layer(x)
    call = lambda: layer(x)  # noqa: E731
    return Built(call, _keras_out(keras, call), [], layer, (x,))


def _mha(keras: Any, torch: Any, x: Any) -> Built:
    layer = keras.layers.MultiHeadAttention(num_heads=HEADS, key_dim=16)
    layer(x, x, use_causal_mask=True)
    call = lambda: layer(x, x, use_causal_mask=True)  # noqa: E731
    return Built(call, _keras_out(keras, call), list(layer.weights))


def _standardize_dtype(keras: Any, torch: Any) -> Built:
    fn = keras.src.backend.standardize_dtype

    def call() -> Any:
        return fn("float32")

    return Built(call, lambda: {"y": np.asarray(str(call()))})


def _convert_to_tensor(keras: Any, torch: Any, x: Any) -> Built:
    fn = keras.ops.convert_to_tensor
    call = lambda: fn(x)  # noqa: E731
    return Built(call, _keras_out(keras, call))


def _tree(keras: Any, torch: Any, x: Any) -> Built:
    """``keras.tree`` over nested dicts built in another key order (P18, P23)."""
    tree = keras.tree
    rows = [x[i] for i in range(8)]
    structure = {
        "layers": [
            {"kernel": rows[0], "bias": rows[1], "extra": {"scale": rows[2]}},
            {"kernel": rows[3], "bias": rows[4], "extra": {"scale": rows[5]}},
        ],
        "embedding": {"table": rows[6], "positions": (rows[7],)},
    }

    def call() -> Any:
        visited = tree.traverse(lambda v: None, structure, top_down=True)
        leaves = tree.flatten(visited)
        return tree.pack_sequence_as(structure, leaves)

    def outputs() -> dict[str, np.ndarray]:
        leaves = tree.flatten(call())
        return {"y": np.stack([_np(leaf) for leaf in leaves])}

    return Built(call, outputs)


def _block(keras: Any, width: int, hidden: int) -> Any:
    """The transformer block of both LMs: LayerNorm, causal attention, residual,
    LayerNorm, Dense ``hidden`` gelu, Dense ``width``, residual."""
    layers = keras.layers

    class Block(layers.Layer):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.ln1 = layers.LayerNormalization()
            self.att = layers.MultiHeadAttention(num_heads=HEADS, key_dim=width // HEADS)
            self.ln2 = layers.LayerNormalization()
            self.ff1 = layers.Dense(hidden, activation="gelu")
            self.ff2 = layers.Dense(width)

        def call(self, x: Any) -> Any:
            h = self.ln1(x)
            x = x + self.att(h, h, use_causal_mask=True)
            return x + self.ff2(self.ff1(self.ln2(x)))

    return Block


def _lm(keras: Any) -> Any:
    layers, ops = keras.layers, keras.ops
    Block = _block(keras, D_MODEL, 4 * D_MODEL)

    class LM(keras.Model):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.tok = layers.Embedding(VOCAB, D_MODEL)
            self.pos = layers.Embedding(MAX_LEN, D_MODEL)
            self.blocks = [Block(), Block()]
            self.ln = layers.LayerNormalization()
            self.head = layers.Dense(VOCAB)

        def call(self, ids: Any) -> Any:
            positions = ops.expand_dims(ops.arange(ops.shape(ids)[1]), 0)
            x = self.tok(ids) + self.pos(positions)
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln(x))

    return LM()


def _forward(keras: Any, model: Any, x: Any) -> Built:
    """One call of ``model`` on ``x`` (built by a first call here)."""
    model(x)
    call = lambda: model(x)  # noqa: E731
    return Built(call, _keras_out(keras, call), list(model.weights), model, (x,))


def _lm_forward(keras: Any, torch: Any, ids: Any) -> Built:
    return _forward(keras, _lm(keras), ids)


def _greedy(keras: Any, model: Any, ids: Any, window: int | None, scope: Any) -> Built:
    """Greedy generation of ``GENERATE`` tokens by a built ``model`` from ``ids``, each
    step fed the last ``window`` tokens (all of them with None), inside ``scope()``."""
    model(ids)
    ops = keras.ops

    def generate() -> Any:
        out = ids
        with scope():
            for _ in range(GENERATE):
                logits = model(out if window is None else out[:, -window:])
                token = ops.cast(ops.argmax(logits[:, -1, :], axis=-1), "int32")
                out = ops.concatenate([out, ops.expand_dims(token, 1)], axis=1)
        return out

    return Built(generate, _keras_out(keras, generate), list(model.weights))


def _lm_generate(keras: Any, torch: Any, ids: Any) -> Built:
    return _greedy(keras, _lm(keras), ids, None, contextlib.nullcontext)


def _cnn(keras: Any, torch: Any, x: Any) -> Built:
    layers = keras.layers
    model = keras.Sequential(
        [
            keras.Input((32, 32, 3)),
            layers.Conv2D(16, 3, padding="same", activation="relu"),
            layers.MaxPooling2D(2),
            layers.Conv2D(32, 3, padding="same", activation="relu"),
            layers.MaxPooling2D(2),
            layers.GlobalAveragePooling2D(),
            layers.Dense(10),
        ]
    )
    return _forward(keras, model, x)


def _llm(keras: Any) -> Any:
    """Upstream's LLM (SERIES.md): 2,105,344 parameters, no position embedding."""
    layers = keras.layers
    Block = _block(keras, UP_D, UP_FF)

    class LLM(keras.Model):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.tok = layers.Embedding(UP_VOCAB, UP_D)
            self.blocks = [Block(), Block()]
            self.ln = layers.LayerNormalization()
            self.head = layers.Dense(UP_VOCAB)

        def call(self, ids: Any) -> Any:
            x = self.tok(ids)
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln(x))

    return LLM()


def _llm_forward(keras: Any, torch: Any, ids: Any) -> Built:
    return _forward(keras, _llm(keras), ids)


def _llm_generate(keras: Any, torch: Any, ids: Any) -> Built:
    """Greedy, over a sliding window of the last 64 tokens, under ``torch.no_grad``."""
    return _greedy(keras, _llm(keras), ids, UP_WINDOW, torch.no_grad)


def _cnn_up(keras: Any, torch: Any, x: Any) -> Built:
    """Upstream's CNN (SERIES.md): 113,866 parameters; relu, "same" padding."""
    layers = keras.layers
    model = keras.Sequential(
        [
            keras.Input((32, 32, 3)),
            layers.Conv2D(64, 3, padding="same", activation="relu"),
            layers.Conv2D(64, 3, padding="same", activation="relu"),
            layers.MaxPooling2D(2),
            layers.Conv2D(128, 3, padding="same", activation="relu"),
            layers.GlobalAveragePooling2D(),
            layers.Dense(10),
        ]
    )
    return _forward(keras, model, x)


def _torch_out(call: Callable[[], Any]) -> Callable[[], dict[str, np.ndarray]]:
    return lambda: {"y": _np(call())}


def _torch_linear(keras: Any, torch: Any, x: Any) -> Built:
    torch.manual_seed(0)
    layer = torch.nn.Linear(32, 64)
    call = lambda: layer(x)  # noqa: E731
    return Built(call, _torch_out(call))


def _torch_mha(keras: Any, torch: Any, x: Any) -> Built:
    torch.manual_seed(0)
    qkv, proj = torch.nn.Linear(64, 3 * 64), torch.nn.Linear(64, 64)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    batch, seq, _ = x.shape

    def call() -> Any:
        q, k, v = qkv(x).view(batch, seq, 3, HEADS, 16).permute(2, 0, 3, 1, 4)
        out = sdpa(q, k, v, is_causal=True)
        return proj(out.transpose(1, 2).reshape(batch, seq, 64))

    return Built(call, _torch_out(call))


def _torch_cnn(keras: Any, torch: Any, x: Any) -> Built:
    torch.manual_seed(0)
    nn = torch.nn
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(32, 10),
    )
    nchw = x.permute(0, 3, 1, 2).contiguous()
    call = lambda: model(nchw)  # noqa: E731
    return Built(call, _torch_out(call))


def _torch_lm(torch: Any) -> Any:
    """The small LM of ``_lm`` in raw torch: the same layers and shapes."""
    nn, functional = torch.nn, torch.nn.functional
    head_dim = D_MODEL // HEADS

    class Block(nn.Module):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.ln1 = nn.LayerNorm(D_MODEL, eps=1e-3)
            self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)
            self.proj = nn.Linear(D_MODEL, D_MODEL)
            self.ln2 = nn.LayerNorm(D_MODEL, eps=1e-3)
            self.ff1 = nn.Linear(D_MODEL, 4 * D_MODEL)
            self.ff2 = nn.Linear(4 * D_MODEL, D_MODEL)

        def forward(self, x: Any) -> Any:
            batch, seq, _ = x.shape
            qkv = self.qkv(self.ln1(x)).view(batch, seq, 3, HEADS, head_dim)
            q, k, v = qkv.permute(2, 0, 3, 1, 4)
            att = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(att.transpose(1, 2).reshape(batch, seq, D_MODEL))
            return x + self.ff2(functional.gelu(self.ff1(self.ln2(x))))

    class LM(nn.Module):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.Embedding(VOCAB, D_MODEL)
            self.pos = nn.Embedding(MAX_LEN, D_MODEL)
            self.blocks = nn.ModuleList([Block(), Block()])
            self.ln = nn.LayerNorm(D_MODEL, eps=1e-3)
            self.head = nn.Linear(D_MODEL, VOCAB)

        def forward(self, ids: Any) -> Any:
            positions = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
            x = self.tok(ids) + self.pos(positions)
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln(x))

    torch.manual_seed(0)
    return LM().eval()


def _torch_lm_forward(keras: Any, torch: Any, ids: Any) -> Built:
    model = _torch_lm(torch)
    ids = ids.long()

    def call() -> Any:
        with torch.no_grad():
            return model(ids)

    return Built(call, _torch_out(call))


def _torch_lm_generate(keras: Any, torch: Any, ids: Any) -> Built:
    model = _torch_lm(torch)
    ids = ids.long()

    def generate() -> Any:
        out = ids
        with torch.no_grad():
            for _ in range(GENERATE):
                token = model(out)[:, -1, :].argmax(dim=-1, keepdim=True)
                out = torch.cat([out, token], dim=1)
        return out

    return Built(generate, _torch_out(generate))


class _Slot:
    """A Keras-shaped variable over a torch parameter (or a slice of one).

    The twins keep torch's own layout (``nn.Linear`` holds (out, in), a
    fused q/k/v projection one matrix); ``assign`` takes the array in the
    Keras layout and writes it where torch keeps it, so a twin is given the
    very weights of its Keras workload.
    """

    def __init__(
        self, torch: Any, target: Any, shape: tuple[int, ...], layout: Callable[[Any], Any]
    ) -> None:
        self.torch, self.target, self.shape, self.layout = torch, target, shape, layout

    def assign(self, array: np.ndarray) -> None:
        with self.torch.no_grad():
            self.target.copy_(self.layout(self.torch.as_tensor(array)))


def _slots(torch: Any, module: Any, shapes: list[tuple[int, ...]]) -> list[_Slot]:
    """Slots for a torch module of the Keras kinds: (kernel, bias) or (gamma, beta)."""
    nn = torch.nn
    same = lambda t: t  # noqa: E731
    if isinstance(module, nn.Linear):
        return [
            _Slot(torch, module.weight, shapes[0], lambda t: t.reshape(-1, t.shape[-1]).T),
            _Slot(torch, module.bias, shapes[1], same),
        ]
    if isinstance(module, nn.Conv2d):
        return [
            _Slot(torch, module.weight, shapes[0], lambda t: t.permute(3, 2, 0, 1)),
            _Slot(torch, module.bias, shapes[1], same),
        ]
    return [_Slot(torch, p, s, same) for p, s in zip(module.parameters(), shapes, strict=True)]


def _torch_llm(torch: Any) -> tuple[Any, list[_Slot]]:
    """Upstream's LLM in raw torch, and its weights in the order of ``_llm``'s."""
    nn, functional = torch.nn, torch.nn.functional
    head_dim = UP_D // HEADS
    vector = (UP_D,)
    heads, head_bias = (UP_D, HEADS, head_dim), (HEADS, head_dim)

    class Block(nn.Module):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.ln1 = nn.LayerNorm(UP_D, eps=1e-3)
            self.qkv = nn.Linear(UP_D, 3 * UP_D)
            self.proj = nn.Linear(UP_D, UP_D)
            self.ln2 = nn.LayerNorm(UP_D, eps=1e-3)
            self.ff1 = nn.Linear(UP_D, UP_FF)
            self.ff2 = nn.Linear(UP_FF, UP_D)

        def forward(self, x: Any) -> Any:
            batch, seq, _ = x.shape
            qkv = self.qkv(self.ln1(x)).view(batch, seq, 3, HEADS, head_dim)
            q, k, v = qkv.permute(2, 0, 3, 1, 4)
            att = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(att.transpose(1, 2).reshape(batch, seq, UP_D))
            return x + self.ff2(functional.gelu(self.ff1(self.ln2(x))))

        def slots(self) -> list[_Slot]:
            qkv = []
            for part in range(3):  # query, key, value: rows of the fused projection
                rows = slice(part * UP_D, (part + 1) * UP_D)
                qkv += [
                    _Slot(torch, self.qkv.weight[rows], heads, lambda t: t.reshape(UP_D, -1).T),
                    _Slot(torch, self.qkv.bias[rows], head_bias, lambda t: t.reshape(-1)),
                ]
            return [
                *_slots(torch, self.ln1, [vector, vector]),
                *qkv,
                *_slots(torch, self.proj, [(HEADS, head_dim, UP_D), vector]),
                *_slots(torch, self.ln2, [vector, vector]),
                *_slots(torch, self.ff1, [(UP_D, UP_FF), (UP_FF,)]),
                *_slots(torch, self.ff2, [(UP_FF, UP_D), vector]),
            ]

    class LLM(nn.Module):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.Embedding(UP_VOCAB, UP_D)
            self.blocks = nn.ModuleList([Block(), Block()])
            self.ln = nn.LayerNorm(UP_D, eps=1e-3)
            self.head = nn.Linear(UP_D, UP_VOCAB)

        def forward(self, ids: Any) -> Any:
            x = self.tok(ids)
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln(x))

    model = LLM().eval()
    slots = [
        *_slots(torch, model.tok, [(UP_VOCAB, UP_D)]),
        *(slot for block in model.blocks for slot in block.slots()),
        *_slots(torch, model.ln, [vector, vector]),
        *_slots(torch, model.head, [(UP_D, UP_VOCAB), (UP_VOCAB,)]),
    ]
    return model, slots


def _torch_llm_forward(keras: Any, torch: Any, ids: Any) -> Built:
    model, slots = _torch_llm(torch)
    ids = ids.long()
    call = lambda: model(ids)  # noqa: E731
    return Built(call, _torch_out(call), list(slots))


def _torch_llm_generate(keras: Any, torch: Any, ids: Any) -> Built:
    model, slots = _torch_llm(torch)
    ids = ids.long()

    def generate() -> Any:
        out = ids
        with torch.no_grad():
            for _ in range(GENERATE):
                token = model(out[:, -UP_WINDOW:])[:, -1, :].argmax(dim=-1, keepdim=True)
                out = torch.cat([out, token], dim=1)
        return out

    # Token ids compared as the Keras side gives them (int32).
    return Built(generate, lambda: {"y": _np(generate()).astype(np.int32)}, list(slots))


def _torch_cnn_up(keras: Any, torch: Any, x: Any) -> Built:
    nn = torch.nn
    convs = [nn.Conv2d(3, 64, 3, padding=1), nn.Conv2d(64, 64, 3, padding=1)]
    last, dense = nn.Conv2d(64, 128, 3, padding=1), nn.Linear(128, 10)
    model = nn.Sequential(
        convs[0],
        nn.ReLU(),
        convs[1],
        nn.ReLU(),
        nn.MaxPool2d(2),
        last,
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        dense,
    )
    shapes = [(3, 3, 3, 64), (64,), (3, 3, 64, 64), (64,), (3, 3, 64, 128), (128,)]
    slots = [
        *_slots(torch, convs[0], shapes[0:2]),
        *_slots(torch, convs[1], shapes[2:4]),
        *_slots(torch, last, shapes[4:6]),
        *_slots(torch, dense, [(128, 10), (10,)]),
    ]
    nchw = x.permute(0, 3, 1, 2).contiguous()
    call = lambda: model(nchw)  # noqa: E731
    return Built(call, _torch_out(call), slots)


BUILDERS: dict[str, Callable[..., Built]] = {
    "dense": _dense,
    "dense_training": _dense_training,
    "layer_call": _layer_call,
    "mha": _mha,
    "standardize_dtype": _standardize_dtype,
    "convert_to_tensor": _convert_to_tensor,
    "keras_tree": _tree,
    "lm_forward": _lm_forward,
    "lm_generate": _lm_generate,
    "cnn": _cnn,
    "torch_linear": _torch_linear,
    "torch_mha": _torch_mha,
    "torch_cnn": _torch_cnn,
    "torch_lm_forward": _torch_lm_forward,
    "torch_lm_generate": _torch_lm_generate,
    "llm_forward": _llm_forward,
    "llm_generate": _llm_generate,
    "cnn_up": _cnn_up,
    "torch_llm_forward": _torch_llm_forward,
    "torch_llm_generate": _torch_llm_generate,
    "torch_cnn_up": _torch_cnn_up,
}


def build(name: str, keras: Any, torch: Any, inputs: dict[str, Any]) -> Built:
    return BUILDERS[name](keras, torch, *inputs.values())


def set_weights(built: Built, arrays: list[np.ndarray]) -> None:
    """Give the variables the parent's values; refuse when they do not fit."""
    shapes = [tuple(v.shape) for v in built.variables]
    given = [a.shape for a in arrays]
    if shapes != given:
        raise ValueError(f"the tree builds variables {shapes}, the weights file holds {given}")
    for variable, array in zip(built.variables, arrays, strict=True):
        variable.assign(array)
