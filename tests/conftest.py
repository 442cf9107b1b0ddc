"""Test-wide settings: deterministic torch on the 2-core machines this suite runs on."""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "2")
