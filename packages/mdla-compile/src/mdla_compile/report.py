"""`Report`: what `workbench compile` prints about a saved compile, as rows and as JSON.

report = compiled.report(on="emu", supported=(ok, total))
for name, value in report.rows(): print(f"{name:12} {value}")
json.dumps(report.as_dict())
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mdla_compile.errors import CompileError
from mdla_ir import Graph, stored
from mdla_quant import QuantConfig
from mdla_quant.compare import TensorStats
from mdla_quant.precision import tensor_costs

_DEFAULT = QuantConfig()

if TYPE_CHECKING:
    from mdla_compile.compiled import Compiled


@dataclass(frozen=True)
class Report:
    model: str  # the spec as given
    graph: str
    ops_imported: int
    ops_manifest: int
    device: str
    on: str
    supported: tuple[int, int] | None  # (ok, total) by the device's own query, when asked
    cpu_ops: int | None  # ops placed on the CPU (None: no `cpu=`)
    cosine: float | None  # first output vs FP32 (with `cpu=`)
    calib: str
    count: int
    config: QuantConfig
    out: Path
    size: int
    tflite: Path | None
    tflite_size: int | None
    worst: TensorStats | None
    random_weights: bool
    fp32: Path | None = None  # the float graph stored beside the .mdla, when written
    fp32_size: int = 0
    import_path: str = ""  # "export" or "fx" (Source.import_path)
    import_note: str = ""  # why auto took the path it took
    a16_share: float = 0.0  # the int16 tensors' share of activation bytes (config.a16)

    @property
    def imported(self) -> str:
        """How the model was imported, as the `import` row says it."""
        path = {"export": "torch.export", "fx": "torch.fx"}.get(self.import_path, "")
        return f"{path} ({self.import_note})" if self.import_note else path

    def extras(self) -> list[str]:
        """The weight techniques beyond the defaults', as the `weights` row names them."""
        c, default = self.config, _DEFAULT
        named = (
            ("equalized", c.equalize),
            (f"AdaRound {c.adaround} iters/layer", c.adaround),
            ("block reconstruction", c.reconstruction == "block"),
            ("bias-corrected", c.bias_correction),
            (f"{c.weight_rounding} weight rounding", c.weight_rounding != default.weight_rounding),
            (f"{c.weight_scale} weight scale", c.weight_scale != default.weight_scale),
        )
        return [name for name, on in named if on]

    def rows(self) -> list[tuple[str, str]]:
        """(name, value) per line of the summary table."""
        rows = [("ops", f"{self.ops_imported} imported -> {self.ops_manifest}")]
        if self.import_path:
            rows.insert(0, ("import", self.imported))
        if self.supported is not None:
            ok, total = self.supported
            on_npu = f"{ok}/{total} ({self.on})"
            if self.cpu_ops is not None:
                on_npu += f", {self.cpu_ops} on cpu"
            rows.append((f"ops on {self.device}", on_npu))
        if self.cosine is not None:
            rows.append(("cosine vs FP32", f"{self.cosine:.5f}"))
        c = self.config
        rows.append(("calibration", f"{self.count} x {self.calib}, {c.method}, {c.rounding}"))
        if self.extras():
            rows.append(("weights", ", ".join(self.extras())))
        if c.a16:
            shown = ", ".join(c.a16[:3]) + (", ..." if len(c.a16) > 3 else "")
            rows.append(
                ("int16", f"{len(c.a16)} activations, {self.a16_share:.1%} of bytes: {shown}")
            )
        rows.append(("size", f"{self.size / 1024:.1f} KiB  {self.out}"))
        if self.tflite is not None and self.tflite_size is not None:
            rows.append(("tflite", f"{self.tflite_size / 1024:.1f} KiB  {self.tflite}"))
        if self.fp32 is not None:
            rows.append(("fp32 graph", f"{self.fp32_size / 1024:.1f} KiB  {self.fp32}"))
        if self.worst is not None:
            w = self.worst
            db = "inf" if math.isinf(w.sqnr_db) else f"{w.sqnr_db:.1f}"
            rows.append(("worst layer", f"{w.op} ({w.kind}): SQNR {db} dB"))
        return rows

    def as_dict(self) -> dict[str, Any]:
        """The JSON document `workbench compile --json` prints (less its timing)."""
        c = self.config
        ok, total = self.supported if self.supported is not None else (None, None)
        w = self.worst
        return {
            "model": self.model,
            "graph": self.graph,
            "out": str(self.out),
            "bytes": self.size,
            "tflite": str(self.tflite) if self.tflite is not None else None,
            "fp32_graph": str(self.fp32) if self.fp32 is not None else None,
            "ops": {"imported": self.ops_imported, "manifest": self.ops_manifest},
            "import": {"path": self.import_path or None, "note": self.import_note or None},
            "device": self.device,
            "on": self.on,
            "supported": {"ok": ok, "total": total},
            "calibration": {
                "source": self.calib,
                "count": self.count,
                "method": c.method,
                "percentile": c.percentile if c.method == "percentile" else None,
                "rounding": c.rounding,
                "bias_correction": c.bias_correction,
                "equalize": c.equalize,
                "adaround": c.adaround,
                "reconstruction": c.reconstruction,
                "weight_scale": c.weight_scale,
                "weight_rounding": c.weight_rounding,
                "a16": list(c.a16),
                "a16_share": round(self.a16_share, 4),
            },
            "random_weights": self.random_weights,
            "worst_layer": (
                {"op": w.op, "kind": w.kind, "sqnr_db": w.sqnr_db} if w is not None else None
            ),
        }


def build(compiled: Compiled, on: str, supported: tuple[int, int] | None) -> Report:
    """The report of `compiled` after its `save`."""
    if compiled.manifest is None or compiled.path is None:
        raise CompileError("a compile's report describes its .mdla: save it first")
    options, source, manifest = compiled.options, compiled.source, compiled.manifest
    cpu = bool(options is not None and options.cpu)
    worst = compiled.worst_layers(1)
    tflite = compiled.tflite
    fp32 = stored.sidecar(compiled.path)
    return Report(
        model=source.spec,
        graph=source.graph.name,
        ops_imported=len(source.graph.ops),
        ops_manifest=len(manifest.operations),
        device=compiled.config.device,
        on=on,
        supported=supported,
        cpu_ops=len(manifest.operations) - supported[1] if cpu and supported else None,
        cosine=compiled.output_cosine() if cpu else None,
        calib=options.calib_name if options is not None else "",
        count=len(compiled.calibration),
        config=compiled.config,
        out=compiled.path,
        size=compiled.path.stat().st_size,
        tflite=tflite,
        tflite_size=tflite.stat().st_size if tflite is not None else None,
        worst=worst[0] if worst else None,
        random_weights=source.random_weights,
        fp32=fp32 if fp32.is_file() else None,
        fp32_size=fp32.stat().st_size if fp32.is_file() else 0,
        import_path=source.import_path,
        import_note=source.import_note,
        a16_share=a16_share(compiled.device_graph, compiled.config.a16),
    )


def a16_share(graph: Graph, names: tuple[str, ...]) -> float:
    """The share of `graph`'s activation elements (int8 bytes) that `names` hold."""
    costs = tensor_costs(graph)
    total = sum(c.elements for c in costs.values())
    return sum(costs[n].elements for n in names if n in costs) / max(total, 1)
