"""The probe catalogue: every op and variant the probe measures, in matrix order."""

from __future__ import annotations

from collections.abc import Sequence

from mdla_quant.kernels.registry import INT8_KERNELS
from workbench.probe.a16 import a16_probes
from workbench.probe.arith import arith_probes
from workbench.probe.decoders import decoder_probes
from workbench.probe.dilated import dilated_probes
from workbench.probe.elementwise import elementwise_probes
from workbench.probe.model import Probe
from workbench.probe.windows import window_probes

MATH = ("SQRT", "RSQRT", "EXP", "LOG", "DIV", "POW")


def catalogue(only: Sequence[str] = ()) -> list[Probe]:
    """All probes, or those whose op name (or `op/variant` key) is in `only`."""
    kinds = frozenset(INT8_KERNELS)
    probes = window_probes() + dilated_probes() + elementwise_probes(kinds) + decoder_probes(kinds)
    probes += arith_probes() + a16_probes()
    if not only:
        return probes
    wanted = {o.upper() for o in only}
    return [p for p in probes if p.op in wanted or p.key.upper() in wanted]
