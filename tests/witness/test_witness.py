"""mdla_witness against fake sysfs trees: discovery, reading, and every verdict of the protocol."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mdla_witness import WitnessError, find_power_nodes, read_nodes, witness


class FakeNode:
    """A runtime-PM device directory: power/runtime_{status,active_time,suspended_time}."""

    def __init__(self, root: Path, name: str, driver: str | None = None) -> None:
        self.dir = root / "devices" / "platform" / name
        (self.dir / "power").mkdir(parents=True)
        if driver:
            drv = root / "bus" / "platform" / "drivers" / driver
            drv.mkdir(parents=True, exist_ok=True)
            (drv / name).symlink_to(self.dir)
        self.set("suspended", 1000, 5000)

    def set(self, status: str, active: int, suspended: int) -> None:
        for field, value in (
            ("status", status),
            ("active_time", active),
            ("suspended_time", suspended),
        ):
            (self.dir / "power" / f"runtime_{field}").write_text(f"{value}\n")

    def active(self) -> int:
        return int((self.dir / "power" / "runtime_active_time").read_text())

    def bump(self, ms: int) -> None:
        self.set("active", self.active() + ms, 5000)


def test_discovery_prefers_the_power_driver(tmp_path: Path) -> None:
    named = FakeNode(tmp_path, "19000000.mdla_core")
    top = FakeNode(tmp_path, "190f0000.apu_top", driver="apu_top_3")
    FakeNode(tmp_path, "11000000.i2c")  # not an APU device
    nodes = find_power_nodes(str(tmp_path))
    assert [n.path for n in nodes] == [str(top.dir.resolve()), str(named.dir.resolve())]
    assert nodes[0].found_by == "driver apu_top_3"
    assert nodes[1].found_by == "name"
    assert nodes[0].reading.status == "suspended"
    assert nodes[0].reading.active_ms == 1000


def test_no_node_is_cannot_witness(tmp_path: Path) -> None:
    w = witness(lambda: None, idle_s=0, sysfs=str(tmp_path), sleep=lambda _s: None)
    assert w.verdict.startswith("cannot witness: no APU runtime-PM node under")


def test_witnessed_when_only_the_run_moves_the_counter(tmp_path: Path) -> None:
    node = FakeNode(tmp_path, "190f0000.apu_top", driver="apu_top_3")
    w = witness(
        lambda: node.bump(154) or "logits", idle_s=4, sysfs=str(tmp_path), sleep=lambda _s: None
    )
    assert w.verdict == "witnessed"
    assert (w.control_ms, w.run_ms) == (0, 154)
    assert (w.status_before, w.status_after) == ("suspended", "active")
    assert w.run_result == "logits"
    assert "runtime_active_time +154 ms" in str(w)


def test_not_witnessed_when_the_run_leaves_it_alone(tmp_path: Path) -> None:
    FakeNode(tmp_path, "190f0000.apu_top", driver="apu_top_3")
    w = witness(lambda: None, idle_s=0, sysfs=str(tmp_path))
    assert w.verdict == "not witnessed"
    assert w.run_ms == 0


@pytest.mark.parametrize(
    ("control", "run", "verdict"),
    [
        (2, 50, "witnessed"),  # control exactly at the tolerance
        (3, 50, "cannot witness: the idle control moved runtime_active_time +3 ms"),
        (0, 2, "not witnessed"),  # run at the tolerance: noise, not work
        (0, 9, "cannot witness: the run moved runtime_active_time only +9 ms"),
        (0, 10, "witnessed"),  # run exactly at the threshold
    ],
)
def test_tolerance_edges(tmp_path: Path, control: int, run: int, verdict: str) -> None:
    node = FakeNode(tmp_path, "apu_top", driver="apu_top_3")
    w = witness(
        lambda: node.bump(run),
        idle_s=1,
        sysfs=str(tmp_path),
        sleep=lambda _s: node.bump(control) if control else None,
    )
    assert w.verdict.startswith(verdict)
    assert not (w.witnessed and control > 2)


def test_busy_control_is_never_witnessed(tmp_path: Path) -> None:
    node = FakeNode(tmp_path, "apu_top", driver="apu_top_3")
    w = witness(
        lambda: node.bump(500), idle_s=1, sysfs=str(tmp_path), sleep=lambda _s: node.bump(40)
    )
    assert w.verdict.startswith("cannot witness")
    assert "busy" in w.verdict
    assert w.control_ms == 40


def test_counter_going_backwards(tmp_path: Path) -> None:
    node = FakeNode(tmp_path, "apu_top", driver="apu_top_3")
    w = witness(lambda: node.set("active", 10, 0), idle_s=0, sysfs=str(tmp_path))
    assert w.verdict == "cannot witness: runtime_active_time went backwards (-990 ms)"


def test_unreadable_node(tmp_path: Path) -> None:
    node = FakeNode(tmp_path, "apu_top", driver="apu_top_3")
    (node.dir / "power" / "runtime_active_time").unlink()
    (node.dir / "power" / "runtime_active_time").mkdir()  # reading it fails, even as root
    w = witness(lambda: None, idle_s=0, sysfs=str(tmp_path))
    assert w.verdict.startswith("cannot witness: APU runtime-PM node(s) unreadable")
    assert "Is a directory" in w.verdict
    assert "su=1" in w.verdict


def test_selinux_denial_through_a_remote_shell(tmp_path: Path) -> None:
    node = FakeNode(tmp_path, "apu_top", driver="apu_top_3")
    real = str(node.dir.resolve())

    def phone_shell(command: str) -> tuple[int, str]:
        if "bus/platform/drivers" in command:
            return 0, f"driver apu_top_3\t{real}\n"
        return 0, f"{real}\tcat: {real}/power/runtime_status: Permission denied\t\t\n"

    w = witness(lambda: None, idle_s=0, shell=phone_shell)
    assert w.verdict.startswith("cannot witness: APU runtime-PM node(s) unreadable")
    assert "Permission denied" in w.verdict


def test_explicit_node_and_bad_arguments(tmp_path: Path) -> None:
    node = FakeNode(tmp_path, "anything", driver=None)
    (reading,) = read_nodes([str(node.dir)])
    assert (reading.status, reading.active_ms, reading.suspended_ms) == ("suspended", 1000, 5000)
    assert find_power_nodes(node=str(node.dir))[0].found_by == "given"
    with pytest.raises(WitnessError, match="min_run_ms"):
        witness(lambda: None, idle_s=0, node=str(node.dir), tolerance_ms=5, min_run_ms=5)
    missing = witness(lambda: None, idle_s=0, node=os.fspath(tmp_path / "nope"))
    assert missing.verdict.startswith("cannot witness: APU runtime-PM node(s) unreadable")
    assert "No such file" in missing.verdict
