"""`images.read_image` (`mdla_compile.images`: photos for `run`, every `--calib DIR` image):
decoded reduced when large, refused clearly past the workbench's own pixel cap, whatever PIL
would have done."""

from __future__ import annotations

import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from PIL import Image, UnidentifiedImageError
from typer.testing import CliRunner

from mdla_compile import CompileError
from tests.workbench.conftest import TINY_IMAGES
from workbench import images
from workbench.cli import app


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def write_big_png(path: Path, side: int) -> None:
    """A black 1-bit `side`x`side` PNG, compressed row by row (never held whole: ~20 KB)."""
    row = bytes(1 + (side + 7) // 8)  # the filter byte, then the packed pixels
    z = zlib.compressobj(9)
    data = b"".join(z.compress(row) for _ in range(side)) + z.flush()
    head = struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0)  # 1-bit grey
    png = b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", head) + _chunk(b"IDAT", data)
    path.write_bytes(png + _chunk(b"IEND", b""))


def test_a_13370_square_png_is_refused_before_decoding(tmp_path: Path) -> None:
    path = tmp_path / "bomb.png"
    write_big_png(path, 13370)
    assert path.stat().st_size < 40_000
    with pytest.raises(
        CompileError,
        match=r"`.*bomb.png` is 13370x13370 \(179 M pixels\), more than the 50 M pixels the "
        "workbench decodes: scale it down",
    ):
        images.read_image(path)


def test_past_pils_own_limit_is_the_same_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "bigger.png"
    write_big_png(path, 20000)  # 400 M pixels: PIL itself raises DecompressionBombError
    with pytest.raises(CompileError, match="more than the 50 M pixels the workbench decodes"):
        images.read_image(path)


def test_a_large_png_under_the_cap_is_decoded_reduced(tmp_path: Path) -> None:
    path = tmp_path / "big.png"
    write_big_png(path, 5000)
    out = images.read_image(path)
    assert out.shape == (1250, 1250, 3)  # reduced 4x: the short side stays >= KEEP_SIDE
    assert out.dtype.name == "uint8"
    assert int(out.max()) == 0


PEAK = """
import resource, sys
from workbench import images
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out = images.read_image(sys.argv[1])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(out.shape, (after - before) // 1024)
"""


def test_a_jpeg_past_the_cap_is_decoded_at_reduced_scale(tmp_path: Path) -> None:
    """54 M pixels of JPEG decode at 1/4 scale (DCT scaling): a few MB, not 160 MB of RGB."""
    path = tmp_path / "big.jpg"
    Image.new("L", (9000, 6000), 128).save(path, quality=50)
    proc = subprocess.run(
        [sys.executable, "-c", PEAK, str(path)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    shape, grown_mb = proc.stdout.rsplit(" ", 1)
    assert shape == "(1500, 2250, 3)"
    assert int(grown_mb) < 40


def test_a_directory_is_named_as_such(tmp_path: Path) -> None:
    with pytest.raises(CompileError, match="is a directory, not an image file"):
        images.read_image(tmp_path)


def test_a_calibration_folder_with_a_huge_png_fails_clearly(tmp_path: Path) -> None:
    (tmp_path / "calib").mkdir()
    write_big_png(tmp_path / "calib" / "bomb.png", 13370)
    args = ["compile", TINY_IMAGES, "--calib", str(tmp_path / "calib")]
    result = CliRunner().invoke(app, [*args, "-o", str(tmp_path / "t.mdla")])
    assert result.exit_code == 1, result.output
    assert "bomb.png` is 13370x13370 (179 M pixels)" in result.stderr
    assert "DecompressionBomb" not in result.stderr


def test_run_on_a_1x1_image_says_it_means_little(
    runner: CliRunner, artifacts: dict[str, Path], tmp_path: Path
) -> None:
    Image.new("RGB", (1, 1), (200, 10, 10)).save(tmp_path / "dot.png")
    Image.new("RGB", (80, 60)).save(tmp_path / "small.png")  # 224x224 input: 3.7x, no warning
    result = runner.invoke(
        app,
        ["run", str(artifacts["images"]), str(tmp_path / "dot.png"), str(tmp_path / "small.png")],
    )
    assert result.exit_code == 0, result.output
    assert result.stderr.count("warning:") == 1
    assert (
        "warning: `dot.png` is 1x1 pixels, upscaled 224x to the model's 224x224 input: the result "
        "says little about it" in result.stderr
    )


def _recording(calls: list[str], plugin_missing: bool) -> object:
    """An `Image.open` that records its files; with `plugin_missing`, as a library that patches
    it leaves it (ultralytics' HEIF wrapper): on a file PIL cannot identify, it imports a
    plugin that is not installed."""
    pil_open = Image.open

    def opener(fp: object, *args: object, **kwargs: object) -> Image.Image:
        calls.append(str(fp))
        try:
            return pil_open(fp, *args, **kwargs)  # type: ignore[arg-type]
        except UnidentifiedImageError:
            if plugin_missing:
                raise ModuleNotFoundError("No module named 'a_heif_plugin'") from None
            raise

    return opener


@pytest.mark.parametrize("imported", ["before", "after"])
def test_a_replaced_pil_opener_neither_runs_nor_breaks_the_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, imported: str
) -> None:
    """Images are read with the opener PIL had when the reader was imported, even after another
    library replaced `Image.open` (ultralytics does, and pip-installs a plugin from its
    wrapper); when that library came first, its plugin's ImportError is still a file that
    cannot be read, named."""
    import mdla_compile.images as reader

    own: list[str] = []
    replaced: list[str] = []
    kept = _recording(own, plugin_missing=False) if imported == "before" else None
    monkeypatch.setattr(reader, "_PIL_OPEN", kept)  # what the reader found at its import
    monkeypatch.setattr(Image, "open", _recording(replaced, plugin_missing=True))
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"not a png")
    good = tmp_path / "good.png"
    Image.new("RGB", (5, 3), (9, 8, 7)).save(good)
    with pytest.raises(CompileError, match=r"cannot decode image `.*broken\.png`"):
        reader.read_image(broken)
    assert reader.read_image(good).shape == (3, 5, 3)
    files = [str(broken), str(good)]
    assert (own, replaced) == ((files, []) if imported == "before" else ([], files))
