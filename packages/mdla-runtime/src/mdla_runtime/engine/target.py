"""Targets: where a manifest runs. `open_target(spec)` with

    "emu"                       the host emulator libneuron_emu.so (the default)
    "lib:/path/libneuron_x.so"  a Neuron Adapter library on this machine
    "ssh://user@host[:port]"    a phone over SSH (its own issue: the seam is `Target._engine`)

The engine runs a manifest with its recorded `model.rounding`: it hands it to the host emulator
through the emulator's extension call (`MdlaEmu_setRounding`, mdla_emu's csrc/numerics.h); a
real adapter has no such call, so on a phone the silicon's rounding applies. An experiment's
MDLA_EMU_ROUNDING or MDLA_EMU_ACCUMULATOR overrides it inside the emulator, which says so on
stderr (relayed here).

Each target drives `mdla-engine --json` as a subprocess: inputs are quantized with the
manifest's I/O contract (float, model layout -> int8, device layout), outputs come back raw
(int8, device layout) and dequantized (float, model layout).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from mdla_runtime.build import engine_path
from mdla_runtime.engine.host import check_host, dequantize_in_place, quantize_chunked, to_device
from mdla_runtime.errors import TargetError, TargetSpecError
from mdla_runtime.format.budget import DEFAULT, Budget
from mdla_runtime.format.container import TENSOR_FLOAT32, TENSOR_QUANT16_SYMM
from mdla_runtime.format.manifest import IOSpec, Manifest, load

Array = np.ndarray[Any, Any]


class StepProgress(Protocol):
    """Told about a remote target's slow steps (an SSH phone's connect, work directory, engine,
    uploads, runs): `(step, 0, 0)` as a step of unknown length starts and `(step, 1, 1)` as it
    ends; a transfer reports `(step, bytes_sent, bytes_total)` as it goes. Local targets have
    no such steps; the workbench draws them on stderr (`workbench.output.Steps.remote`)."""

    def __call__(self, step: str, done: int, total: int) -> None: ...


@dataclass(frozen=True, slots=True)
class PartitionTime:
    """One partition of a partitioned manifest's run (issue 17): where it ran and how long it
    took (median and min over the timed runs, ms; an NPU partition's includes its execution's
    setup, a cpu partition's is the engine's own kernels)."""

    device: str
    ops: int
    first_op: int
    ms: float
    min_ms: float


@dataclass(frozen=True, slots=True)
class RunResult:
    outputs: list[Array]  # float32, model layout (dequantized with the I/O contract)
    raw_outputs: list[Array]  # int8 (int16, float32), device layout, as the device produced them
    latency_ms: tuple[float, float]  # (median, min) over the runs
    device: str
    output_names: tuple[str, ...] = ()
    cache: str | None = None
    latencies_ms: tuple[float, ...] = ()  # every timed run, sorted ascending
    partitions: tuple[PartitionTime, ...] = ()  # a partitioned manifest's, in run order

    @property
    def npu_partitions(self) -> tuple[int, ...]:
        """The indices of the partitions that ran on an NPU device (not the engine's cpu)."""
        return tuple(k for k, p in enumerate(self.partitions) if p.device != "cpu")

    def latency_stats(self) -> dict[str, float]:
        """median, p90, p99, min, max, mean and std (ms) over the timed runs; the percentiles
        are nearest-rank (p90 of 10 runs is the 9th fastest)."""
        t = np.asarray(self.latencies_ms or self.latency_ms[:1], np.float64)
        rank = {q: t[min(len(t) - 1, max(0, int(np.ceil(q / 100 * len(t))) - 1))] for q in (90, 99)}
        return {
            "median": self.latency_ms[0],
            "p90": float(rank[90]),
            "p99": float(rank[99]),
            "min": float(t.min()),
            "max": float(t.max()),
            "mean": float(t.mean()),
            "std": float(t.std()),
            "runs": float(len(t)),
        }


def output_dtype(m: Manifest, operand: int) -> type[np.generic]:
    """What a model output's bytes hold: int8, int16 (TENSOR_QUANT16_SYMM, a 16x8 op's output)
    or float32 (TENSOR_FLOAT32); the wide ones little-endian, as the engine writes them."""
    t = m.operands[operand].type
    if t == TENSOR_FLOAT32:
        return np.dtype("<f4").type
    return np.dtype("<i2").type if t == TENSOR_QUANT16_SYMM else np.int8


def quantize(x: Array, spec: IOSpec) -> Array:
    """Model-layout floats -> device-layout int8: clamp(round_half_away(x / s) + z)."""
    x = np.asarray(x, dtype=np.float32)
    if tuple(x.shape) != spec.model_shape:
        raise TargetError(
            f"input `{spec.name}`: shape {x.shape}, the model wants {spec.model_shape}"
        )
    return to_device(quantize_chunked(x, np.float32(spec.scale), spec.zero_point), spec)


def dequantize(raw: Array, spec: IOSpec | None, scale: float, zero_point: int) -> Array:
    """Device-layout int8 or int16 -> model-layout floats (s * (q - z)), undoing the boundary
    perm; a float32 output (a cpu partition's float region) is taken as it is, only the perm
    undone. The perm moves the raw bytes, before the float32 array is made (`host.py`)."""
    if spec is not None and spec.perm:
        raw = raw.reshape((1,) * (len(spec.perm) - raw.ndim) + raw.shape)
        raw = np.ascontiguousarray(raw.transpose(np.argsort(spec.perm)))
    return raw if raw.dtype == np.float32 else dequantize_in_place(raw, scale, zero_point)


def _as_manifest(manifest: Manifest | str | os.PathLike[str], budget: Budget = DEFAULT) -> Manifest:
    m = manifest if isinstance(manifest, Manifest) else load(manifest, budget)
    if m.path is None:
        raise TargetError("the manifest has no file: save() it and load() the path")
    return m


class Target:
    """A Neuron Adapter library driven through `mdla-engine`; `budget` is the resource budget
    the engine validates manifests with (its --max-* flags, passed when not the default);
    `timeout` (seconds) stops an engine run that takes longer (default: an hour)."""

    budget: Budget = DEFAULT
    timeout: float | None = None

    def __init__(self, lib: Path, name: str) -> None:
        self.lib, self.name = lib, name

    def __repr__(self) -> str:
        return f"Target({self.name!r}, lib={str(self.lib)!r})"

    def _execute(self, args: Sequence[str]) -> tuple[int, str, str]:
        """Run `mdla-engine args --json` here: (exit code, stdout, stderr). The SSH target
        overrides this to run the engine on the phone, moving the files named in `args`."""
        cmd = [str(engine_path()), *args, "--lib", str(self.lib), "--json"]
        limit = self.timeout or 3600.0
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
        except subprocess.TimeoutExpired:
            raise TargetError(
                f"{self.name}: mdla-engine did not finish within {limit:g} s and was stopped "
                "(raise it with --timeout)",
                exit_code=4,
            ) from None
        return proc.returncode, proc.stdout, proc.stderr

    def _engine(self, args: Sequence[str]) -> dict[str, Any]:
        """Run the engine with --json and turn its report (or its failure) into a result."""
        returncode, stdout, stderr = self._execute([*args, *self.budget.engine_args()])
        try:
            out: dict[str, Any] = json.loads(stdout)
        except json.JSONDecodeError:
            raise TargetError(
                f"mdla-engine exited {returncode} without a report: {stderr.strip()}",
                exit_code=returncode,
            ) from None
        for line in stderr.splitlines():  # e.g. MDLA_EMU_ROUNDING overriding the manifest
            if line.startswith(("mdla-engine: note:", "libneuron_emu: ")):
                sys.stderr.write(line + "\n")
        if not out.get("ok"):
            err = out.get("error", {})
            raise TargetError(
                f"{self.name}: {err.get('stage')}: {err.get('message')}",
                result=err.get("result"),
                op_index=err.get("op_index") if err.get("op_index", -1) >= 0 else None,
                op_name=err.get("op_name"),
                exit_code=returncode,
            )
        return out

    def info(self) -> dict[str, Any]:
        """The adapter the engine loaded (`adapter`), its Neuron version (`version`) and its
        devices (`devices`), as the engine reports them."""
        out = self._engine(["--devices"])
        return {k: out[k] for k in ("adapter", "version", "devices") if k in out}

    def devices(self) -> list[str]:
        return [str(d) for d in self.info()["devices"]]

    def supported(
        self,
        manifest: Manifest | str | os.PathLike[str],
        devices: Sequence[str] = ("mtk-mdla",),
        ops: int | None = None,
    ) -> dict[str, list[bool]]:
        """Per device, one flag per operation (getSupportedOperationsForDevices) of the model
        or of its first `ops` operations. A partitioned manifest is asked per NPU partition
        (each its own model, on its own device; with `ops`, the partition the cut falls in as a
        model of its prefix): per device, one flag per operation of its partitions run, in
        operation order; cpu partitions are not asked."""
        m = _as_manifest(manifest, self.budget)
        args = [str(m.path), "--supported", "--device", ",".join(devices)]
        out = self._engine(args + (["--ops", str(ops)] if ops is not None else []))
        if "partitions" in out:  # a device no partition is on (all on cpu) reports no ops
            flags: dict[str, list[bool]] = {d: [] for d in devices}
            for part in out["partitions"]:
                if part["supported"] is not None:
                    flags.setdefault(str(part["device"]), []).extend(map(bool, part["supported"]))
            return flags
        return {str(k): [bool(v) for v in vs] for k, vs in out["supported"].items()}

    def bisect(
        self, manifest: Manifest | str | os.PathLike[str], devices: Sequence[str] = ("mtk-mdla",)
    ) -> int | None:
        """The index of the first operation the devices cannot run, or None when all map.

        Support reports are all-or-nothing on the MDLA, so this searches op prefixes: the
        answer is the n with the first n ops mapping and the first n + 1 not.
        """
        m = _as_manifest(manifest, self.budget)

        def maps(n: int) -> bool:
            return all(all(v) for v in self.supported(m, devices, ops=n).values())

        if maps(len(m.operations)):
            return None
        lo, hi = 0, len(m.operations)  # maps(lo) (the empty prefix), not maps(hi)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if maps(mid) else (lo, mid)
        return lo

    def run(
        self,
        manifest: Manifest | str | os.PathLike[str],
        inputs: Sequence[Array] | Array,
        devices: Sequence[str] = ("mtk-mdla",),
        ops: int | None = None,
        repeat: int = 1,
        cache: str | os.PathLike[str] | None = None,
        warmup: int = 0,
    ) -> RunResult:
        m = _as_manifest(manifest, self.budget)
        check_host(m, self.budget)
        arrays = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
        if len(arrays) != len(m.inputs):
            raise TargetError(f"the model takes {len(m.inputs)} input(s), got {len(arrays)}")
        with tempfile.TemporaryDirectory(prefix="mdla-run-") as tmp:
            args = [str(m.path), "--device", ",".join(devices), "--outdir", tmp]
            args += ["--repeat", str(repeat)] + (["--ops", str(ops)] if ops is not None else [])
            args += ["--warmup", str(warmup)] if warmup else []
            args += ["--cache", str(cache)] if cache is not None else []
            for k, (x, spec) in enumerate(zip(arrays, m.inputs, strict=True)):
                path = Path(tmp) / f"input_{k}.bin"
                quantize(x, spec).tofile(path)
                args += ["--input", str(path)]
            out = self._engine(args)
            by_operand = {s.operand: s for s in m.outputs}
            raws, floats, names = [], [], []
            for entry in out["outputs"]:
                dtype = output_dtype(m, int(entry["operand"]))
                raw = np.fromfile(Path(tmp) / entry["file"], dtype=dtype)
                raw = raw.reshape(entry["dims"])
                io = by_operand.get(entry["operand"])
                raws.append(raw)
                floats.append(dequantize(raw, io, entry["scale"], entry["zero_point"]))
                names.append(io.name if io else entry["name"])
        lat = out["latency_ms"]
        parts = out.get("partitions", ())
        return RunResult(
            floats,
            raws,
            (float(lat["median"]), float(lat["min"])),
            # a partitioned run: its devices in first-use order ("mtk-mdla+cpu")
            "+".join(dict.fromkeys(str(p["device"]) for p in parts)) or str(out["selected"]),
            tuple(names),
            out.get("cache"),
            tuple(float(v) for v in lat.get("sorted", ())),
            tuple(
                PartitionTime(
                    str(p["device"]),
                    int(p["ops"]),
                    int(p["first_op"]),
                    float(p["ms"]),
                    float(p["min_ms"]),
                )
                for p in parts
            ),
        )


def open_target(
    spec: str = "emu",
    budget: Budget = DEFAULT,
    progress: StepProgress | None = None,
    timeout: float | None = None,
) -> Target:
    """A target by spec: "emu", "lib:/path/to/libneuron_adapter.so" or "ssh://...",
    validating manifests within `budget`, stopping an engine run after `timeout` seconds; an
    SSH target tells `progress` about its steps (from the connect on, so it is given here)."""
    target = _open(spec, progress)
    target.budget, target.timeout = budget, timeout
    return target


def _open(spec: str, progress: StepProgress | None = None) -> Target:
    if spec == "emu":
        try:
            from mdla_emu import build_emulator
        except ImportError as exc:
            raise TargetError(f"the host emulator is not available: {exc}") from exc
        try:
            return Target(Path(build_emulator()), "emu")
        except (RuntimeError, OSError) as exc:
            raise TargetError(f"the host emulator cannot be built: {exc}") from exc
    if spec.startswith("lib:"):
        lib = Path(spec[4:]).expanduser()
        if not lib.is_file():
            raise TargetError(f"target {spec!r}: no such library {lib}")
        return Target(lib.resolve(), spec)
    if spec.startswith("ssh://"):
        from mdla_runtime.engine.ssh import SshTarget

        return SshTarget(spec, progress)
    raise TargetSpecError(
        f"unknown target {spec!r}: use 'emu', 'lib:/path/to.so' or 'ssh://user@host'"
    )
