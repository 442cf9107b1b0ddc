"""The emulator as a process: the fake APU runtime-PM node, and no leaks under valgrind."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mdla_emu.emulator import CSRC, build_emulator

ROOT = Path(__file__).resolve().parents[2]  # the repository (tests/ is a package there)

SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    import numpy as np
    sys.path.insert(0, sys.argv[2])
    node = Path(sys.argv[1]) / "power"

    def read():
        return {f: (node / f).read_text().strip() for f in
                ("runtime_status", "runtime_active_time", "runtime_suspended_time")}

    from tests.runtime.test_emu_api import conv_model
    from tests.runtime.test_emu_support import compile_model, emu
    emu()  # loading the library creates the node
    log = {"loaded": read()}
    b, shape = conv_model(h=64)
    assert b.finish() == 0
    rc, comp = compile_model(b, [sys.argv[3]], [shape])
    assert rc == 0
    x = np.zeros((1, 64, 64, 4), np.int8)
    time.sleep(0.3)
    log["idle"] = read()
    t0 = time.monotonic()
    while time.monotonic() - t0 < 0.3:
        comp.run([x])
    log["busy_ms"] = (time.monotonic() - t0) * 1000
    log["after_compute"] = read()
    time.sleep(0.3)
    log["after_autosuspend"] = read()
    time.sleep(0.3)
    log["idle_again"] = read()
    print(json.dumps(log))
    """
)


def run_node(tmp_path: Path, device: str) -> dict[str, dict[str, str]]:
    env = {**os.environ, "MDLA_EMU_SYSFS": str(tmp_path / "apu_top")}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "apu_top"), str(ROOT), device],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    log: dict[str, dict[str, str]] = json.loads(proc.stdout.strip().splitlines()[-1])
    return log


def test_runtime_pm_node_moves_only_while_computing(tmp_path: Path) -> None:
    log = run_node(tmp_path, "mtk-mdla")
    active = {k: int(v["runtime_active_time"]) for k, v in log.items() if k != "busy_ms"}
    suspended = {k: int(v["runtime_suspended_time"]) for k, v in log.items() if k != "busy_ms"}
    assert log["loaded"]["runtime_status"] == "suspended"
    assert log["idle"]["runtime_status"] == "suspended"
    assert active["idle"] == active["loaded"] == 0  # an idle control moves it +0 ms
    assert log["after_compute"]["runtime_status"] == "active"
    busy = float(log["busy_ms"])  # type: ignore[arg-type]
    assert 0.8 * busy <= active["after_compute"] <= busy + 60  # active across the busy loop
    assert log["after_autosuspend"]["runtime_status"] == "suspended"
    assert active["after_autosuspend"] <= active["after_compute"] + 50 + 30  # autosuspend delay
    assert active["idle_again"] == active["after_autosuspend"]
    assert suspended["after_autosuspend"] >= suspended["loaded"] + 250  # the idle before
    text = (tmp_path / "apu_top" / "power" / "runtime_active_time").read_text()
    assert text.endswith("\n")
    assert text.strip().isdigit()
    # A second process continues the counters (monotonic across runs, as on the phone).
    again = run_node(tmp_path, "mtk-mdla")
    assert int(again["loaded"]["runtime_active_time"]) == active["idle_again"]
    # The suspended time is folded in at each transition and at start-up (the file is static
    # between writes): the second process counts the 0.3 s the node sat suspended before exit.
    assert int(again["loaded"]["runtime_suspended_time"]) >= suspended["idle_again"] + 250


def test_gpu_compute_leaves_the_apu_node_alone(tmp_path: Path) -> None:
    log = run_node(tmp_path, "mtk-gpu")
    assert {v["runtime_status"] for k, v in log.items() if k != "busy_ms"} == {"suspended"}
    assert int(log["idle_again"]["runtime_active_time"]) == 0


DRIVER = textwrap.dedent(
    """
    #include <stdio.h>
    #include <stdlib.h>
    #include <string.h>
    #include "neuron_abi.h"
    #define OK(x) do { int rc_ = (x); \\
        if (rc_) { printf("%s -> %d\\n", #x, rc_); return 1; } } while (0)
    static int scalar(NeuronModel *m, uint32_t *n, int32_t v) {
        NeuronOperandType t = {NEURON_INT32, 0, NULL, 0.f, 0};
        OK(NeuronModel_addOperand(m, &t));
        OK(NeuronModel_setOperandValue(m, (int32_t)*n, &v, 4));
        return (int)(*n)++;
    }
    int main(void) {
        NeuronModel *m; OK(NeuronModel_create(&m));
        uint32_t n = 0, d_in[4] = {1, 6, 6, 3}, d_w[4] = {4, 3, 3, 3}, d_b[1] = {4};
        uint32_t d_out[4] = {1, 6, 6, 4};
        NeuronOperandType in = {NEURON_TENSOR_QUANT8_ASYMM_SIGNED, 4, d_in, 0.1f, 1};
        NeuronOperandType w = {NEURON_TENSOR_QUANT8_SYMM_PER_CHANNEL, 4, d_w, 0.f, 0};
        NeuronOperandType b = {NEURON_TENSOR_INT32, 1, d_b, 0.f, 0};
        NeuronOperandType out = {NEURON_TENSOR_QUANT8_ASYMM_SIGNED, 4, d_out, 0.2f, -2};
        OK(NeuronModel_addOperand(m, &in)); n++;
        OK(NeuronModel_addOperand(m, &w)); n++;
        OK(NeuronModel_addOperand(m, &b)); n++;
        static int8_t wv[108]; int32_t bv[4] = {10, -20, 30, 0};
        for (int i = 0; i < 108; i++) wv[i] = (int8_t)(i % 17 - 8);
        float scales[4] = {0.01f, 0.02f, 0.03f, 0.04f};
        NeuronSymmPerChannelQuantParams q = {0, 4, scales};
        OK(NeuronModel_setOperandSymmPerChannelQuantParams(m, 1, &q));
        OK(NeuronModel_setOperandValue(m, 1, wv, sizeof wv));
        OK(NeuronModel_setOperandValue(m, 2, bv, sizeof bv));
        uint32_t ins[10] = {0, 1, 2};
        for (int i = 0; i < 6; i++) ins[3 + i] = (uint32_t)scalar(m, &n, 1);
        ins[9] = (uint32_t)scalar(m, &n, 1);
        OK(NeuronModel_addOperand(m, &out));
        uint32_t y = n++, x = 0;
        OK(NeuronModel_addOperation(m, NEURON_CONV_2D, 10, ins, 1, &y));
        OK(NeuronModel_identifyInputsAndOutputs(m, 1, &x, 1, &y));
        OK(NeuronModel_finish(m));
        NeuronDevice *dev; OK(Neuron_getDevice(0, &dev));
        const NeuronDevice *devs[1] = {dev};
        NeuronCompilation *c; OK(NeuronCompilation_createForDevices(m, devs, 1, &c));
        OK(NeuronCompilation_finish(c));
        size_t size; OK(NeuronCompilation_getCompiledNetworkSize(c, &size));
        void *blob = malloc(size); OK(NeuronCompilation_storeCompiledNetwork(c, blob, size));
        NeuronModel *m2; NeuronCompilation *c2;
        OK(NeuronModel_restoreFromCompiledNetwork(&m2, &c2, blob, size));
        int8_t xin[108], yout[144];
        for (int i = 0; i < 108; i++) xin[i] = (int8_t)(i * 7);
        NeuronExecution *e; OK(NeuronExecution_create(c2, &e));
        OK(NeuronExecution_setInput(e, 0, NULL, xin, sizeof xin));
        OK(NeuronExecution_setOutput(e, 0, NULL, yout, sizeof yout));
        OK(NeuronExecution_compute(e));
        OK(NeuronExecution_compute(e));
        NeuronExecution_free(e);
        NeuronCompilation_free(c2); NeuronModel_free(m2); free(blob);
        NeuronCompilation_free(c); NeuronModel_free(m);
        printf("ok %d\\n", yout[0]);
        return 0;
    }
    """
)


def driver_under_valgrind(
    tmp_path: Path, env: dict[str, str], timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """DRIVER built against the emulator library and run under valgrind's full leak check,
    with `env` added to the environment (the sysfs root is the test's own)."""
    lib = build_emulator()
    src = tmp_path / "driver.c"
    src.write_text(DRIVER)
    exe = tmp_path / "driver"
    cc = os.environ.get("CC") or shutil.which("cc") or "gcc"
    flags = ["-std=c11", "-Wall", "-Wextra", "-Werror", f"-I{CSRC}", f"-Wl,-rpath,{lib.parent}"]
    subprocess.run(
        [cc, *flags, str(src), "-o", str(exe), str(lib)], check=True, capture_output=True
    )
    leaks = ["--leak-check=full", "--show-leak-kinds=all", "--errors-for-leak-kinds=all"]
    return subprocess.run(
        ["valgrind", *leaks, "--error-exitcode=9", str(exe)],
        env=os.environ | {"MDLA_EMU_SYSFS": str(tmp_path / "apu")} | env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_no_leaks_under_valgrind(tmp_path: Path) -> None:
    proc = driver_under_valgrind(tmp_path, {}, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("ok")
    assert "All heap blocks were freed" in proc.stderr


@pytest.mark.parametrize("cache", ["off", "store", "restore", "refused"])
def test_engine_runs_lose_no_memory_under_valgrind(tmp_path: Path, cache: str) -> None:
    """mdla-engine on the emulator, plain, storing, restoring the compiled network, and
    compiling it again after the adapter refuses a damaged one: valgrind counts 0 bytes
    definitely, indirectly or possibly lost (the restored model and the blob are freed)."""
    from mdla_runtime import save
    from mdla_runtime.build import engine_path
    from mdla_runtime.testing import chain_qgraph
    from tests.runtime.test_engine import inputs_for

    manifest = save(chain_qgraph(), tmp_path / "m.mdla")
    args = [str(engine_path()), str(manifest), "--lib", str(build_emulator())]
    args += inputs_for(manifest, tmp_path)
    blob = tmp_path / "net.cache"
    if cache != "off":
        args += ["--cache", str(blob)]
    if cache in ("restore", "refused"):
        subprocess.run(args, check=True, capture_output=True, timeout=120)
        assert blob.stat().st_size > 0
    if cache == "refused":  # one byte of the network flipped: the key matches, the checksum not
        data = bytearray(blob.read_bytes())
        data[64 + 40] ^= 0x5A
        blob.write_bytes(bytes(data))
    env = {**os.environ, "MDLA_EMU_SYSFS": str(tmp_path / "apu")}
    proc = subprocess.run(
        ["valgrind", "--leak-check=full", "--error-exitcode=9", *args, "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    state = {"off": None, "store": "stored", "restore": "restored", "refused": "rebuilt"}[cache]
    assert json.loads(proc.stdout)["cache"] == state
    lost = dict(re.findall(r"(definitely|indirectly|possibly) lost: ([\d,]+) bytes", proc.stderr))
    if "All heap blocks were freed" not in proc.stderr:  # else valgrind prints no leak summary
        assert lost == {"definitely": "0", "indirectly": "0", "possibly": "0"}, proc.stderr
    assert "ERROR SUMMARY: 0 errors" in proc.stderr
