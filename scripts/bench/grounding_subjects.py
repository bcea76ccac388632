"""What the loop's subject rule refuses, with no model (docs/design.md, "Grounding").

For each of bench_competence.py's questions on device.py's fake Pi: the subject its grammar
finds, and whether any single call the device offers (each ready call, each skill without
required arguments) names it by its own words and its result's, which is what the rule asks of
the calls a run made. An answerable question no single call names is one the rule turns into
"I cannot tell" whatever the model does: the rule's cost. A question no skill answers that some
call names is one the rule does not catch (the value and state rules still hold there).

    .venv/bin/python -m scripts.bench.grounding_subjects [--list]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

from edge_agentd.agent.grounding import unnamed_subject
from edge_agentd.agent.question import Question
from edge_agentd.agent.registry import Registry
from edge_agentd.agent.vocabulary import known_words
from scripts.bench.bench_competence import QUESTIONS, CannotTell, Device
from scripts.bench.device import build_device


def call_vocabularies(registry: Registry) -> list[tuple[str, frozenset[str]]]:
    """Each call the device offers, and the words it and its result name."""
    found = []
    for spec in registry.select(None):
        ready = spec.ready_calls()
        calls: list[dict[str, Any]] = [a for a, _ in ready]
        if not calls and not spec.parameters_schema.get("required"):
            calls = [{}]
        for arguments in calls:
            try:
                result = registry.call(spec, spec.validate_arguments(arguments))
            except Exception as exc:
                print(f"  {spec.name}({arguments}) failed: {exc}", file=sys.stderr)
                continue
            texts = [spec.name, spec.description, *spec.examples]
            texts += [str(v) for v in arguments.values()]
            found.append((f"{spec.name}({arguments})", known_words(texts, [result])))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print every question's verdict")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        sysfs, proc = build_device(Path(tmp))
        device = Device(sysfs, proc)
        vocabularies = call_vocabularies(device.registry)
        counts = {"answerable": 0, "refused": 0, "unanswerable": 0, "caught": 0, "no subject": 0}
        for question in QUESTIONS:
            unanswerable = isinstance(question.expect(device), CannotTell)
            parsed = Question.parse(question.text)
            subject = parsed.subject
            naming = [n for n, words in vocabularies if unnamed_subject(parsed, words) is None]
            refused = not naming
            counts["unanswerable" if unanswerable else "answerable"] += 1
            if subject is None:
                counts["no subject"] += 1
            if refused and unanswerable:
                counts["caught"] += 1
            elif refused:
                counts["refused"] += 1
            if args.list or (refused and not unanswerable):
                kind = "no skill" if unanswerable else "answerable"
                said = " ".join(subject.words) if subject else "-"
                verdict = "REFUSED" if refused else f"named by {len(naming)} calls"
                print(f"{question.id:4} {kind:10} [{said}] {verdict}: {question.text}")
    print(
        f"\n{counts['answerable']} answerable questions: {counts['refused']} refused by the "
        "subject rule (no single call names their subject)\n"
        f"{counts['unanswerable']} that no skill answers: {counts['caught']} refused by it\n"
        f"{counts['no subject']} questions have no subject the grammar finds (not judged)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
