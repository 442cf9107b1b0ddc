"""What a structurally valid manifest must also mean: the one semantic validation both readers
run (csrc/format/manifest_check.c: chk_semantics makes the same checks in the same order, with the
same kinds, fields and offsets), after the schema checks and before the engine, the emulator or
`workbench run` allocates anything from the header's sizes. The engine trusts nothing else.

1. Operands, in order (`operands[i]`):
   - quantization (BadQuantization): TENSOR_QUANT8_ASYMM(_SIGNED), TENSOR_QUANT8_SYMM and
     TENSOR_QUANT16_SYMM (int16 activations, symmetric) carry a
     `scale` whose float32 rounding is a normal number > 0 (not NaN, not +-inf, not 0, not
     negative, not above FLT_MAX, where C would round to +inf, not subnormal), and a
     `zero_point` in the type's range (uint8 0..255, int8 -128..127, symmetric 0); per-channel
     weights the same for every `scales[k]`, with zero point 0; any other `scale` is finite,
     >= 0 and at most FLT_MAX.
   - shape (ShapeMismatch, at `.dims[k]`): no tensor dim is 0 (shapes are static).
   - budget (OverBudget, at `.dims`): elements x element size <= max_tensor_bytes, and the
     running sum over all tensors (constants and activations) <= max_total_bytes.
2. `inputs`, then `outputs` (`inputs[k]`), each entry against its operand:
   - the operand is an int8 tensor (TENSOR_QUANT8_ASYMM_SIGNED or TENSOR_QUANT8_SYMM: the
     engine moves one byte per element), or, for an output, TENSOR_FLOAT32 (what a float
     region of a cpu partition writes: four bytes per element), and an input is no constant
     (BadReference);
   - no operand is listed twice in one list (DuplicateEntry);
   - the entry's `scale` and `zero_point` are the operand's (BadQuantization); a float32
     output's are 0 and 0 (it has no quantization);
   - `shape`, when present, is the operand's dims (ShapeMismatch);
   - `perm`, when not empty, is a permutation of 0..n-1 with rank <= n <= 8 (BadPermutation);
   - `model_shape` (default: `shape`) is the operand's dims in the model's layout. This is what
     the writer guarantees (`Graph.model_shape`) and what the target relies on to move data
     between layouts (`x.transpose(perm).reshape(shape)`): with the dims padded by leading 1s
     to n = len(perm), `model_shape[perm[i]] == padded[i]` for every i; with no perm,
     `model_shape == dims` (ShapeMismatch).
3. A `model.preprocess` record feeds one image to one input (CountMismatch at `inputs`) whose
   `model_shape` is the (1, 3, H, W) image it makes, (H, W) its `size` (ShapeMismatch): what the
   workbench writes (`preprocess_record`: one rank-4 input) and what `workbench run` feeds.
   A `model.postprocess` record (an SSD with L = len(aspect_ratios) feature levels) reads 2L
   model outputs, a regression and a classification map per level (CountMismatch at `outputs`).
4. Operations, in order, as the adapter will run them: every input is a constant, a model input
   or written by an earlier operation; no output is a constant or a model input
   (BadReference); no operand is written twice (DuplicateEntry).
5. Every model output is written by an operation (BadReference); there is at least one output;
   a `model.output_kinds` list names one kind per output (CountMismatch at `model.output_kinds`).
6. Partitions (format 3; issue 17), which the engine runs in list order, each on its device:
   - each holds at least one operation (CountMismatch at `.operations`); no operation is in two
     (DuplicateEntry), every one is in one (CountMismatch at `partitions`); a host operation
     (LAYER_NORM, GELU: `schema.HOST_BY_CODE`) only in a `cpu` partition (BadReference);
   - its `inputs`, then its `outputs`, each listed once (DuplicateEntry), are activations (no
     constant or scalar crosses: BadReference); an input is a model input, or written by an
     earlier partition (a later one or itself: PartitionCycle) that lists it among its
     `outputs` (BadReference); an output is written by the partition itself (BadReference);
   - every operand its operations read that is neither a constant nor written inside it is
     among its `inputs` (BadReference at `.operations[k]`);
   - every model output is among the `outputs` of the partition that writes it (BadReference).
7. Work (OverBudget at `operations[i]`): each operation's multiply-adds or compares from the
   shapes, and their running sum, within the compute budget (`compute.py`).
8. Float32 constants are finite (NonFinite; `finite.py`, run by `validate` with the data).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn, Protocol

from mdla_ir.schema import HOST_BY_CODE
from mdla_runtime.errors import (
    BadPermutationError,
    BadQuantizationError,
    BadReferenceError,
    CountMismatchError,
    DuplicateEntryError,
    ManifestError,
    OverBudgetError,
    PartitionCycleError,
    ShapeMismatchError,
)
from mdla_runtime.format import container as fmt
from mdla_runtime.format.budget import MIB, Budget
from mdla_runtime.format.compute import check_compute

FLT_MAX = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]
FLT_MIN = struct.unpack("<f", b"\x00\x00\x80\x00")[0]
ZERO_POINTS = {  # type -> (lowest, highest) zero point
    fmt.TENSOR_QUANT8_ASYMM: (0, 255),
    fmt.TENSOR_QUANT8_ASYMM_SIGNED: (-128, 127),
    fmt.TENSOR_QUANT8_SYMM: (0, 0),
    fmt.TENSOR_QUANT8_SYMM_PER_CHANNEL: (0, 0),
    fmt.TENSOR_QUANT16_SYMM: (0, 0),
}
PER_TENSOR_QUANT = (  # the types that carry one positive scale
    fmt.TENSOR_QUANT8_ASYMM,
    fmt.TENSOR_QUANT8_ASYMM_SIGNED,
    fmt.TENSOR_QUANT8_SYMM,
    fmt.TENSOR_QUANT16_SYMM,
)
IO_TYPES = (fmt.TENSOR_QUANT8_ASYMM_SIGNED, fmt.TENSOR_QUANT8_SYMM)
OUTPUT_TYPES = (*IO_TYPES, fmt.TENSOR_QUANT16_SYMM)  # an int16 (16x8) op's output, zero point 0
Entry = Mapping[str, Any]


class Locator(Protocol):
    def at(self, field: str) -> int: ...


def _f32(v: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", v))[0])


def scale_flaw(v: float, positive: bool) -> str | None:
    """Why `v` is no valid scale (None when it is): see 1. above."""
    if not math.isfinite(v):
        return f"scale {v} is not finite"
    if abs(v) > FLT_MAX:
        return f"scale {v!r} is out of float32 range"
    if not positive:
        return "scale is negative" if v < 0 else None
    if _f32(v) < FLT_MIN:
        return f"scale {v!r} is not a normal float32 > 0"
    return None


class _Semantics:
    def __init__(self, c: Locator, header: Mapping[str, Any], budget: Budget) -> None:
        self.c, self.h, self.budget = c, header, budget
        self.ops: Sequence[Entry] = header["operands"]

    def fail(self, kind: type[ManifestError], field: str, why: str, default: str = "") -> NoReturn:
        at = self.c.at(field) if not default else self.c.at(default)
        raise kind(field, at, why)

    def value_at(self, e: Entry, field: str, key: str) -> str:
        """The field of `key` in `e` when present, for its offset; else the entry's."""
        return f"{field}.{key}" if key in e else field

    def operand(self, i: int, e: Entry, total: int) -> int:
        f, t = f"operands[{i}]", e["type"]
        if t in PER_TENSOR_QUANT:
            why = scale_flaw(e.get("scale", 0.0), positive=True)
            if why:
                self.fail(BadQuantizationError, f"{f}.scale", why, self.value_at(e, f, "scale"))
        elif t == fmt.TENSOR_QUANT8_SYMM_PER_CHANNEL:
            for k, s in enumerate(e["scales"]):
                why = scale_flaw(s, positive=True)
                if why:
                    self.fail(BadQuantizationError, f"{f}.scales[{k}]", why)
        elif "scale" in e:
            why = scale_flaw(e["scale"], positive=False)
            if why:
                self.fail(BadQuantizationError, f"{f}.scale", why)
        if t in ZERO_POINTS:
            lo, hi = ZERO_POINTS[t]
            zp = e.get("zero_point", 0)
            if not lo <= zp <= hi:
                why = f"zero point {zp} outside {lo}..{hi} for {fmt.TYPE_NAMES[t]}"
                self.fail(BadQuantizationError, f"{f}.zero_point", why)
        if t in fmt.SCALAR_TYPES:
            return total
        for k, d in enumerate(e["dims"]):
            if d == 0:
                why = "a dim of 0: shapes are static, every dim is at least 1"
                self.fail(ShapeMismatchError, f"{f}.dims[{k}]", why)
        size = math.prod(e["dims"]) * fmt.ELEMENT_SIZE[t]
        b = self.budget
        if size > b.max_tensor_bytes:
            why = (
                f"{size} bytes > the per-tensor limit of {b.max_tensor_bytes // MIB} MiB "
                "(raise it with --max-tensor-mb)"
            )
            self.fail(OverBudgetError, f"{f}.dims", why)
        if total + size > b.max_total_bytes:
            why = (
                f"operands[0..{i}] hold {total + size} bytes > the total limit of "
                f"{b.max_total_bytes // MIB} MiB (raise it with --max-total-mb)"
            )
            self.fail(OverBudgetError, f"{f}.dims", why)
        return total + size

    def io(self, key: str, k: int, e: Entry, seen: dict[int, int]) -> None:
        f, idx = f"{key}[{k}]", e["operand"]
        o = self.ops[idx]
        t, dims = o["type"], list(o["dims"])
        real = key == "outputs" and t == fmt.TENSOR_FLOAT32  # a float region's output
        if t not in (IO_TYPES if key == "inputs" else OUTPUT_TYPES) and not real:
            why = (
                f"operand {idx} is {fmt.TYPE_NAMES[t]}; model inputs are int8 tensors, "
                "outputs int8, int16 (TENSOR_QUANT16_SYMM) or float32 tensors"
            )
            self.fail(BadReferenceError, f"{f}.operand", why)
        if key == "inputs" and "data" in o:
            self.fail(BadReferenceError, f"{f}.operand", f"operand {idx} is a constant")
        if idx in seen:
            why = f"operand {idx} is already {key}[{seen[idx]}]"
            self.fail(DuplicateEntryError, f"{f}.operand", why)
        seen[idx] = k
        flaw = scale_flaw(e.get("scale", 0.0), positive=True)
        if real:
            flaw = None if e.get("scale", 0.0) == 0.0 else "a float32 output has scale 0"
        if flaw is None and e.get("scale", 0.0) != o.get("scale", 0.0):
            flaw = f"scale {e['scale']!r} is not operand {idx}'s {o.get('scale', 0.0)!r}"
        if flaw:
            self.fail(BadQuantizationError, f"{f}.scale", flaw, self.value_at(e, f, "scale"))
        zp_flaw = e.get("zero_point", 0) != o.get("zero_point", 0)
        if zp_flaw or (real and e.get("zero_point", 0) != 0):
            why = f"zero point {e.get('zero_point', 0)} is not operand {idx}'s"
            why = why if zp_flaw else "a float32 output has zero point 0"
            self.fail(
                BadQuantizationError, f"{f}.zero_point", why, self.value_at(e, f, "zero_point")
            )
        shape = list(e.get("shape", dims))
        if shape != dims:
            why = f"shape {shape} is not operand {idx}'s dims {dims}"
            self.fail(ShapeMismatchError, f"{f}.shape", why)
        self.layout(f, e, dims)

    def layout(self, f: str, e: Entry, dims: list[int]) -> None:
        perm = list(e.get("perm", []))
        n = len(perm)
        if perm and not len(dims) <= n <= fmt.MAX_RANK:
            why = f"{n} axes for a rank-{len(dims)} operand (at most {fmt.MAX_RANK})"
            self.fail(BadPermutationError, f"{f}.perm", why)
        for j, axis in enumerate(perm):
            if axis >= n or axis in perm[:j]:
                why = f"axis {axis} is past the last, {n - 1}" if axis >= n else "axis repeats"
                self.fail(BadPermutationError, f"{f}.perm[{j}]", why)
        model_shape = list(e.get("model_shape", e.get("shape", dims)))
        want = list(dims)
        if perm:
            padded = [1] * (n - len(dims)) + dims
            want = [0] * n
            for j, axis in enumerate(perm):
                want[axis] = padded[j]
        if model_shape != want:
            why = f"model_shape {model_shape}: the dims {dims} through perm {perm} give {want}"
            self.fail(
                ShapeMismatchError, f"{f}.model_shape", why, self.value_at(e, f, "model_shape")
            )

    def dataflow(self) -> None:
        inputs = {e["operand"] for e in self.h["inputs"]}
        written: dict[int, int] = {}
        for i, op in enumerate(self.h["operations"]):
            f = f"operations[{i}]"
            for k, x in enumerate(op["inputs"]):
                o = self.ops[x]
                if not ("data" in o or "value" in o or x in inputs or x in written):
                    why = f"operand {x} is read before an operation writes it"
                    self.fail(BadReferenceError, f"{f}.inputs[{k}]", why)
            for k, x in enumerate(op["outputs"]):
                o = self.ops[x]
                if "data" in o or "value" in o or x in inputs:
                    kind = "a model input" if x in inputs else "a constant"
                    self.fail(BadReferenceError, f"{f}.outputs[{k}]", f"operand {x} is {kind}")
                if x in written:
                    why = f"operand {x} is already written by operations[{written[x]}]"
                    self.fail(DuplicateEntryError, f"{f}.outputs[{k}]", why)
                written[x] = i
        for k, e in enumerate(self.h["outputs"]):
            if e["operand"] not in written:
                why = f"operand {e['operand']} is written by no operation"
                self.fail(BadReferenceError, f"outputs[{k}].operand", why)
        if not self.h["outputs"]:
            self.fail(CountMismatchError, "outputs", "a model has at least one output")

    def preprocess(self) -> None:
        if "preprocess" not in self.h["model"]:
            return
        ins = self.h["inputs"]
        if len(ins) != 1:
            why = f"model.preprocess feeds one image input; the model has {len(ins)} inputs"
            self.fail(CountMismatchError, "inputs", why)
        e = ins[0]
        shape = list(e.get("model_shape", e.get("shape", self.ops[e["operand"]]["dims"])))
        want = [1, 3, *self.h["model"]["preprocess"]["size"]]
        if shape != want:
            why = f"model.preprocess makes a {want} image; model_shape is {shape}"
            f = "inputs[0].model_shape"
            self.fail(ShapeMismatchError, f, why, self.value_at(e, "inputs[0]", "model_shape"))

    def postprocess(self) -> None:
        post = self.h["model"].get("postprocess")
        if post is None:
            return
        levels, outs = len(post["aspect_ratios"]), len(self.h["outputs"])
        if outs != 2 * levels:
            why = (
                f"model.postprocess decodes {levels} feature level(s) from {2 * levels} "
                f"outputs; the model has {outs}"
            )
            self.fail(CountMismatchError, "outputs", why)

    def output_kinds(self) -> None:
        kinds = self.h["model"].get("output_kinds")
        if kinds is not None and len(kinds) != len(self.h["outputs"]):
            why = f"model.output_kinds names {len(kinds)} kind(s); the model has "
            why += f"{len(self.h['outputs'])} outputs"
            self.fail(CountMismatchError, "model.output_kinds", why)


def _constant(o: Entry) -> bool:
    return "data" in o or "value" in o


class _Partitions:
    """Check 6 of the module docstring, on a header whose checks 1-5 passed."""

    def __init__(self, s: _Semantics) -> None:
        self.s, self.parts = s, s.h["partitions"]
        self.owner: dict[int, int] = {}  # operation -> partition
        self.writer: dict[int, int] = {}  # operand -> the partition writing it

    def operations(self) -> None:
        s, ops = self.s, self.s.h["operations"]
        for p, e in enumerate(self.parts):
            f = f"partitions[{p}]"
            if not e["operations"]:
                why = "a partition holds at least one operation"
                s.fail(CountMismatchError, f"{f}.operations", why)
            for k, i in enumerate(e["operations"]):
                if i in self.owner:
                    why = f"operations[{i}] is already in partitions[{self.owner[i]}]"
                    s.fail(DuplicateEntryError, f"{f}.operations[{k}]", why)
                self.owner[i] = p
                host = HOST_BY_CODE.get(ops[i]["code"])
                if host is not None and e["device"] != fmt.CPU_DEVICE:
                    why = (
                        f"operations[{i}] is {host.name}, a host operation: only a "
                        f"`{fmt.CPU_DEVICE}` partition runs it, not `{e['device']}`"
                    )
                    s.fail(BadReferenceError, f"{f}.operations[{k}]", why)
        for i in range(len(ops)):
            if i not in self.owner:
                s.fail(CountMismatchError, "partitions", f"operations[{i}] is in no partition")
        self.writer = {x: self.owner[i] for i, op in enumerate(ops) for x in op["outputs"]}

    def boundary(self, p: int, e: Entry, inputs: set[int]) -> None:
        s, f = self.s, f"partitions[{p}]"
        for key in ("inputs", "outputs"):
            seen: dict[int, int] = {}
            for k, x in enumerate(e[key]):
                fk = f"{f}.{key}[{k}]"
                if x in seen:
                    why = f"operand {x} is already {key}[{seen[x]}]"
                    s.fail(DuplicateEntryError, fk, why)
                seen[x] = k
                if _constant(s.ops[x]):
                    why = f"operand {x} is a constant or scalar; only activations cross partitions"
                    s.fail(BadReferenceError, fk, why)
                q = self.writer.get(x)
                if key == "outputs":
                    if q != p:
                        s.fail(BadReferenceError, fk, f"operand {x} is not written by {f}")
                elif x not in inputs:
                    if q is None:
                        s.fail(BadReferenceError, fk, f"operand {x} is written by no operation")
                    if q >= p:
                        why = f"operand {x} is written by partitions[{q}], which runs after {f}"
                        why = why if q > p else f"operand {x} is written by {f} itself"
                        s.fail(PartitionCycleError, fk, why)
                    if x not in self.parts[q]["outputs"]:
                        why = f"operand {x} is not among the outputs of partitions[{q}]"
                        s.fail(BadReferenceError, fk, why)

    def reads(self, p: int, e: Entry) -> None:
        s, ops = self.s, self.s.h["operations"]
        listed = set(e["inputs"])
        for k, i in enumerate(e["operations"]):
            for x in ops[i]["inputs"]:
                if _constant(s.ops[x]) or self.writer.get(x) == p or x in listed:
                    continue
                why = (
                    f"operations[{i}] reads operand {x} from outside partitions[{p}], whose "
                    "inputs do not list it"
                )
                s.fail(BadReferenceError, f"partitions[{p}].operations[{k}]", why)

    def check(self) -> None:
        self.operations()
        inputs = {e["operand"] for e in self.s.h["inputs"]}
        for p, e in enumerate(self.parts):
            self.boundary(p, e, inputs)
            self.reads(p, e)
        for k, e in enumerate(self.s.h["outputs"]):
            x = e["operand"]
            q = self.writer[x]
            if x not in self.parts[q]["outputs"]:
                why = f"operand {x} is not among the outputs of partitions[{q}], which writes it"
                self.s.fail(BadReferenceError, f"outputs[{k}].operand", why)


def check_semantics(c: Locator, header: Mapping[str, Any], budget: Budget) -> None:
    """Raise the first semantic flaw of a schema-valid header (the order of the docstring)."""
    s = _Semantics(c, header, budget)
    total = 0
    for i, e in enumerate(s.ops):
        total = s.operand(i, e, total)
    for key in ("inputs", "outputs"):
        seen: dict[int, int] = {}
        for k, e in enumerate(header[key]):
            s.io(key, k, e, seen)
    s.preprocess()
    s.postprocess()
    s.dataflow()
    s.output_kinds()
    if "partitions" in header:
        _Partitions(s).check()
    check_compute(c, header, budget)
