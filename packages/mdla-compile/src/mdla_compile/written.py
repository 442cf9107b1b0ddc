"""Files the workbench wrote, told apart from a user's inputs.

Every PNG the workbench writes (class maps, boxes, legends) carries a `tEXt` chunk whose
keyword is `MARK`, and every `.npz` it writes (`run --save-outputs`) holds a member named
`MARK`. `input_files` skips such files, so a `--calib` folder or a `run DIR` never reads back
what the tool wrote there (a class map calibrated on, `cat.net.out.net.out.png`).

    if is_written(path): ...            # a PNG or .npz made by the workbench
"""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

MARK = "mdla-workbench"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MAX_SCAN = 1 << 16  # bytes of chunks read before the image data when looking for the mark


def is_written(path: str | Path) -> bool:
    """`path` is a PNG or .npz the workbench wrote (it carries `MARK`); unreadable: False."""
    p = Path(path)
    try:
        if p.suffix.lower() == ".png":
            return _png_marked(p)
        if p.suffix.lower() == ".npz":
            with zipfile.ZipFile(p) as z:
                return f"{MARK}.npy" in z.namelist()
    except (OSError, zipfile.BadZipFile, struct.error):
        return False
    return False


def _png_marked(path: Path) -> bool:
    """A `tEXt` chunk keyed `MARK` before the first `IDAT` (PIL writes text chunks there)."""
    with path.open("rb") as f:
        if f.read(8) != PNG_SIGNATURE:
            return False
        while f.tell() < MAX_SCAN:
            head = f.read(8)
            if len(head) < 8:
                return False
            length, kind = struct.unpack(">I4s", head)
            if kind in (b"IDAT", b"IEND"):
                return False
            data = f.read(length) if length <= MAX_SCAN else b""
            if kind == b"tEXt" and data.split(b"\0", 1)[0] == MARK.encode():
                return True
            f.seek(length - len(data) + 4, 1)  # the rest of a long chunk, then its CRC
    return False
