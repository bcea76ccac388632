"""A key belongs to its request: a ``run`` whose key a kept run holds with another query gets
``key_conflict`` (naming that run), never the other run's answer; a cancelled keyed run lets its
key go. Through a real daemon in this process, and on the journal alone across a restart."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zmq
from daemon_harness import Peer, run_request
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from journal_harness import (
    COUNTED,
    HANG,
    HANGED,
    SCRIPT,
    ask,
    daemon,
    journal_at,
    payload,
    record,
    result,
)

from edge_agentd.protocol.wire import ErrorReply
from edge_agentd.service.journal.keys import Keys


def test_a_key_held_by_another_question_is_refused_and_names_its_run(tmp_path: Path) -> None:
    with daemon(tmp_path, SCRIPT) as (server, _, skills, peer):
        first = ask(peer, run_request("how warm?", id="first", key="K1"))
        assert first["answer"] == COUNTED
        other = ask(peer, run_request("What is the load average?", id="second", key="K1"))
        ErrorReply.model_validate(other)
        assert (other["kind"], other["code"], other["id"]) == ("error", "key_conflict", "second")
        assert "first" in other["message"]  # the run that holds the key
        assert COUNTED not in other["message"]  # never the other run's answer
        assert len(other["message"]) <= 300
        assert skills.calls == 1
        # The same question with the key still gets the first run's result, as before.
        again = ask(peer, run_request("how warm?", id="third", key="K1"))
        assert (again["kind"], again["run_id"], again["answer"]) == ("result", "first", COUNTED)
        assert skills.calls == 1
        counters = server.status()["journal"]["counters"]
        assert (counters["key_conflicts"], counters["deduplicated"]) == (1, 1)


def test_a_run_id_used_again_lets_go_of_the_key_its_old_run_held(tmp_path: Path) -> None:
    # A client may send the same request id again once its run is over (a script numbering its
    # requests from 1 on each start). The new run's row replaces the old one, and with it the
    # only record of the old key: that key is free again, never a way to the new run's answer.
    with daemon(tmp_path, [*SCRIPT, *SCRIPT, *SCRIPT]) as (server, _, skills, peer):
        first = ask(peer, run_request("how warm?", id="1", key="K1"))
        assert (first["kind"], first["run_id"]) == ("result", "1")
        second = ask(peer, run_request("What is the load average?", id="1", key="K2"))
        assert (second["kind"], second["run_id"]) == ("result", "1")
        assert second["state"]["query"] == "What is the load average?"
        again = ask(peer, run_request("how warm?", id="2", key="K1"))
        # Run anew: not the load average's answer under the id its key once named.
        assert (again["kind"], again["run_id"]) == ("result", "2"), again
        assert again["state"]["query"] == "how warm?"
        assert skills.calls == 3
        # A run id used again without a key lets go of its old key too.
        unkeyed = ask(peer, run_request("how cold?", id="2"))
        assert (unkeyed["kind"], unkeyed["run_id"]) == ("result", "2")
        assert server.journal.run_for_key("K1") is None
        assert server.journal.run_for_key("K2") == "1"


def test_a_key_held_by_a_run_still_going_is_refused_to_another_question(
    tmp_path: Path,
) -> None:
    with daemon(tmp_path, HANG) as (_, _, skills, peer):
        peer.send(run_request("how warm?", id="first", key="K1"))
        assert skills.entered.wait(10)
        other = ask(peer, run_request("What is the load average?", id="second", key="K1"))
        assert (other["kind"], other["code"]) == ("error", "key_conflict")
        assert "first" in other["message"]
        skills.release.set()
        mine = peer.recv(10)
        assert (mine["id"], mine["answer"]) == ("first", HANGED)
        assert result(peer, "first")["answer"] == HANGED
        assert skills.calls == 1


def test_a_cancelled_keyed_run_lets_its_key_go(tmp_path: Path) -> None:
    with daemon(tmp_path, [*HANG, *HANG]) as (_, _, skills, peer):
        peer.send(run_request("how warm?", id="first", key="K1"))
        assert skills.entered.wait(10)
        cancelled = ask(peer, {"v": 1, "id": "stop", "op": "cancel", "target": "first"})
        assert cancelled["cancelled"] is True
        skills.release.set()
        ended = peer.recv(10)
        assert (ended["id"], ended["outcome"]) == ("first", "interrupted")
        again = ask(peer, run_request("how warm?", id="second", key="K1"))
        assert (again["kind"], again["run_id"]) == ("result", "second")  # run, not `first`'s
        assert again["outcome"] == "answered"
        assert skills.calls == 2


def test_a_cancelled_keyed_run_still_lets_its_key_go_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    with journal_at(path) as journal:
        journal.queued("cancelled", source="zmq", query="how warm?", key="K1")
        journal.started("cancelled")
        journal.finished("cancelled", payload("cancelled"), outcome="interrupted", answer=None)
        assert journal.run_for_key("K1") is None
        record(journal, "kept", key="K2")
        assert journal.flush()
    with journal_at(path) as journal:
        assert journal.run_for_key("K1") is None
        assert journal.run_for_key("K2") == "kept"


def test_a_key_is_held_for_its_query_and_workflow_across_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    with journal_at(path) as journal:
        journal.queued("r1", source="zmq", query="how warm?", key="K1", workflow="kitchen")
        journal.finished("r1", payload("r1"), outcome="answered", answer="21 C")
        assert journal.flush()
    with journal_at(path) as journal:
        holder = journal.key_holder("K1")
        assert holder is not None and holder.run_id == "r1"
        assert holder.asks("how warm?", "kitchen")
        assert not holder.asks("how warm?", None)
        assert not holder.asks("how warm?", "garden")
        assert not holder.asks("How warm?", "kitchen")
        assert journal.key_holder("K2") is None


def test_a_peer_on_another_connection_gets_the_conflict_too(
    tmp_path: Path, context: zmq.Context[Any]
) -> None:
    with daemon(tmp_path, SCRIPT) as (_, endpoint, _, peer):
        ask(peer, run_request("how warm?", id="first", key="K1"))
        other = Peer(context, endpoint)
        try:
            reply = ask(other, run_request("how cold?", id="theirs", key="K1"))
        finally:
            other.close()
        assert (reply["kind"], reply["code"]) == ("error", "key_conflict")


def test_the_conflict_names_a_holder_with_an_unprintable_id_escaped(tmp_path: Path) -> None:
    with daemon(tmp_path, SCRIPT) as (_, _, _, peer):
        ask(peer, run_request("how warm?", id="\x1b]0;owned\x07", key="K1"))
        reply = ask(peer, run_request("how cold?", id="mine", key="K1"))
        assert (reply["kind"], reply["code"]) == ("error", "key_conflict")
        assert reply["message"].isprintable()
        assert "\\x1b]0;owned\\x07" in reply["message"]


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Peer]:
    with daemon(tmp_path_factory.mktemp("keyed"), SCRIPT) as (_, _, _, peer):
        yield peer


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    asks=st.lists(
        st.tuples(st.sampled_from("abc"), st.sampled_from(["how warm?", "how cold?", "load?"])),
        min_size=1,
        max_size=8,
    )
)
def test_a_keyed_run_answers_its_own_question_or_says_key_conflict(
    keyed: Peer, asks: list[tuple[str, str]]
) -> None:
    """Whatever the order of keys and queries, a reply is this query's or ``key_conflict``."""
    scope = uuid.uuid4().hex  # each example's keys are its own
    holders: dict[str, tuple[str, str]] = {}
    for number, (key, query) in enumerate(asks):
        request_id = f"{scope}-{number}"
        reply = ask(keyed, run_request(query, id=request_id, key=f"{scope}-{key}"))
        holder = holders.get(key)
        if holder is None:
            holders[key] = (request_id, query)
            assert (reply["kind"], reply["run_id"]) == ("result", request_id), reply
        elif holder[1] == query:
            assert (reply["kind"], reply["run_id"]) == ("result", holder[0]), reply
        else:
            assert (reply["kind"], reply["code"]) == ("error", "key_conflict"), reply
            assert holder[0] in reply["message"]
        if reply["kind"] == "result":
            assert reply["state"]["query"] == query  # never another question's answer


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["hold", "release", "release_run"]),
            st.sampled_from(["K1", "K2", "K3"]),
            st.sampled_from(["r1", "r2", "r3"]),
        ),
        max_size=30,
    )
)
def test_each_run_id_holds_at_most_one_key_whatever_the_order(
    steps: list[tuple[str, str, str]],
) -> None:
    """The key map against a plain model of it: a run id used again holds only its new key (or
    none), and a key is let go only by the run that holds it."""
    keys = Keys()
    model: dict[str, str] = {}  # key -> run id
    for op, key, run_id in steps:
        if op == "hold":
            keys.hold(key, run_id, "how warm?", None)
            model = {k: r for k, r in model.items() if r != run_id}
            model[key] = run_id
        elif op == "release":
            keys.release(key, run_id)
            if model.get(key) == run_id:
                del model[key]
        else:
            keys.release_run(run_id)
            model = {k: r for k, r in model.items() if r != run_id}
        held = {k: h.run_id for k in ("K1", "K2", "K3") if (h := keys.get(k)) is not None}
        assert held == model
        assert len(keys) == len(model) <= len(set(model.values()))
