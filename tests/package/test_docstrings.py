"""The code's docstrings and comments say what and why; the figures that back them stay in
docs/performance.md (its "What the code's choices rest on" among them).

Every module of daemon/ and skills/ is read for its comments and docstrings (module, class,
function and attribute ones), and each line is held to a short list of what a run's figure looks
like: an amount of memory, a time under a second, a ratio, a change in percent, a tally of
questions or results, a benchmark's split, and a model named as the one something was seen on;
text quoted as an example is not read. A line giving a configuration fact (a model file's size the threshold sits between, a chat
format's own words) is allowed by name below, with why. Code and its strings are never read.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_layers import MODULES, ROOT

FIGURES = {
    "an amount of memory": r"\b\d[\d,.]*\s?(?:[KMG]iB|[kMG]B)\b",
    "a time under a second": r"\b\d[\d,.]*\s?(?:ms|µs|us)\b",
    "a ratio": r"\b\d+(?:\.\d+)?x\b",
    "a change in percent": r"[+-]\d+(?:\.\d+)?\s?%",
    "a tally of a run": r"\b\d+ (?:of|out of) \d+ (?:questions|results|answers|runs|tokens|calls)\b",
    "a benchmark's split": r"\b(?:dev|held-out|fresh) (?:half|third)\b|\bd\d\d(?:-d\d\d)?\b",
    "a model seen": r"\bQwen|\bthe 270M\b|\b270M model\b|\bE2B\b|\bsmolagents\b",
}
PATTERN = re.compile("|".join(f"(?:{p})" for p in FIGURES.values()))
QUOTED = re.compile(r"``[^`]*``|\"[^\"]*\"")
"""Text quoted in a line (``code`` or "words") is an example of what is written, not a claim: a
skill's result says "The memory available is 2587.9 MiB." whoever measured what."""

ALLOWED: dict[str, dict[str, str]] = {
    "daemon/service/config/strategy.py": {
        "E2B": "the model a `plain` daemon is meant for, named where the strategy is chosen",
        "241 MiB": "the embedded model file's size, which the `auto` threshold sits above",
        "3 GiB": "the size of the file of a model that drives the loop, which it sits below",
    },
    "daemon/service/config/settings.py": {
        "1 GiB": "the `auto` threshold, as configured",
        "Qwen": "the family whose chat template's tool format the `native` setting speaks",
    },
    "daemon/agent/actions.py": {"Qwen": "the family whose chat template's words a format copies"},
    "daemon/model/formats.py": {"Qwen": "the ChatML template's own default system prompt"},
}
"""Figures that are configuration facts, by module: the text allowed, and why it is one."""


def comment_lines(path: Path) -> Iterator[tuple[int, str]]:
    """Each line of ``path``'s comments and docstrings, with its line number."""
    source = path.read_text(encoding="utf-8")
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        for statement in body if isinstance(body, list) else []:
            if (
                isinstance(statement, ast.Expr)
                and isinstance(statement.value, ast.Constant)
                and isinstance(statement.value.value, str)
            ):
                for offset, line in enumerate(statement.value.value.splitlines()):
                    yield statement.lineno + offset, line


def figures_in(path: Path, allowed: dict[str, str]) -> list[str]:
    found = []
    for number, line in comment_lines(path):
        for match in PATTERN.finditer(QUOTED.sub("", line)):
            if not any(match.group(0) in text for text in allowed):
                found.append(f"line {number}: {match.group(0)!r} in {line.strip()!r}")
    return sorted(found, key=lambda where: int(where.split()[1].rstrip(":")))


def _relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", MODULES, ids=_relative)
def test_no_run_figure_or_model_seen_in_docstrings_and_comments(path: Path) -> None:
    found = figures_in(path, ALLOWED.get(_relative(path), {}))
    assert found == [], "say what and why; the figure goes to docs/performance.md"


def test_every_allowed_figure_is_still_there() -> None:
    for module, texts in ALLOWED.items():
        lines = " ".join(line for _, line in comment_lines(ROOT / module))
        for text, reason in texts.items():
            assert reason and text in lines, f"{module} no longer says {text!r}: drop it"


def test_the_checker_reads_comments_and_docstrings_only(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text(
        '"""Scores in windows: one call kept 218 MiB (it says ``41.5 %RH``, "22.7 MiB.")."""\n'
        "LIMIT = '64 MiB'  # a string of code is code\n"
        "def f():\n"
        '    """Two calls, 1.3x the seconds of one (the 270M, on the dev half)."""\n'
        "    return 1  # 14 of 36 tokens evaluated again, +60% seconds\n"
    )
    assert figures_in(module, {}) == [
        "line 1: '218 MiB' in 'Scores in windows: one call kept 218 MiB (it says ``41.5 %RH``, \"22.7 MiB.\").'",
        "line 4: '1.3x' in 'Two calls, 1.3x the seconds of one (the 270M, on the dev half).'",
        "line 4: 'the 270M' in 'Two calls, 1.3x the seconds of one (the 270M, on the dev half).'",
        "line 4: 'dev half' in 'Two calls, 1.3x the seconds of one (the 270M, on the dev half).'",
        "line 5: '14 of 36 tokens' in '# 14 of 36 tokens evaluated again, +60% seconds'",
        "line 5: '+60%' in '# 14 of 36 tokens evaluated again, +60% seconds'",
    ]
    assert figures_in(module, {"218 MiB": "why"})[0].startswith("line 4:")
