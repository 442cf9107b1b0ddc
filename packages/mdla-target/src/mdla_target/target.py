"""Target descriptions: which ops each device of an NPU maps, with constraints and sources.

The data lives in `targets/<name>.toml` (one source of truth, flat enough for the C emulator to
read): `[device.<dev>]` holds device-wide limits, `[op.<dev>.<KIND>]` one op's entry. A kind with
no entry, or an entry with `supported = false`, is not mapped; the entry's `reason` says why.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from mdla_ir import OpKind
from mdla_ir.provenance import ACCUMULATORS
from mdla_target.errors import TargetDataError, UnknownDeviceError

PADDING_MODES = ("any", "explicit", "same-valid")
# Attributes whose non-default values carry their own source in an op entry (`<attr>_source`):
# CONV_2D with dilation > 1 rests on an assumption where plain CONV_2D is measured.
ATTRIBUTE_SOURCES = ("dilation",)


@dataclass(frozen=True, slots=True)
class OpSpec:
    """One op on one device. Scale constraints are for the quantizer (int8, zero point signed)."""

    kind: OpKind
    device: str
    supported: bool
    source: str
    reason: str = ""
    dtypes: tuple[str, ...] = ()
    per_channel: bool = False
    padding: str = "any"
    broadcast: bool = False
    shared_scale: bool = False
    keeps_input_scale: bool = False
    fixed_output: tuple[float, int] | None = None
    dilation: bool = True  # dilation > 1 maps (a probe that saw it fail says false)
    dilation_source: str = ""  # the source of the dilation fact when it differs from the op's
    int16: bool = False  # takes int16 activations (TFLite's 16x8: QuantConfig.a16)
    int16_source: str = ""  # where that fact comes from ("assumed: ..." until a probe measures)

    def maps(self, wide: bool = False) -> bool:
        """Whether the op's int8 form (`supported`) or, `wide`, its 16x8 form (`int16`) maps: an
        entry may map only its 16x8 form (QUANTIZE's int8 <-> int16 requantization)."""
        return self.int16 if wide else self.supported

    def attribute_source(self, attr: str) -> str:
        """The source of a non-default value of `attr` (one of ATTRIBUTE_SOURCES), if recorded."""
        return str(getattr(self, f"{attr}_source", "")) if attr in ATTRIBUTE_SOURCES else ""


@dataclass(frozen=True, slots=True)
class DeviceSpec:
    name: str
    max_rank: int
    max_dim: int
    dtypes: tuple[str, ...]
    source: str
    ops: Mapping[OpKind, OpSpec] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    description: str
    devices: Mapping[str, DeviceSpec]
    path: str = ""
    accumulator: str = "saturate"
    accumulator_source: str = "assumed"
    socs: tuple[str, ...] = ()  # `soc`: the SoC names (MTKNN_ADAPTER_DLA_PLATFORM) it describes

    def device(self, name: str) -> DeviceSpec:
        if name not in self.devices:
            raise UnknownDeviceError(
                f"target `{self.name}` has no device `{name}`; its devices: "
                f"{', '.join(self.devices)}",
                [name],
            )
        return self.devices[name]

    def op(self, device: str, kind: OpKind) -> OpSpec:
        """The entry of `kind` on `device`; an unlisted kind gives an unsupported entry."""
        dev = self.device(device)
        spec = dev.ops.get(kind)
        if spec is None:
            return OpSpec(
                kind,
                device,
                False,
                "assumed",
                reason=f"{kind.name} is not in the {self.name} {device} op table",
            )
        return spec


def known_targets() -> list[str]:
    folder = resources.files("mdla_target").joinpath("targets")
    return sorted(
        p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml")
    )


def target_path(name: str) -> Path:
    """The file of the shipped target `name` (what the emulator's build generates C from)."""
    if name not in known_targets():
        raise TargetDataError(
            f"unknown target `{name}`; known targets: {', '.join(known_targets())}", [name]
        )
    return Path(str(resources.files("mdla_target").joinpath("targets", f"{name}.toml")))


def load_target(spec: str | Path) -> Target:
    """A target by name (`"mdla3.5"`, a file shipped in the package) or by path to a TOML file."""
    path = Path(spec)
    if path.suffix == ".toml" or path.exists():
        if not path.is_file():
            why = "is a directory" if path.is_dir() else "does not exist"
            raise TargetDataError(f"target file `{path}` {why}", [str(path)])
        text, where = path.read_text(encoding="utf-8"), str(path)
    else:
        names = known_targets()
        if str(spec) not in names:
            raise TargetDataError(
                f"unknown target `{spec}`; known targets: {', '.join(names)} "
                "(or give a path to a target .toml file)",
                names,
            )
        text, where = (
            target_path(str(spec)).read_text(encoding="utf-8"),
            f"mdla_target/targets/{spec}.toml",
        )
    return _loaded(text, where)


@functools.lru_cache(maxsize=16)
def _loaded(text: str, where: str) -> Target:
    """The target `text` (read from `where`) describes, parsed once per text: a compile loads
    its target two or three times, ~10 ms of TOML each. The same object is given each time; a
    Target is not to be changed (its mappings are read, never written)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TargetDataError(f"target file `{where}` is not valid TOML: {exc}", [where]) from exc
    return _parse(data, where)


def _get(table: Mapping[str, Any], key: str, kind: type, where: str, default: Any = None) -> Any:
    value = table.get(key, default)
    if (
        value is None
        or (kind is not float and not isinstance(value, kind))
        or (kind is float and not isinstance(value, int | float))
    ):
        raise TargetDataError(f"{where}: `{key}` must be a {kind.__name__}, got {value!r}", [where])
    return value


def _strings(table: Mapping[str, Any], key: str, where: str, default: list[str]) -> tuple[str, ...]:
    value = _get(table, key, list, where, default)
    if not all(isinstance(v, str) for v in value):
        raise TargetDataError(f"{where}: `{key}` must be a list of strings", [where])
    return tuple(value)


def _parse(data: Mapping[str, Any], where: str) -> Target:
    name = _get(data, "name", str, where)
    devices_raw = _get(data, "device", dict, where)
    ops_raw = _get(data, "op", dict, where, {})
    devices: dict[str, DeviceSpec] = {}
    for dev, table in devices_raw.items():
        at = f"{where} [device.{dev}]"
        dtypes = _strings(table, "dtypes", at, [])
        ops = {
            spec.kind: spec
            for spec in (
                _op(dev, kind, entry, dtypes, f"{where} [op.{dev}.{kind}]")
                for kind, entry in ops_raw.get(dev, {}).items()
            )
        }
        devices[dev] = DeviceSpec(
            dev,
            _get(table, "max_rank", int, at),
            _get(table, "max_dim", int, at),
            dtypes,
            _get(table, "source", str, at),
            ops,
        )
    unknown = [d for d in ops_raw if d not in devices]
    if unknown:
        raise TargetDataError(f"{where}: op tables for undeclared devices {unknown}", unknown)
    accumulator, accumulator_source = _arith(data, where)
    return Target(
        name,
        _get(data, "description", str, where, ""),
        devices,
        where,
        accumulator,
        accumulator_source,
        soc_names(data, where),
    )


def soc_names(data: Mapping[str, Any], where: str) -> tuple[str, ...]:
    """`soc`: one SoC name or a list of them (optional), kept lower case."""
    soc = data.get("soc", [])
    names = [soc] if isinstance(soc, str) else soc
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        raise TargetDataError(f"{where}: `soc` must be a SoC name or a list of them", ["soc"])
    return tuple(n.lower() for n in names)


def _arith(data: Mapping[str, Any], where: str) -> tuple[str, str]:
    """`[arith]`: what a requantization does when `x * 2^shift` leaves int32 (a multiplier
    s_in * s_w / s_out >= 2): "wrap" (TFLite's reference: the int32 shift wraps modulo 2^32) or
    "saturate" (the value is clamped to int32 first); the table is optional (saturate, assumed)."""
    table = _get(data, "arith", dict, where, {})
    at = f"{where} [arith]"
    accumulator = _get(table, "accumulator", str, at, "saturate")
    if accumulator not in ACCUMULATORS:
        raise TargetDataError(
            f"{at}: accumulator {accumulator!r} is not one of {ACCUMULATORS}", [at]
        )
    return accumulator, _get(table, "source", str, at, "assumed")


def _op(dev: str, kind_name: str, t: Mapping[str, Any], dtypes: tuple[str, ...], at: str) -> OpSpec:
    try:
        kind = OpKind[kind_name]
    except KeyError as exc:
        raise TargetDataError(f"{at}: `{kind_name}` is not an op kind", [kind_name]) from exc
    supported = _get(t, "supported", bool, at, True)
    padding = _get(t, "padding", str, at, "any")
    if padding not in PADDING_MODES:
        raise TargetDataError(f"{at}: padding {padding!r} is not one of {PADDING_MODES}", [at])
    fixed = None
    if "fixed_output_scale" in t:
        fixed = (
            float(_get(t, "fixed_output_scale", float, at)),
            _get(t, "fixed_output_zero_point", int, at),
        )
    return OpSpec(
        kind,
        dev,
        supported,
        _get(t, "source", str, at),
        reason=_get(t, "reason", str, at, ""),
        dtypes=_strings(t, "dtypes", at, list(dtypes)),
        per_channel=_get(t, "per_channel", bool, at, False),
        padding=padding,
        broadcast=_get(t, "broadcast", bool, at, False),
        shared_scale=_get(t, "shared_scale", bool, at, False),
        keeps_input_scale=_get(t, "keeps_input_scale", bool, at, False),
        fixed_output=fixed,
        dilation=_get(t, "dilation", bool, at, True),
        dilation_source=_get(t, "dilation_source", str, at, ""),
        int16=_get(t, "int16", bool, at, False),
        int16_source=_int16_source(t, at),
    )


def _int16_source(t: Mapping[str, Any], at: str) -> str:
    """`int16_source`, which an entry with `int16 = true` must give (the fact is new per op)."""
    source = str(_get(t, "int16_source", str, at, ""))
    if _get(t, "int16", bool, at, False) and not source:
        raise TargetDataError(f"{at}: int16 = true needs an int16_source", [at])
    return source
