"""Under systemd each log line carries its syslog priority as a `<N>` prefix, so that
`journalctl -p err -u edge-agent` finds the errors; elsewhere the lines are plain."""

from __future__ import annotations

import io
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from edge_agentd.cli.logs import LINE_FORMAT, JournalFormatter, is_journal, syslog_priority


def _record(level: int, message: str, exc: bool = False) -> logging.LogRecord:
    info = None
    if exc:
        try:
            raise RuntimeError("the sensor bus vanished")
        except RuntimeError:
            info = sys.exc_info()
    return logging.LogRecord("edge_agentd.test", level, __file__, 1, message, (), info)


def test_each_level_has_its_syslog_priority() -> None:
    formatter = JournalFormatter(LINE_FORMAT)
    shown = {
        level: formatter.format(_record(level, "x"))
        for level in (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR, logging.CRITICAL)
    }
    assert shown == {
        logging.DEBUG: "<7>DEBUG edge_agentd.test: x",
        logging.INFO: "<6>INFO edge_agentd.test: x",
        logging.WARNING: "<4>WARNING edge_agentd.test: x",
        logging.ERROR: "<3>ERROR edge_agentd.test: x",
        logging.CRITICAL: "<2>CRITICAL edge_agentd.test: x",
    }
    assert (syslog_priority(5), syslog_priority(25), syslog_priority(100)) == (7, 6, 2)


def test_every_line_of_a_traceback_keeps_the_priority() -> None:
    text = JournalFormatter(LINE_FORMAT).format(_record(logging.ERROR, "failed", exc=True))
    lines = text.split("\n")
    assert len(lines) > 3 and all(line.startswith("<3>") for line in lines), text
    assert lines[-1] == "<3>RuntimeError: the sensor bus vanished"


@settings(max_examples=200, deadline=None)
@given(message=st.text(), level=st.integers(min_value=1, max_value=60))
def test_any_message_is_prefixed_on_every_line(message: str, level: int) -> None:
    text = JournalFormatter(LINE_FORMAT).format(_record(level, message))
    prefix = f"<{syslog_priority(level)}>"
    assert all(line.startswith(prefix) for line in text.split("\n"))
    assert text.replace("\n" + prefix, "\n") == prefix + logging.Formatter(LINE_FORMAT).format(
        _record(level, message)
    )


def test_only_the_stream_journal_stream_names_is_the_journal(tmp_path: Path) -> None:
    with (tmp_path / "err").open("w") as stream, (tmp_path / "other").open("w") as other:
        status = os.fstat(stream.fileno())
        names = f"{status.st_dev}:{status.st_ino}"
        assert is_journal(stream, {"JOURNAL_STREAM": names})
        assert not is_journal(other, {"JOURNAL_STREAM": names})  # inherited, redirected
        assert not is_journal(stream, {})
        for bad in ("", "1", ":", "a:b", f"{status.st_dev}:", "-1:-1", "1:2:3"):
            assert not is_journal(stream, {"JOURNAL_STREAM": bad}), bad
    assert not is_journal(io.StringIO(), {"JOURNAL_STREAM": names})


def _serve_with_a_typo(tmp_path: Path, journal: bool, *extra: str) -> tuple[int, str]:
    """`edge-agent serve` on a config with a typo, its stderr a file that JOURNAL_STREAM names (as
    systemd names the journal's socket) or not."""
    config = tmp_path / "edge.toml"
    config.write_text("[daemon]\nqueue_limt = 8\n", encoding="utf-8")
    config.chmod(0o644)
    err = tmp_path / "stderr"
    with err.open("w") as stream:
        status = os.fstat(stream.fileno())
        env = {k: v for k, v in os.environ.items() if k != "JOURNAL_STREAM"}
        if journal:
            env["JOURNAL_STREAM"] = f"{status.st_dev}:{status.st_ino}"
        done = subprocess.run(
            [sys.executable, "-m", "edge_agentd.cli", "serve", "--config", str(config), *extra],
            stdout=subprocess.DEVNULL,
            stderr=stream,
            env=env,
            timeout=120,
            check=False,
        )
    return done.returncode, err.read_text(encoding="utf-8")


def test_serve_under_systemd_prefixes_its_lines(tmp_path: Path) -> None:
    code, text = _serve_with_a_typo(tmp_path, journal=True)
    assert code == 78, text
    lines = text.splitlines()
    assert lines and all(re.match(r"<[2-7]>", line) for line in lines), text
    assert any(line.startswith("<3>ERROR edge_agentd.cli: config error: ") for line in lines), text


def test_serve_elsewhere_writes_plain_lines(tmp_path: Path) -> None:
    # `--log-level debug`, lower case, is taken (it used to exit 65).
    code, text = _serve_with_a_typo(tmp_path, False, "--log-level", "debug")
    assert code == 78, text
    lines = text.splitlines()
    assert any(line.startswith("ERROR edge_agentd.cli: config error: ") for line in lines), text
    assert "did you mean `queue_limit`?" in text
    assert not [line for line in lines if re.match(r"<\d>", line)], text
