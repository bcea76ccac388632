"""system_status over a fake /proc, and over the real one."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from edge_agentd.skills.sysfs import Root
from edge_agentd.skills.system import PROC_MAX_BYTES, System

MEMINFO = """MemTotal:        3884328 kB
MemFree:          512000 kB
MemAvailable:    2942164 kB
Buffers:           81232 kB
SwapTotal:        102396 kB
SwapFree:          51198 kB
"""


def fake_proc(path: Path, loadavg: str, meminfo: str, uptime: str) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "loadavg").write_text(loadavg)
    (path / "meminfo").write_text(meminfo)
    (path / "uptime").write_text(uptime)
    return path


def test_status_of_a_fake_pi(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path / "proc", "0.52 0.58 0.59 2/233 4242\n", MEMINFO, "266501.42 9.3\n")
    status = System(Root(proc, PROC_MAX_BYTES), tmp_path).system_status()
    assert status["load_average"] == {"1min": 0.52, "5min": 0.58, "15min": 0.59}
    assert status["memory"] == {
        "total_mib": 3793.3,
        "available_mib": 2873.2,
        "used_percent": 24.3,
        "swap_used_mib": 50.0,
    }
    assert status["uptime"] == {
        "seconds": 266501,
        "hours": 74.0,
        "days": 3.08,
        "text": "3 d 2 h 1 min",
    }
    disk = status["disk"]
    assert disk["path"] == str(tmp_path)
    assert 0 < disk["free_gib"] <= disk["total_gib"]
    assert 0 <= disk["used_percent"] <= 100


def test_old_kernels_without_memavailable(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, "0 0 0 1/1 1", "MemTotal: 1000 kB\nMemFree: 250 kB\n", "59.9 1")
    status = System(Root(proc), tmp_path).system_status()
    assert status["memory"]["used_percent"] == 75.0
    assert status["uptime"] == {"seconds": 60, "hours": 0.0, "days": 0.0, "text": "0 min"}


def test_each_broken_part_says_why_and_the_rest_still_answer(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path / "proc", "high", "MemFree: 12 kB\n", "up a while")
    status = System(Root(proc), tmp_path / "no-such-disk").system_status()
    assert status["load_average"] == {"error": f"{proc}/loadavg holds too few fields"}
    assert status["memory"] == {"error": f"{proc}/meminfo has no MemTotal"}
    assert "not a number" in status["uptime"]["error"]
    assert status["disk"]["error"].startswith(f"cannot stat {tmp_path}/no-such-disk")


def test_missing_proc(tmp_path: Path) -> None:
    status = System(Root(tmp_path / "nothing"), tmp_path).system_status()
    for part in ("load_average", "memory", "uptime"):
        assert "does not exist" in status[part]["error"]
    assert "total_gib" in status["disk"]


def test_the_real_proc_of_this_machine() -> None:
    status = System(Root("/proc", PROC_MAX_BYTES), "/").system_status()
    assert set(status) == {"load_average", "memory", "disk", "uptime"}
    assert all("error" not in part for part in status.values()), status
    assert status["memory"]["total_mib"] > 0
    assert status["uptime"]["seconds"] >= 0


@settings(max_examples=150, deadline=None)
@given(
    loadavg=st.text(max_size=80),
    meminfo=st.text(max_size=200),
    uptime=st.text(max_size=40) | st.floats().map(str),
)
def test_any_proc_content_gives_values_or_errors(loadavg: str, meminfo: str, uptime: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        proc = fake_proc(Path(tmp) / "proc", loadavg, meminfo, uptime)
        status = System(Root(proc), tmp).system_status()
        assert set(status) == {"load_average", "memory", "disk", "uptime"}
        for part in status.values():
            assert isinstance(part, dict)
            if "error" in part:
                assert part["error"]
