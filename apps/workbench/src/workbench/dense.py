"""Dense outputs of `workbench run`: a segmentation model's class map as a PNG, FP32 | INT8.

A model output is a *class map* when the manifest records it as one (`model.output_kinds`,
decided at compile: `mdla_compile.kinds`; `--output-kind NAME=classmap` for a map at another
resolution). Compile's guess is `[1, K, H, W]` in the model's layout with K >= 2 classes and
(H, W) the model input's own (H, W), both > 1, or a CPU ARGMAX's `[1, H, W]` index map: what
segmentation heads give (torchvision's LRASPP, DeepLabV3 and FCN upsample to the input; a
UNet's head), and not a detector's head maps (coarser than the input), a super-resolution
image (larger), a classifier's `[1, K]` or a 1-channel mask. A file written before the record
gets the same guess when it is read.

For each class map `run` writes `<image>.<model>.<output>.png` into its output folder
(`workbench.outputs`: `--out-dir`, by default `mdla-out/`; never beside the input): the argmax
over the K classes of the FP32 model on the left, of the INT8 run on the right, a 4-pixel white
gap between, colour per class from a fixed palette (`palette`). The FP32 map comes from the
float graph `compile` stored beside the `.mdla` (`mdla_ir.stored`: data, never code) or from the
model the user names on the command line (`run --model SPEC`, with `--weights` when it was
compiled with some), never from the spec the file records: a `.mdla` is data, and that spec is
shown, not imported (it could name `os:system(...)`, a pickle or a script). The FP32 side is
drawn only when it is the very model the manifest was compiled from (the fx graph and
state-dict hash match); otherwise the PNG holds the INT8 map alone and `run` says why in one
line.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

import mdla_ir
import mdla_runtime
from mdla_compile import CompileError, kinds
from mdla_compile import inputs as ins
from mdla_ir import DEFAULT_PATH, IRError, Preprocess, stored
from mdla_ir.provenance import CLASSMAP
from mdla_runtime.atomic import write_atomic
from mdla_zoo.errors import ZooError
from workbench import pipeline
from workbench.contract import Contract
from workbench.images import png_bytes, read_image
from workbench.outputs import DEFAULT_DIR, picture
from workbench.overlay import crop_box, label_of, overlay, with_legend

Array = np.ndarray[Any, Any]
Sample = Array | list[Array]  # a model's input: one array, or one per input of a model of several
GAP = 4  # white pixels between the FP32 and the INT8 panel
is_class_map = kinds.is_class_map  # compile's guess, by shape


def palette(n: int) -> Array:
    """(n, 3) uint8 colours: class c's bits spread over the high bits of R, G and B (bit 0 of c
    to the top bit of R, bit 1 to G, bit 2 to B, the next three one bit lower, ...), the
    PASCAL VOC convention, so class 0 (background) is black and neighbours differ."""
    colours = np.zeros((n, 3), np.uint8)
    for c in range(n):
        rgb, bits, shift = [0, 0, 0], c, 7
        while bits and shift >= 0:
            for ch in range(3):
                rgb[ch] |= ((bits >> ch) & 1) << shift
            bits, shift = bits >> 3, shift - 1
        colours[c] = rgb
    return colours


def class_map(scores: Array) -> Array:
    """[1, K, H, W] scores -> (H, W) class indices (the first of tied maxima); a [1, H, W]
    index map (a CPU ARGMAX's) is already one."""
    if scores.ndim == 3:
        return np.asarray(np.rint(scores[0]), np.int64)
    return np.asarray(np.argmax(scores[0], axis=0), np.int64)


def render(maps: Sequence[Array], classes: int) -> Array:
    """Class maps side by side, coloured by `palette(classes)`, GAP white columns between."""
    colours = palette(classes)
    h = maps[0].shape[0]
    gap = np.full((h, GAP, 3), 255, np.uint8)
    panels: list[Array] = []
    for i, m in enumerate(maps):
        panels += [gap] if i else []
        panels.append(colours[m])
    return np.concatenate(panels, axis=1)


@dataclass
class FloatSide:
    """One manifest's runs beside their FP32 side (`ClassMaps`, `boxes.Boxes`): the float graph
    is imported on first use, once (`float_graph`; the import is the slow part, and a failed one
    is not retried)."""

    manifest: mdla_runtime.Manifest
    weights: str | None = None
    model: str | None = None  # `run --model`: the only spec ever imported for the FP32 side
    folder: Path = Path(DEFAULT_DIR)  # where the pictures go (`run --out-dir`)
    shared: FloatSide | None = None  # another's FP32 side, to import and run the graph once
    # `run --import`: how `model` is captured (None: as the manifest records)
    import_path: str | None = field(default=None, kw_only=True)
    why_no_float: str = field(default="", init=False)  # set when there is no FP32 side
    _float: mdla_ir.Graph | None = field(default=None, init=False, repr=False)
    _tried: bool = field(default=False, init=False, repr=False)
    _last: tuple[Sample, list[Array]] | None = field(default=None, init=False, repr=False)

    def switch_off(self) -> None:
        """No FP32 side (`run --fp32 off`): nothing is read, imported or run for it."""
        self._tried, self._float, self.why_no_float = True, None, "off (--fp32 off)"

    def float_outputs(self, x: Sample) -> list[Array] | None:
        """The float graph's outputs for input `x` (one array per model input for a model of
        several; computed once per input), or None when there is no float graph (then
        `why_no_float` says why)."""
        if self.shared is not None:
            floats = self.shared.float_outputs(x)
            self.why_no_float = self.shared.why_no_float
            return floats
        if not self._tried:
            self._tried = True
            self._float, self.why_no_float = float_graph(
                self.manifest, self.model, self.weights, self.import_path
            )
        if self._float is None:
            return None
        if self._last is None or self._last[0] is not x:
            xs = x if isinstance(x, list) else [x]
            self._last = (x, [np.asarray(o) for o in mdla_ir.run_float(self._float, xs)])
        return self._last[1]


@dataclass
class ClassMaps(FloatSide):
    """Writes the class maps of one manifest's runs; the FP32 graph is imported on first use.
    `preprocess` is how the photos were prepared (`run`'s, the manifest's unless replaced):
    without it there is no overlay on the photo."""

    preprocess: Preprocess | None = None

    def outputs(self) -> list[int]:
        """Indices of the manifest's outputs that are class maps (`kinds.of_manifest`)."""
        return [i for i, k in enumerate(kinds.of_manifest(self.manifest)) if k == CLASSMAP]

    def write(self, image: str, x: Sample, int8_outputs: Sequence[Array]) -> list[dict[str, Any]]:
        """The PNG of each class-map output for input `x` (named after `image`), the share of
        pixels where FP32 and INT8 agree (None without an FP32 map), and for a photo the INT8
        map on it at its own resolution with a legend (`overlay.py`)."""
        written = []
        floats = self.float_outputs(x)
        photo = self.photo(image)
        for i in self.outputs():
            q = class_map(int8_outputs[i])
            spec = self.manifest.outputs[i]
            f = class_map(floats[i]) if floats is not None else None
            classes = (  # an index map does not say K: the largest index seen + 1
                int(spec.model_shape[1])
                if len(spec.model_shape) == 4
                else int(max(q.max(), f.max() if f is not None else 0)) + 1
            )
            rgb = render([f, q] if f is not None else [q], classes)
            what = spec.name or f"output{i}"
            path = picture(self.folder, image, self.manifest.name, what)
            write_atomic(path, png_bytes(Image.fromarray(rgb, "RGB")))
            agree = round(float(np.mean(f == q)), 4) if f is not None else None
            record: dict[str, Any] = {"png": str(path), "fp32_int8_agree": agree}
            seen = np.unique(q if f is None else np.concatenate([q.ravel(), f.ravel()]))
            record["legend"] = legend(seen, self.manifest.provenance.labels, palette(classes))
            if photo is not None and self.preprocess is not None:
                on = picture(self.folder, image, self.manifest.name, f"{what}.overlay")
                box = crop_box(photo.shape[:2], self.preprocess, q.shape)
                img = with_legend(
                    overlay(photo, q, palette(classes), box),
                    [int(c) for c in seen],
                    self.manifest.provenance.labels,
                    palette(classes),
                )
                write_atomic(on, png_bytes(img))
                record["overlay"] = str(on)
            written.append(record)
        return written

    @staticmethod
    def photo(image: str) -> Array | None:
        """The photo `image` names (a file or a sample), None for an array or random input."""
        if image == "random" or ins.is_data(image):
            return None
        return read_image(image)

    def entry(self, image: str, x: Sample, int8_outputs: Sequence[Array]) -> dict[str, Any]:
        """`run`'s record of the class maps written for one input ({} when there are none)."""
        if not self.outputs():
            return {}
        maps = self.write(image, x, int8_outputs)
        return {"class_maps": maps} | ({"no_fp32": self.why_no_float} if self.why_no_float else {})

    @staticmethod
    def lines(results: Sequence[dict[str, Any]]) -> list[str]:
        """What `run` prints after its table: each PNG, and why a map has no FP32 side."""
        out = []
        for e in results:
            for m in e.get("class_maps", []):
                agree = m["fp32_int8_agree"]
                what = (
                    f"FP32 | INT8, {100 * agree:.1f}% of pixels agree"
                    if agree is not None
                    else "INT8 only"
                )
                out.append(f"class map of {e['image']}: {m['png']} ({what})")
                if "overlay" in m:
                    out.append(f"  INT8 on the photo, with a legend: {m['overlay']}")
            if "no_fp32" in e:
                out.append(f"  no FP32 side: {e['no_fp32']}")
        return out


def legend(seen: Array, labels: Sequence[str], colours: Array) -> list[dict[str, Any]]:
    """The classes a map holds: index, label (`class c` past the manifest's labels), colour."""
    return [
        {"class": int(c), "label": label_of(labels, int(c)), "rgb": [int(v) for v in colours[c]]}
        for c in seen
    ]


def recorded(manifest: mdla_runtime.Manifest) -> str:
    """The spec the manifest records, quoted for a terminal (it is the file's text, shown only)."""
    spec = manifest.provenance.spec
    return ascii(spec[:200] + ("..." if len(spec) > 200 else "")) if spec else "none"


def float_graph(
    manifest: mdla_runtime.Manifest,
    model: str | None,
    weights: str | None,
    import_path: str | None = None,
) -> tuple[mdla_ir.Graph | None, str]:
    """The FP32 graph of `model` (the spec the user named), else the one `compile` stored
    beside the manifest (data, bound to its bytes); or None and why not. The manifest's own
    recorded spec is never imported. `model` is captured by `import_path`, else by the path
    the manifest records, else (a file that records none) auto, then fx."""
    if not model:
        return stored_graph(manifest)
    prov = manifest.provenance
    shape = tuple(int(d) for d in manifest.inputs[0].model_shape)  # --input-shape, if given
    paths = [import_path or prov.import_path] if import_path or prov.import_path else []
    for path in paths or (DEFAULT_PATH, "fx"):  # fx: a file from before export was the default
        try:
            source = pipeline.load_source(model, weights, Contract(input_shape=shape), (), path)
        except ImportError as exc:  # load_model imports torch on use (absent on a phone)
            return None, f"cannot import `{model}` here: {exc}"
        except (IRError, ZooError, CompileError, OSError) as exc:  # the spec does not load
            return None, f"cannot import `{model}`: {exc}"
        graph = source.graph
        if graph.provenance.source_hash == prov.source_hash:
            break
    if graph.provenance.source_hash != prov.source_hash:
        hint = "" if weights else " (compiled with --weights? give run the same --weights)"
        return None, f"`{model}` imports as another model than the manifest's{hint}"
    return same_io(graph, manifest, f"`{model}`")


def same_io(
    graph: mdla_ir.Graph, manifest: mdla_runtime.Manifest, what: str
) -> tuple[mdla_ir.Graph | None, str]:
    """`graph` when its inputs and outputs have the manifest's shapes, else None and why."""
    if [tuple(graph.tensors[o].shape) for o in graph.outputs] != [
        tuple(o.model_shape) for o in manifest.outputs
    ]:
        return None, f"{what}'s outputs are not the manifest's"
    if [graph.model_shape(i) for i in graph.inputs] != [
        tuple(i.model_shape) for i in manifest.inputs
    ]:
        return None, f"{what}'s inputs are not the manifest's"
    return graph, ""


def stored_graph(manifest: mdla_runtime.Manifest) -> tuple[mdla_ir.Graph | None, str]:
    """The float graph `compile` stored beside the manifest (`NAME.mdla.fp32`), when it is
    there, readable and bound to this very file's bytes; else None and why."""
    side = stored.sidecar(manifest.path) if manifest.path is not None else None
    if manifest.path is None or side is None or not side.is_file():
        return None, (
            "not shown: a .mdla never names code to run; give --model SPEC (and --weights) for "
            f"the FP32 side (the file records spec {recorded(manifest)}), or compile it again "
            "to store its FP32 graph beside it"
        )
    try:
        size = side.stat().st_size
        if size > stored.MAX_BYTES:
            raise IRError(f"{size} bytes, over the {stored.MAX_BYTES} a stored graph may hold")
        graph, bound_to = stored.loads(side.read_bytes())
        mine = hashlib.sha256(Path(manifest.path).read_bytes()).hexdigest()
    except (IRError, OSError) as exc:
        return None, f"cannot read `{side}`: {exc}"
    if bound_to != mine:
        return None, (
            f"`{side}` was written for another build of `{manifest.path}`: compile it again, "
            "or give --model SPEC"
        )
    return same_io(graph, manifest, f"`{side}`")
