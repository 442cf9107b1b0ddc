"""LipNet checkpoints: LipNet-PyTorch state dicts (`.pt`, needs torch) and torch-free `.npz`.

A LipNet-PyTorch checkpoint is `torch.save(model.state_dict())` of the bare module: keys
`conv1.weight` ... `FC.bias`, no `module.` prefix (DataParallel's prefix is stripped if present).
The size is taken from the file's own metadata (`.npz` written by `save_npz`), else the
published LipNet-PyTorch 64x128 model is expected (50x100 if `gru1.weight_ih_l0` has 1728
columns). Every missing, unexpected and mis-shaped key is named in one CheckpointError.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from lipread.config import PUBLISHED, PUBLISHED_50X100, LipNetConfig
from lipread.errors import CheckpointError, MissingDependencyError
from mdla_runtime.atomic import write_atomic

Array = np.ndarray[Any, Any]
META_KEY = "__lipread_meta__"
DEMO_WEIGHTS = "lipnet_demo_synthetic.npz"


@dataclass(frozen=True)
class Checkpoint:
    state: dict[str, Array]  # LipNet-PyTorch key -> float32 array
    config: LipNetConfig
    meta: dict[str, Any]
    sha256: str  # of the weights (names, shapes, float32 bytes), not of the file
    path: Path


def demo_weights() -> Path:
    """The shipped demo model (trained on the synthetic corpus only)."""
    return Path(str(resources.files("lipread").joinpath("weights", DEMO_WEIGHTS)))


def save_npz(path: str | Path, state: dict[str, Array], meta: dict[str, Any]) -> None:
    """Write a torch-free checkpoint: the arrays plus JSON metadata (with `config`)."""
    blob = np.frombuffer(json.dumps(meta, sort_keys=True).encode(), dtype=np.uint8)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    arrays: dict[str, Any] = {META_KEY: blob, **state}
    np.savez_compressed(buf, **arrays)
    write_atomic(path, buf.getvalue())


def _read_npz(path: Path) -> tuple[dict[str, Array], dict[str, Any]]:
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: np.asarray(z[k]) for k in z.files}
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise CheckpointError(f"{path}: not a readable .npz checkpoint ({exc})") from exc
    meta: dict[str, Any] = {}
    if META_KEY in arrays:
        try:
            meta = json.loads(arrays.pop(META_KEY).tobytes().decode())
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CheckpointError(f"{path}: metadata `{META_KEY}` is not JSON") from exc
    return arrays, meta


def torch_reason(exc: BaseException) -> str:
    """Why torch.load refused a file, without torch's advice to retry with weights_only=False
    (which would run code from the file: lipread loads tensors only, never code)."""
    text = " ".join(str(exc).split())
    unpickler = re.search(r"WeightsUnpickler error: (.*?)(?: Check the documentation|$)", text)
    if unpickler:
        why = unpickler.group(1).split(". ")[0].rstrip(".")
        return f"{why}; lipread reads tensors only, never code from a checkpoint"
    return text.split(". ")[0].rstrip(".")


def _read_torch(path: Path) -> dict[str, Array]:
    try:
        import torch
    except ModuleNotFoundError as exc:
        raise MissingDependencyError(
            f"{path}: reading a PyTorch checkpoint needs torch (pip install torch), "
            "or convert it to .npz once where torch is: `lipread convert CKPT OUT.npz`"
        ) from exc
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for a bad file
        raise CheckpointError(
            f"{path}: not a readable PyTorch checkpoint ({torch_reason(exc)})"
        ) from exc
    if not isinstance(obj, dict):
        raise CheckpointError(f"{path}: expected a state dict, found {type(obj).__name__}")
    out: dict[str, Array] = {}
    for key, value in obj.items():
        if not isinstance(value, torch.Tensor):
            raise CheckpointError(f"{path}: key `{key}` is a {type(value).__name__}, not a tensor")
        out[str(key).removeprefix("module.")] = value.detach().float().numpy()
    return out


def key_problems(
    state: dict[str, Array],
    want: dict[str, tuple[int, ...]],
    optional: frozenset[str] = frozenset(),
) -> list[str]:
    """What keeps `state` from being `want` (key -> shape): the missing, unexpected and
    mis-shaped keys, one entry per kind; [] when it fits."""
    missing = [k for k in want if k not in state and k not in optional]
    unexpected = [k for k in state if k not in want]
    shaped = [
        f"{k} {tuple(state[k].shape)} (expected {want[k]})"
        for k in want
        if k in state and tuple(state[k].shape) != want[k]
    ]
    problems = []
    if missing:
        problems.append("missing " + ", ".join(missing))
    if unexpected:
        problems.append("unexpected " + ", ".join(unexpected))
    if shaped:
        problems.append("mis-shaped " + ", ".join(shaped))
    return problems


def check_state(state: dict[str, Array], cfg: LipNetConfig, where: str) -> None:
    """Raise CheckpointError naming every missing, unexpected and mis-shaped key."""
    problems = key_problems(state, cfg.shapes())
    if problems:
        size = f"{cfg.height}x{cfg.width}, hidden {cfg.hidden}"
        raise CheckpointError(f"{where}: not a LipNet checkpoint ({size}): " + "; ".join(problems))


def weights_hash(state: dict[str, Array]) -> str:
    """SHA-256 over sorted names, shapes and float32 bytes: a .pt and its .npz agree."""
    h = hashlib.sha256()
    for key in sorted(state):
        value = np.ascontiguousarray(state[key], dtype=np.float32)
        h.update(f"{key}{value.shape}".encode())
        h.update(value.tobytes())
    return h.hexdigest()


def load_checkpoint(path: str | Path | None = None) -> Checkpoint:
    """Read and validate a checkpoint (default: the shipped synthetic demo weights)."""
    p = Path(path) if path is not None else demo_weights()
    if not p.is_file():
        raise CheckpointError(f"{p}: no such checkpoint file")
    if p.suffix == ".npz":
        state, meta = _read_npz(p)
    else:
        state, meta = _read_torch(p), {}
    if "config" in meta:
        try:
            cfg = LipNetConfig(**meta["config"])
        except TypeError as exc:
            raise CheckpointError(f"{p}: bad `config` in metadata ({exc})") from exc
    elif state.get("gru1.weight_ih_l0", np.empty((0, 0))).shape[-1:] == (1728,):
        cfg = PUBLISHED_50X100
    else:
        cfg = PUBLISHED
    check_state(state, cfg, str(p))
    state = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in state.items()}
    return Checkpoint(state, cfg, meta, weights_hash(state), p)
