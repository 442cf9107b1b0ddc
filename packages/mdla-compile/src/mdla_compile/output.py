"""Writing a compile's files: the `.mdla` (and `.tflite`) atomically, names checked first, and
the device's own support query asked of bytes not yet written.

    check_output("lite0.mdla", ".mdla")                  # before any work
    manifest = save(qgraph, "lite0.mdla", tflite="lite0.tflite", vet=refuse_unless_mapped)
    save(qgraph, "lite0.mdla", float_graph=imported)     # and lite0.mdla.fp32 (`mdla_ir.stored`)
    ok, total = support_count(mdla_runtime.open_target("emu"), manifest)
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import mdla_runtime
from mdla_compile.errors import CompileError, OptionError
from mdla_ir import Graph, stored
from mdla_ir.devices import NPU
from mdla_runtime.atomic import commit_staged, stage, write_atomic

Vet = Callable[[bytes], None]  # may refuse the bytes about to be written (raise)


def check_output(out: str | Path, suffix: str) -> None:
    """Fail early, before any work: the name must be `*.suffix` (OptionError), and the path
    must be writable: its directory exists and is writable, and it is not itself a directory
    (CompileError)."""
    path = Path(out)
    if path.suffix != suffix:
        raise OptionError(f"output `{out}` must end in {suffix}")
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise CompileError(f"output `{out}` is a directory")
    if not parent.is_dir():
        raise CompileError(f"output directory `{parent}` does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CompileError(f"output directory `{parent}` is not writable")
    _probe(parent)


def _probe(parent: Path) -> None:
    """Create and remove a file in `parent`, as the atomic write will: permission bits do not
    tell everything (root on /proc, a read-only or full mount, an ACL), and a write refused
    only after the compile named a hidden temp file."""
    try:
        fd, name = tempfile.mkstemp(prefix=".mdla-write-check.", dir=parent)
    except OSError as exc:
        raise CompileError(
            f"output directory `{parent}` is not writable ({exc.strerror or exc}): "
            "give -o a path in a folder you can write"
        ) from None
    os.close(fd)
    os.unlink(name)


def save(
    qgraph: Graph,
    out: str | Path,
    tflite: str | Path | None = None,
    before_write: Callable[[], None] = lambda: None,
    vet: Vet = lambda _blob: None,
    float_graph: Graph | None = None,
) -> mdla_runtime.Manifest:
    """Write the `.mdla` (and the `.tflite`, if asked) atomically. Everything that can fail is
    done before the first file is replaced: `vet(blob)` may refuse the bytes about to be
    written (compile's device support query); `before_write` runs last (an interrupt check).
    With `float_graph` (the imported model) the `.mdla.fp32` beside it holds that graph as
    data, bound to the `.mdla`'s SHA-256 (`mdla_ir.stored`): `run`'s FP32 side without an
    import."""
    path = Path(out)
    check_output(path, ".mdla")
    tflite_blob = None
    if tflite is not None:
        check_output(tflite, ".tflite")
        tflite_blob = mdla_runtime.tflite_bytes(qgraph)
    blob, manifest = mdla_runtime.written(qgraph, path)  # (checked: every check but the budget)
    vet(blob)
    staged = None  # the float graph, written into its temporary file as it is made
    try:
        if float_graph is not None:
            bound = hashlib.sha256(blob).hexdigest()
            sidecar = stored.sidecar(path)
            staged = stage(sidecar, lambda f: stored.dump(float_graph, bound, f))
        before_write()
        write_atomic(path, blob)
        if staged is not None:
            commit_staged(staged, sidecar)
            staged = None
    finally:
        if staged is not None:
            staged.unlink(missing_ok=True)
    if tflite is not None and tflite_blob is not None:
        write_atomic(tflite, tflite_blob)
    return manifest


def support_count(
    target: mdla_runtime.Target, manifest: mdla_runtime.Manifest, device: str = NPU
) -> tuple[int, int]:
    """How many of the manifest's NPU operations `device` runs, of how many (its own query)."""
    flags = target.supported(manifest, [device])[device]
    return sum(flags), len(flags)


def support_of_bytes(
    target: mdla_runtime.Target, blob: bytes, device: str = NPU
) -> tuple[int, int]:
    """`support_count` of a manifest not yet written, asked through a private temporary copy
    (the engine reads files), so the answer is known before the real output is replaced."""
    with tempfile.TemporaryDirectory(prefix="mdla-support-") as tmp:
        path = Path(tmp) / "model.mdla"
        path.write_bytes(blob)
        return support_count(target, mdla_runtime.load(path), device)
