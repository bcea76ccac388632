"""The safe reader every sensor goes through: it stays inside its root and reads small files only."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from edge_agentd.skills.sysfs import (
    MAX_READ_BYTES,
    SYSFS_ROOT_ENV,
    Root,
    SysfsError,
    resolve_root,
)


def test_root_resolution_order() -> None:
    env = {SYSFS_ROOT_ENV: "/fake/sys"}
    assert resolve_root("/configured", SYSFS_ROOT_ENV, "/sys", env) == Path("/configured")
    assert resolve_root(None, SYSFS_ROOT_ENV, "/sys", env) == Path("/fake/sys")
    assert resolve_root(None, SYSFS_ROOT_ENV, "/sys", {SYSFS_ROOT_ENV: " "}) == Path("/sys")
    assert resolve_root(None, SYSFS_ROOT_ENV, "/sys", {}) == Path("/sys")


def test_reads_follow_links_that_stay_inside(tmp_path: Path) -> None:
    (tmp_path / "devices" / "d0").mkdir(parents=True)
    (tmp_path / "devices" / "d0" / "value").write_text("  42\n")
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "d0").symlink_to("../devices/d0")
    root = Root(tmp_path)
    assert root.read_text("class", "d0", "value") == "42"
    assert root.list_dir("class") == ["d0"]
    assert root.is_dir("class", "d0")
    assert root.exists("class", "d0", "value")


def test_links_out_of_the_root_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("s3cret")
    inside = tmp_path / "root"
    inside.mkdir()
    (inside / "leak").symlink_to(outside / "secret")
    (inside / "dir").symlink_to(outside)
    (inside / "up").symlink_to("..")
    root = Root(inside)
    for parts in (("leak",), ("dir", "secret"), ("up", "outside", "secret")):
        with pytest.raises(SysfsError, match="leads outside"):
            root.read_text(*parts)
        assert not root.exists(*parts)
    with pytest.raises(SysfsError, match="leads outside"):
        root.list_dir("dir")


@pytest.mark.parametrize("part", ["..", ".", "", "a/b", "/etc", "x\0y"])
def test_path_components_must_be_plain_names(tmp_path: Path, part: str) -> None:
    with pytest.raises(SysfsError, match="refusing path component"):
        Root(tmp_path).read_text("class", part)


def test_only_small_regular_files_are_read(tmp_path: Path) -> None:
    (tmp_path / "page").write_bytes(b"x" * MAX_READ_BYTES)
    (tmp_path / "huge").write_bytes(b"x" * (MAX_READ_BYTES + 1))
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    root = Root(tmp_path)
    assert len(root.read_text("page")) == MAX_READ_BYTES
    with pytest.raises(SysfsError, match="larger than 4096 bytes"):
        root.read_text("huge")
    with pytest.raises(SysfsError, match="not a regular file"):
        root.read_text("fifo")  # a FIFO with no writer: opening it blocking would hang
    with pytest.raises(SysfsError, match="not a regular file"):
        root.read_text("dir")


def test_missing_things(tmp_path: Path) -> None:
    root = Root(tmp_path / "absent")
    assert root.list_dir("class", "thermal") == []
    with pytest.raises(SysfsError, match="does not exist") as caught:
        root.read_text("temp")
    assert caught.value.missing
    (tmp_path / "file").write_text("1")
    assert Root(tmp_path).list_dir("file") == []  # a file where a directory should be


def test_undecodable_bytes_are_replaced_not_raised(tmp_path: Path) -> None:
    (tmp_path / "name").write_bytes(b"bme\xff280\n")
    assert Root(tmp_path).read_text("name") == "bme\ufffd280"


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.text(max_size=20), min_size=1, max_size=4))
def test_no_component_list_reads_outside_the_root(parts: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "secret").write_text("outside")
        (base / "root").mkdir()
        (base / "root" / "inside").write_text("inside")
        root = Root(base / "root")
        try:
            text = root.read_text(*parts)
        except SysfsError:
            return
        assert text == "inside"
