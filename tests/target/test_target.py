"""Target data: loading by name and path, errors, constraints, the quantizer's accessors, and
write_target as load_target's inverse."""

from __future__ import annotations

import dataclasses
import errno
import os
from pathlib import Path

import pytest

import mdla_legalize
import mdla_target
from mdla_ir import OpKind
from mdla_target import (
    PADDING_MODES,
    DeviceSpec,
    OpSpec,
    Target,
    TargetDataError,
    known_targets,
    load_target,
    render_target,
    target_path,
    write_target,
)

MDLA_OPS = {
    "CONV_2D",
    "DEPTHWISE_CONV_2D",
    "AVERAGE_POOL_2D",
    "MAX_POOL_2D",
    "ADD",
    "MUL",
    "RELU",
    "RELU6",
    "LOGISTIC",
    "TANH",
    "HARD_SWISH",
    "SOFTMAX",
    "CONCATENATION",
    "PAD",
    "RESHAPE",
    "MEAN",
    "RESIZE_BILINEAR",
    "BATCH_MATMUL",
}


def test_mdla35_maps_the_measured_op_set() -> None:
    target = load_target("mdla3.5")
    assert set(target.devices) == {"mtk-mdla", "mtk-gpu", "mtk-dsp"}
    mdla = target.device("mtk-mdla")
    mapped = {k.name for k, spec in mdla.ops.items() if spec.supported}
    assumed = {k.name for k, spec in mdla.ops.items() if spec.source.startswith("assumed")}
    assert mapped - assumed == MDLA_OPS | {"FULLY_CONNECTED"}
    # mapped on an assumption, until a probe measures them
    new_ops = {"PRELU", "RESIZE_NEAREST_NEIGHBOR", "DEPTH_TO_SPACE", "TRANSPOSE_CONV_2D"}
    assert new_ops <= mapped & assumed
    assert (mdla.max_rank, mdla.max_dim) == (4, 65535)
    for kind in ("SQRT", "RSQRT", "EXP", "LOG", "CHANNEL_SHUFFLE", "LAYER_NORM", "QUANTIZE"):
        spec = target.op("mtk-mdla", OpKind[kind])
        assert not spec.supported
        assert spec.reason
        assert spec.source.startswith("measured")


def test_every_entry_says_where_its_fact_comes_from() -> None:
    target = load_target("mdla3.5")
    for dev in target.devices.values():
        assert dev.source
        for spec in dev.ops.values():
            assert spec.source.startswith(
                ("measured on MT6886", "MediaTek MDLA 3.0 guide", "Neuron ABI", "assumed")
            ), spec
            assert spec.padding in PADDING_MODES


def test_the_16x8_ops_are_int16_on_the_mdla_and_assumed() -> None:
    target = load_target("mdla3.5")
    for kind in (
        OpKind.CONV_2D,
        OpKind.DEPTHWISE_CONV_2D,
        OpKind.ADD,
        OpKind.MEAN,
        OpKind.LOGISTIC,
        OpKind.TANH,
    ):
        spec = target.op("mtk-mdla", kind)
        assert spec.int16
        assert spec.int16_source.startswith("assumed:")  # until a phone measures it
    assert not target.op("mtk-mdla", OpKind.HARD_SWISH).int16  # no 16x8 kernel yet


def test_scale_constraints_for_the_quantizer() -> None:
    target = load_target("mdla3.5")
    assert target.op("mtk-mdla", OpKind.LOGISTIC).fixed_output == (1 / 256, -128)
    assert target.op("mtk-mdla", OpKind.SOFTMAX).fixed_output == (1 / 256, -128)
    assert target.op("mtk-mdla", OpKind.TANH).fixed_output == (1 / 128, 0)
    assert target.op("mtk-mdla", OpKind.CONCATENATION).shared_scale
    assert target.op("mtk-mdla", OpKind.MAX_POOL_2D).keeps_input_scale
    assert target.op("mtk-mdla", OpKind.AVERAGE_POOL_2D).keeps_input_scale
    assert target.op("mtk-mdla", OpKind.CONV_2D).fixed_output is None
    assert target.op("mtk-mdla", OpKind.CONV_2D).per_channel
    assert not target.op("mtk-mdla", OpKind.FULLY_CONNECTED).per_channel
    assert not target.op("mtk-mdla", OpKind.ADD).shared_scale


def test_unlisted_kind_is_unsupported_with_a_reason() -> None:
    spec = load_target("mdla3.5").op("mtk-dsp", OpKind.BATCH_MATMUL)
    assert not spec.supported
    assert "BATCH_MATMUL" in spec.reason


def test_unknown_target_lists_the_known_ones() -> None:
    with pytest.raises(TargetDataError, match=r"unknown target `mdla9`; known targets: .*mdla3\.5"):
        load_target("mdla9")
    assert "mdla3.5" in known_targets()


def test_unknown_device_lists_the_devices() -> None:
    with pytest.raises(TargetDataError, match="mtk-mdla, mtk-gpu, mtk-dsp"):
        load_target("mdla3.5").device("mtk-npu")


def test_load_from_a_path(tmp_path: Path) -> None:
    path = tmp_path / "tiny.toml"
    path.write_text(
        'name = "tiny"\n[device.npu]\nmax_rank = 4\nmax_dim = 8\n'
        'dtypes = ["int8"]\nsource = "assumed"\n'
        '[op.npu.ADD]\nbroadcast = true\nsource = "assumed"\n'
    )
    target = load_target(path)
    assert target.name == "tiny"
    assert target.op("npu", OpKind.ADD).supported
    assert target.op("npu", OpKind.ADD).dtypes == ("int8",)
    assert not target.op("npu", OpKind.MUL).supported


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name = ", "not valid TOML"),
        ('name = "t"\n', "`device` must be a dict"),
        ('name = "t"\n[device.d]\nmax_rank = "4"\nmax_dim = 1\nsource = "x"\n', "`max_rank` must"),
        (
            'name = "t"\n[device.d]\nmax_rank = 4\nmax_dim = 1\nsource = "x"\n'
            '[op.d.NOPE]\nsource = "x"\n',
            "`NOPE` is not an op kind",
        ),
        (
            'name = "t"\n[device.d]\nmax_rank = 4\nmax_dim = 1\nsource = "x"\n[op.d.ADD]\n',
            "`source` must be a str",
        ),
        (
            'name = "t"\n[device.d]\nmax_rank = 4\nmax_dim = 1\nsource = "x"\n'
            '[op.d.ADD]\nsource = "x"\npadding = "odd"\n',
            "padding 'odd' is not one of",
        ),
        (
            'name = "t"\n[device.d]\nmax_rank = 4\nmax_dim = 1\nsource = "x"\n'
            '[op.e.ADD]\nsource = "x"\n',
            "undeclared devices",
        ),
        (
            'name = "t"\n[device.d]\nmax_rank = 4\nmax_dim = 1\nsource = "x"\n'
            '[op.d.ADD]\nsource = "x"\nint16 = true\n',
            "int16 = true needs an int16_source",
        ),
    ],
)
def test_malformed_target_files_name_the_field(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(TargetDataError, match=message):
        load_target(path)


def test_missing_target_file() -> None:
    with pytest.raises(TargetDataError, match="does not exist"):
        load_target("/nonexistent/target.toml")


def test_a_directory_is_not_reported_as_missing(tmp_path: Path) -> None:
    folder = tmp_path / "t.toml"
    folder.mkdir()
    with pytest.raises(TargetDataError, match="is a directory"):
        load_target(folder)


def test_target_path_is_the_shipped_file() -> None:
    path = target_path("mdla3.5")
    assert path.is_file()
    assert load_target(path).devices == load_target("mdla3.5").devices
    with pytest.raises(TargetDataError, match="unknown target `nope`"):
        target_path("nope")


def test_legalize_keeps_the_old_names() -> None:
    assert mdla_legalize.load_target is mdla_target.load_target
    assert mdla_legalize.Target is mdla_target.Target


def test_write_target_round_trips_the_shipped_target(tmp_path: Path) -> None:
    target = load_target("mdla3.5")
    again = load_target(write_target(target, tmp_path / "copy.toml", ["a comment"]))
    assert dataclasses.replace(again, path=target.path) == target  # soc and [arith] too
    assert again.socs == ("mt6886",)
    assert (tmp_path / "copy.toml").read_text().startswith("# a comment\n")
    assert [p.name for p in tmp_path.iterdir()] == ["copy.toml"]  # no temp file left


def test_write_target_on_a_full_disk_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(*_args: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "replace", full)
    path = tmp_path / "t.toml"
    with pytest.raises(OSError, match=rf"No space left on device: '{path}'"):
        write_target(load_target("mdla3.5"), path)
    assert list(tmp_path.iterdir()) == []


def test_write_target_round_trips_every_field(tmp_path: Path) -> None:
    spec = OpSpec(
        OpKind.LOGISTIC,
        "d",
        True,
        'measured "quoted"\\ source',
        reason="",
        dtypes=("int8",),
        per_channel=True,
        padding="same-valid",
        broadcast=True,
        shared_scale=True,
        keeps_input_scale=True,
        fixed_output=(0.00390625, -128),
        int16=True,
        int16_source="assumed: 16x8",
    )
    off = OpSpec(OpKind.SQRT, "d", False, "assumed", reason="no SQRT", dtypes=("int8", "int16"))
    dev = DeviceSpec("d", 4, 65535, ("int8", "int16"), "x", {spec.kind: spec, off.kind: off})
    target = Target("t", "desc", {"d": dev}, "", "wrap", "measured", ("mt6886", "mt6985"))
    again = load_target(write_target(target, tmp_path / "t.toml"))
    assert dataclasses.replace(again, path="") == target


def test_a_malformed_soc_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    shipped = mdla_target.target_path("mdla3.5").read_text()
    path.write_text(shipped.replace('soc = "mt6886"', "soc = 3"))
    with pytest.raises(TargetDataError, match="`soc` must be a SoC name"):
        load_target(path)


def test_an_unknown_accumulator_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    shipped = mdla_target.target_path("mdla3.5").read_text()
    assert 'accumulator = "saturate"' in shipped
    path.write_text(shipped.replace('accumulator = "saturate"', 'accumulator = "round"'))
    with pytest.raises(TargetDataError, match="accumulator 'round' is not one of"):
        load_target(path)


def test_render_target_refuses_an_entry_under_the_wrong_device() -> None:
    spec = OpSpec(OpKind.ADD, "other", True, "x")
    dev = DeviceSpec("d", 4, 65535, ("int8",), "x", {OpKind.ADD: spec})
    with pytest.raises(TargetDataError, match="filed under device `d` says device `other`"):
        render_target(Target("t", "", {"d": dev}))


def test_a_target_text_is_parsed_once_and_a_changed_file_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A compile loads its target more than once: the same text gives the same Target without
    parsing it again; a file whose text changed is parsed anew."""
    import tomllib

    parsed: list[str] = []
    loads = tomllib.loads
    monkeypatch.setattr(tomllib, "loads", lambda text: parsed.append(text) or loads(text))
    path = tmp_path / "once.toml"
    tiny = 'name = "{}"\n[device.npu]\nmax_rank = 4\nmax_dim = 8\nsource = "assumed"\n'
    path.write_text(tiny.format("once"))
    first = load_target(path)
    assert load_target(path) is first
    assert len(parsed) == 1
    path.write_text(tiny.format("twice"))
    assert load_target(path).name == "twice"
    assert len(parsed) == 2
    other = tmp_path / "other.toml"  # the same text elsewhere: its own path recorded
    other.write_text(tiny.format("twice"))
    assert load_target(other).path == str(other)
    shipped = load_target("mdla3.5")
    assert load_target("mdla3.5") is shipped
