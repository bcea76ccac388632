"""The README's Python example runs exactly as written and prints what it says it prints."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_the_ten_line_example_prints_its_promised_output() -> None:
    text = README.read_text(encoding="utf-8")
    example = re.search(r"## The agent loop in ten lines\n\n```python\n(.*?)```", text, re.S)
    assert example is not None, "the README lost its agent-loop example"
    code = example.group(1)
    promised = re.search(r"# (answered .*)$", code, re.M)
    assert promised is not None
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == promised.group(1).strip()
