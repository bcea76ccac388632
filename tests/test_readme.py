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


def test_the_readme_lists_every_exit_code_and_where_the_client_is() -> None:
    from edge_agent import cli

    text = README.read_text(encoding="utf-8")
    section = re.search(r"\n## Exit codes\n(.*?)\n## ", text, re.S)
    assert section is not None, "the README lost its exit-code section"
    serve, client = section.group(1).split("(the client)")
    listed = {int(code) for code in re.findall(r"^\| (\d+) \|", client, re.M)}
    constants = {
        value for name, value in vars(cli).items() if name.startswith("EXIT_") and name != "EXIT_CONFIG"
    }
    assert listed == constants
    assert {int(code) for code in re.findall(r"^\| (\d+) \|", serve, re.M)} == {0, 1, 69, 78}
    # `edge-agent status` right after `make run` needs .venv/bin on PATH; the README says how.
    assert 'export PATH="$PWD/.venv/bin:$PATH"' in text
