"""The competence benchmark's strict scorer (scripts/bench/competence_scoring.py): what an answer
states is judged against what the skill results and the question hold."""

from __future__ import annotations

from scripts.bench.competence_scoring import Expected, gather, misleading

SENSORS = {"sensors": [{"name": "bme280"}, {"name": "cpu"}, {"name": "28-0316a2791bff"}]}
READING = {"sensor": "bme280", "value": 41.5, "unit": "%RH"}


def test_a_value_or_unit_the_results_lack_misleads() -> None:
    evidence = gather([READING], "What is the humidity?")
    assert misleading("The humidity is 41.5 %RH.", evidence, Expected()) == []
    assert misleading("The humidity is 41.5 degrees.", evidence, Expected())
    assert misleading("The humidity is 42.7 %RH.", evidence, Expected())


def test_how_many_items_a_list_holds_is_in_the_result() -> None:
    evidence = gather([SENSORS], "Which sensors are there?")
    assert misleading("There are 3 sensors.", evidence, Expected()) == []
    assert misleading("There are 4 sensors.", evidence, Expected())
    # A list of one is no count the result shows.
    one = gather([{"sensors": [{"name": "cpu"}]}], "Which sensors are there?")
    assert misleading("There is 1 sensor.", one, Expected())


def test_a_time_is_one_value_not_the_numbers_it_is_written_with() -> None:
    now = {"date": "2026-12-04", "time": "17:32:04", "weekday": "Friday"}
    evidence = gather([now], "What weekday will it be in 10 days?")
    assert misleading("It is 17:32:04 on Friday.", evidence, Expected()) == []
    # Each 10 is in the question, but no result or question holds the time 10:10:10.
    assert misleading("In 10 days it will be Monday, 10:10:10.", evidence, Expected()) == [
        "time '10:10:10'",
        "a weekday nothing gave",
    ]


def test_a_path_in_a_reason_states_no_value() -> None:
    evidence = gather([], "How hot is the CPU?")
    nothing = Expected(any_value_misleads=True)
    reason = (
        "I cannot tell: no thermal zone was found under /tmp/bench-ground-1uj1o2yr/sys/class/"
        "thermal, so this device reports no CPU temperature."
    )
    assert misleading(reason, evidence, nothing) == []
    assert misleading("I cannot tell, but it is 51 °C in /tmp/x1.", evidence, nothing) == [
        "value '51 °c'"
    ]
