"""What a question is about, and whether the evidence knows it (edge_agentd.guidance.subject).

MockModel scripts ``likelihood`` by text: a key ``(marker, text)`` scores ``text`` after any
prompt holding ``marker``, the longest scripted start of ``text`` winning (unscripted: -1000).
A word's gain is read from the question up to it, and up to the word before it.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edge_agentd import Agent, MockModel, Registry
from edge_agentd.agent.claims import unnamed_subject
from edge_agentd.agent.grounding import Grounding
from edge_agentd.agent.prompt import PLAIN
from edge_agentd.agent.protocol import ModelError, ScoringUnsupported
from edge_agentd.agent.question import MAX_PHRASE_WORDS, Question, Subject, question_subject
from edge_agentd.agent.vocabulary import is_known, known_words
from edge_agentd.guidance.followup import content_free
from edge_agentd.guidance.guidance import ANSWER_HEAD, Guidance
from edge_agentd.guidance.subject import KNOWN_GAIN, WHICH_GAIN, unknown_subject

FREE = content_free(PLAIN)


@pytest.mark.parametrize(
    ("question", "subject"),
    [
        ("What is the light level in lux?", Subject(("light",), "level")),
        ("What does the garage door sensor read?", Subject(("garage", "door"), "sensor")),
        ("What's the weather like outside today?", Subject((), "weather")),
        ("Is the front door locked?", Subject(("front",), "door")),
        ("How warm is the CPU?", Subject((), "CPU", quality="warm")),
        ("How much RAM is free right now?", Subject((), "RAM")),
        ("How many gigabytes of disk space are free?", Subject((), "gigabytes", ("disk", "space"))),
        ("What is the ID of the 1-Wire sensor?", Subject((), "ID", ("1-Wire", "sensor"))),
        ("Tell me the current humidity reading.", Subject(("humidity",), "reading")),
        ("What is the atmospheric pressure right now?", Subject(("atmospheric",), "pressure")),
        # Whose it is: like an "of" phrase, it may name the thing and need not.
        (
            "Is my Raspberry Pi's CPU running hot?",
            Subject(("CPU",), "running", owner=("Raspberry", "Pi")),
        ),
        (
            "What temperature does the DS18B20 probe read?",
            Subject((), "temperature", doer=("DS18B20", "probe")),
        ),
        (
            "What does the BME280 say the temperature is?",
            Subject((), "BME280", doer=("temperature",)),
        ),
        ("What will the date be in 30 days?", Subject((), "date")),
        # After "it" or "there" with no subject of its own, what follows is asked about.
        ("Will it rain tomorrow?", Subject((), "rain")),
        ("Is there a light sensor?", Subject(("light",), "sensor")),
        ("Is it Friday today?", Subject((), "Friday")),
        # The question's verb after the phrase is no part of it, wherever the phrase ends.
        ("What does the probe read in Fahrenheit?", Subject((), "probe")),
        ("Is the CPU hot right now?", Subject((), "CPU")),
        # Before a comparison with a number the phrase is the thing compared, whole: its last
        # word is no state ("Is the pond temperature above 25 °C?" asks of no pond).
        ("Is the pond temperature above 25 °C?", Subject(("pond",), "temperature")),
        (
            "Tell me whether the 1-minute load average is above 2.",
            Subject(("1-minute", "load"), "average"),
        ),
        ("Is the water level under half?", Subject(("water",), "level")),
        ("Is the CPU warmer than 40 °C?", Subject((), "CPU")),
        # No noun phrase to ask about: a pronoun, or an opening the grammar does not read.
        # Requests, commands, fragments, "whether" and polite forms (the grammar's other shapes).
        ("Can you tell me the CO2 level?", Subject(("CO2",), "level")),
        ("Could you check the garage temperature?", Subject(("garage",), "temperature")),
        ("Please read the DS18B20 probe.", Subject(("DS18B20",), "probe")),
        ("Would you mind telling me the humidity?", Subject((), "humidity")),
        ("I'd like to know the air pressure, please.", Subject(("air",), "pressure")),
        ("Do you know what the humidity is?", Subject((), "humidity")),
        ("Tell me whether the garage door is open", Subject(("garage",), "door")),
        ("Humidity?", Subject((), "Humidity")),
        ("CPU temp?", Subject(("CPU",), "temp")),
        ("The garage door?", Subject(("garage",), "door")),
        # "How <adjective> is it?" asks about the quality itself: "humid" ~ "humidity".
        ("How humid is it in here?", Subject((), "humid", quality="humid")),
        ("How loud is it in the room?", Subject((), "loud", quality="loud")),
        (
            "How charged is the car's battery?",
            Subject((), "battery", owner=("car",), quality="charged"),
        ),
        ("Humidity right now?", Subject((), "Humidity")),
        ("How loud is it here?", Subject((), "loud", quality="loud")),
        # Whether it is there: what it asks about follows "have".
        ("Does it have a humidity sensor?", Subject(("humidity",), "sensor")),
        ("How long is it until Christmas?", None),
        ("Compare them", None),
        ("On what day of the week does Halloween fall?", None),
        ("", None),
        ("?!", None),
    ],
)
def test_the_subject_is_the_noun_phrase_the_question_asks_about(
    question: str, subject: Subject | None
) -> None:
    assert question_subject(question) == subject


@pytest.mark.parametrize(
    ("question", "state", "predicate"),
    [
        ("Is the front door open?", "open", ("open",)),
        ("Is the car plugged in?", "in", ("plugged", "in")),
        # A yes-or-no question inside a request or after "whether" or "if" is read as one.
        ("Tell me whether the garage door is open", "open", ("open",)),
        ("Could you check if the door is locked?", "locked", ("locked",)),
        ("Can you tell me whether the heater is on, please?", "on", ("on",)),
        ("Is there mail?", None, ()),
        # A comparison with a number asks no state, in either shape.
        ("Is the soil moisture below 30 %?", None, ()),
        ("Tell me whether the 1-minute load average is above 2.", None, ()),
        ("Is the front door open at night?", "open", ("open",)),
        ("What is the humidity?", None, ()),
    ],
)
def test_a_yes_or_no_question_asks_for_its_state_in_whatever_shape(
    question: str, state: str | None, predicate: tuple[str, ...]
) -> None:
    parsed = Question.parse(question)
    assert (parsed.state, parsed.predicate) == (state, predicate)


def test_a_question_the_grammar_reads_in_another_shape_is_held_as_its_plain_form() -> None:
    # The subject rule holds a request or a fragment as it holds the plain question: "garage"
    # is no word of a front door's evidence, so each is unknown.
    door = known_words(["front_door", "Whether the front door is open or closed."], [])
    for question in (
        "Is the garage door open?",
        "Tell me whether the garage door is open",
        "Could you check the garage door?",
        "The garage door?",
    ):
        assert unnamed_subject(Question.parse(question), door) == "garage door", question
    # "How loud is it?" asks about loudness: no result's word starts as "loud" does.
    weather = known_words(["weather"], [{"humidity": 41.5, "pressure": 1009.2}])
    assert unnamed_subject(Question.parse("How loud is it in the room?"), weather) == "loud"
    assert unnamed_subject(Question.parse("How humid is it?"), weather) is None


def test_a_long_phrase_is_judged_by_its_head_and_the_words_nearest_it() -> None:
    words = [f"w{i}x" for i in range(500)]
    subject = question_subject(f"What is the {' '.join(words)} of the {' '.join(words)}?")
    assert subject is not None
    assert subject.head == "w499x"
    assert len(subject.which) == MAX_PHRASE_WORDS - 1
    assert subject.of == tuple(words[:MAX_PHRASE_WORDS])
    model = MockModel([])
    assert unknown_subject(
        model, Question.parse("What is the " + " ".join(words) + "?"), VOCABULARY, [SENSOR], FREE
    )
    # Two scores for each word judged, however long the question.
    assert len(model.scored) <= 2 * 2 * MAX_PHRASE_WORDS


def test_a_word_is_known_as_itself_its_plural_or_singular_or_a_start_four_letters_long() -> None:
    vocabulary = known_words(
        ["Load averages, memory, disk usage and uptime."],
        [{"memory": {"used_percent": 37.6}, "sensors": [{"name": "bme280", "label": "BME280"}]}],
    )
    assert {"memory", "used", "percent", "bme", "label", "sensors"} <= vocabulary
    assert is_known("memory", vocabulary)
    assert is_known("Disks", vocabulary)  # a plural
    assert is_known("sensor", vocabulary)  # a singular
    assert is_known("percentage", vocabulary)  # begun by "percent"
    assert is_known("BME280", vocabulary)  # its letters: digits name no thing of their own
    assert not is_known("RAM", vocabulary)
    assert not is_known("use", vocabulary)  # three letters: no start is taken for it
    assert not is_known("garage", vocabulary)
    assert not is_known("42", vocabulary)  # no letters: nothing to know


def gains(description: str, question: str, **gained: float) -> dict[Any, float]:
    """Scores under which each word of ``question`` named in ``gained`` is that many nats likelier
    after ``description`` than after the content-free description, the question before it
    being the same (every start of the question scripted that a word's gain is read from)."""
    ends = {w: question.index(w) + len(w) for w in gained}
    starts = [question[: question.index(w)].rstrip() for w in gained]
    scores: dict[Any, float] = {}
    for text in [*starts, *(question[:e] for e in ends.values())]:
        scores[(FREE, f" {text}")] = -float(len(text))
        won = sum(g for w, g in gained.items() if ends[w] <= len(text))
        scores[(description, f" {text}")] = -float(len(text)) + won
    return scores


SENSOR = "The skill read_sensor: Current value of one sensor.\nThis call gets: humidity"
VOCABULARY = known_words([SENSOR], [{"readings": [{"quantity": "humidity", "unit": "%RH"}]}])


def test_a_subject_no_word_of_which_the_evidence_knows_cannot_be_told() -> None:
    question = "What is the light level in lux?"
    scores = gains(SENSOR, question, light=WHICH_GAIN, level=KNOWN_GAIN - 0.5)
    assert unknown_subject(
        MockModel([], scores=scores), Question.parse(question), VOCABULARY, [SENSOR], FREE
    )
    # Likely enough after the called skill's description, a word is known though no text has it.
    scores = gains(SENSOR, question, light=WHICH_GAIN, level=KNOWN_GAIN)
    assert not unknown_subject(
        MockModel([], scores=scores), Question.parse(question), VOCABULARY, [SENSOR], FREE
    )


def test_an_unknown_head_needs_another_word_the_evidence_itself_names() -> None:
    question = "What is the CO2 level in the living room?"
    # "CO2" is likely after a sensor's description, but no text here names it.
    scores = gains(SENSOR, question, CO2=KNOWN_GAIN + 1.0, level=0.8)
    assert unknown_subject(
        MockModel([], scores=scores), Question.parse(question), VOCABULARY, [SENSOR], FREE
    )
    # "disk" is a word of the evidence: "disk space" is a thing it knows, "space" or not.
    question = "How much disk space is free?"
    vocabulary = known_words(["Disk usage of /."], [{"disk": {"free_gib": 75.9}}])
    scores = gains(SENSOR, question, space=0.1)
    assert not unknown_subject(
        MockModel([], scores=scores), Question.parse(question), vocabulary, [SENSOR], FREE
    )


def test_a_word_that_says_which_one_must_be_known_too() -> None:
    question = "What does the garage door sensor read?"
    scores = gains(SENSOR, question, garage=0.7, door=0.6)
    # "sensor" is known, but no sensor here is a garage door's.
    assert unknown_subject(
        MockModel([], scores=scores), Question.parse(question), VOCABULARY, [SENSOR], FREE
    )
    question = "What is the relative humidity?"
    scores = gains(SENSOR, question, relative=WHICH_GAIN)
    assert not unknown_subject(
        MockModel([], scores=scores), Question.parse(question), VOCABULARY, [SENSOR], FREE
    )


def test_a_known_subject_or_none_is_never_held_back_and_nothing_is_scored() -> None:
    for question in ("What is the humidity?", "Is it humid?", "How humid is it?"):
        model = MockModel([])
        assert not unknown_subject(model, Question.parse(question), VOCABULARY, [SENSOR], FREE)
        assert model.scored == []


class Unscoring(MockModel):
    def __init__(self, error: Exception) -> None:
        super().__init__([])
        self.error = error

    def likelihood(self, prompts: Any, text: str) -> list[float]:
        raise self.error


def test_a_model_that_cannot_score_holds_nothing_back() -> None:
    question = "What does the garage door sensor read?"
    for error in (ScoringUnsupported("no scoring"), ModelError("the model failed")):
        model = Unscoring(error)
        assert not unknown_subject(model, Question.parse(question), VOCABULARY, [SENSOR], FREE)


def house() -> Registry:
    registry = Registry()

    @registry.skill
    def read_sensor() -> dict[str, Any]:
        """Current value of one sensor."""
        return {"readings": [{"quantity": "humidity", "value": 41.5, "unit": "%RH"}]}

    return registry


def offered(model: MockModel, state: Any) -> list[str]:
    """The sentences the answer was chosen among: those last scored, or the answer alone when
    there was one sentence and nothing to choose."""
    options = [o for _, o in model.scored if o[0].startswith(ANSWER_HEAD) and o[0] != ANSWER_HEAD]
    if not options:
        return [state.final_answer]
    return [json.loads(option)["final_answer"] for option in options[-1]]


def test_a_question_about_what_the_evidence_does_not_know_is_answered_i_cannot_tell() -> None:
    question = "What is the light level in lux?"
    description = "The skill read_sensor"
    scores = {
        (description, f" {question}"): -5.0,  # the skill fits: it is called
        (FREE, f" {question}"): -20.0,
        ANSWER_HEAD: 0.0,
    }
    scores |= gains(description, question, light=1.0, level=1.0)
    model = MockModel([], scores=scores)
    state = Agent(model, house(), guidance=Guidance(), grounding=Grounding()).run(question)
    assert [e.type for e in state.stream.root][:2] == ["CallSkillAction", "SkillResultObservation"]
    # The true value of another thing, the answer a 270M model wrote, is not offered at all.
    assert state.final_answer == "I cannot tell: no result gives the light level."
    assert offered(model, state) == [state.final_answer]
    assert state.stream.root[-1].made_by == "engine"
    # Turned off, the guidance would offer the result's values, but the loop's own grounding
    # (every strategy's) still finds no word of the evidence naming the light level: the engine
    # offers only what the loop takes.
    model = MockModel([], scores=scores)
    state = Agent(model, house(), guidance=Guidance(know_subject=False), grounding=Grounding()).run(
        question
    )
    assert offered(model, state) == ["I cannot tell: no result gives the light level."]
    assert state.final_answer == "I cannot tell: no result gives the light level."


def house_with_a_failing_forecast() -> Registry:
    registry = house()

    @registry.skill
    def weather() -> dict[str, Any]:
        """Today's weather forecast."""
        raise RuntimeError("the forecast could not be had")

    return registry


def weather_run(weather: float, sensor: float) -> tuple[MockModel, Any]:
    """ "What is the weather like?" asked with the forecast and the sensor fitting as scored."""
    question = "What is the weather like?"
    scores = {
        ("The skill weather", f" {question}"): weather,
        ("The skill read_sensor", f" {question}"): sensor,
        (FREE, f" {question}"): -20.0,
        ANSWER_HEAD: 0.0,
    }
    model = MockModel([], scores=scores)
    state = Agent(
        model, house_with_a_failing_forecast(), guidance=Guidance(), grounding=Grounding()
    ).run(question)
    return model, state


def test_only_the_calls_made_and_their_results_vouch_for_a_word() -> None:
    model, state = weather_run(weather=-9.0, sensor=-5.0)
    assert [e.type for e in state.stream.root][:2] == ["CallSkillAction", "SkillResultObservation"]
    # The weather skill's description says "weather", but the result is the sensor's.
    assert offered(model, state) == ["I cannot tell: no result gives the weather."]


def test_a_call_that_failed_vouches_for_nothing() -> None:
    model, state = weather_run(weather=-5.0, sensor=-6.0)  # the forecast first, and it fails
    assert [e.type for e in state.stream.root][:4] == [
        "CallSkillAction",
        "ToolErrorObservation",
        "CallSkillAction",
        "SkillResultObservation",
    ]
    # No value is offered: the forecast's own words say why it cannot tell.
    assert offered(model, state) == ["I cannot tell: the forecast could not be had."]


def test_a_question_in_two_parts_is_held_back_only_when_both_ask_the_unknown() -> None:
    registry = house()
    question = "What is the light level and what is the humidity?"
    scores = {
        ("The skill read_sensor", " What is the light level"): -5.0,
        (FREE, " What is the light level"): -20.0,
        ANSWER_HEAD: 0.0,
    }
    model = MockModel([], scores=scores)
    state = Agent(model, registry, guidance=Guidance(), grounding=Grounding()).run(question)
    # One part is answered by the result: the answer is not held to "I cannot tell", and, the
    # other part unknown, it may still say it cannot tell.
    assert "The humidity is 41.5 %RH." in offered(model, state)
    assert "I cannot tell: no result gives the light level." in offered(model, state)


def test_a_question_with_no_subject_may_still_say_it_cannot_tell() -> None:
    question = "Compare them"
    scores = {("The skill read_sensor", f" {question}"): -5.0, (FREE, f" {question}"): -20.0}
    model = MockModel([], scores=scores)
    state = Agent(model, house(), guidance=Guidance(), grounding=Grounding()).run(question)
    assert "I cannot tell: no result says what was asked." in offered(model, state)
    assert "The humidity is 41.5 %RH." in offered(model, state)


def test_a_question_about_what_the_evidence_knows_states_its_value() -> None:
    question = "What is the humidity?"
    scores = {("The skill read_sensor", f" {question}"): -5.0, (FREE, f" {question}"): -20.0}
    model = MockModel([], scores=scores)
    state = Agent(model, house(), guidance=Guidance(), grounding=Grounding()).run(question)
    assert state.final_answer == "The humidity is 41.5 %RH."
    # Whether it cannot tell was judged, by its subject: the answer states the value. The 270M
    # had copied the worked example's "I cannot tell: ..." for questions its result answered.
    assert not any("cannot tell" in answer for answer in offered(model, state))
    model = MockModel([], scores=scores)
    state = Agent(model, house(), guidance=Guidance(know_subject=False), grounding=Grounding()).run(
        question
    )
    assert "I cannot tell: no result gives the humidity." in offered(model, state)


@given(st.text(max_size=200))
def test_any_text_has_a_subject_of_its_own_words_or_none(text: str) -> None:
    subject = question_subject(text)
    if subject is not None:
        assert subject.head
        for word in subject.words:
            assert word in text


@given(st.text(max_size=120), st.lists(st.text(max_size=40), max_size=4))
def test_any_question_is_judged_by_which_of_its_subject_words_the_texts_name(
    question: str, texts: list[str]
) -> None:
    model = MockModel([], scores={})  # unscripted: no word gains anything
    vocabulary = known_words(texts, [{"a": texts}])
    subject = question_subject(question)
    verdict = unknown_subject(model, Question.parse(question), vocabulary, [SENSOR], FREE)
    if subject is None:
        assert verdict is None
        return

    def lettered(word: str) -> bool:
        return re.search(r"[^\W\d_]", word) is not None

    def named(word: str) -> bool:
        return lettered(word) and is_known(word, vocabulary)

    if any(lettered(w) and not named(w) for w in subject.which):
        assert verdict is True  # a which-word nothing names, and the model gains nothing on it
    elif named(subject.head) or not lettered(subject.head):
        assert verdict is False
    else:
        assert verdict is (not any(named(w) for w in (*subject.which, *subject.of)))


@pytest.mark.parametrize(
    ("question", "subject"),
    [
        # A place after "in", opened by a determiner, says which one too.
        ("What is the CO2 level in the bedroom?", Subject(("CO2",), "level", (), ("bedroom",))),
        ("Is the light in the hallway on?", Subject((), "light", (), ("hallway",))),
        (
            "How dry is the soil of the tomato plant?",
            Subject((), "soil", ("tomato", "plant"), quality="dry"),
        ),
        # A bare word after "in" is a unit or a manner; "the room" is where the asker is.
        ("What is the temperature in Fahrenheit?", Subject((), "temperature")),
        ("What's the humidity in the room?", Subject((), "humidity")),
        ("What will the date be in 30 days?", Subject((), "date")),
    ],
)
def test_a_place_after_the_subject_is_part_of_it(question: str, subject: Subject) -> None:
    assert question_subject(question) == subject


def test_a_place_or_an_owner_the_evidence_does_not_name_makes_the_subject_unknown() -> None:
    co2 = known_words(
        ["living_room_co2", "The CO2 level in the living room, in ppm."],
        [{"room": "living room", "co2": {"value": 870, "unit": "ppm"}}],
    )
    assert (
        unnamed_subject(Question.parse("What is the CO2 level in the bedroom?"), co2)
        == "CO2 level bedroom"
    )
    assert unnamed_subject(Question.parse("What is the CO2 level in the living room?"), co2) is None
    assert unnamed_subject(Question.parse("What is the CO2 level in the room?"), co2) is None
    basil = known_words(
        ["basil_soil_moisture", "Soil moisture of the basil plant's pot, in percent."],
        [{"plant": "basil", "soil_moisture": {"value": 23.0, "unit": "%"}}],
    )
    assert (
        unnamed_subject(Question.parse("How dry is the soil of the tomato plant?"), basil)
        == "soil tomato"
    )
    assert unnamed_subject(Question.parse("How dry is the soil of the basil plant?"), basil) is None
    # A kind's name with a digit in it is spelt otherwise by results ("w1"): it does not decide.
    probes = known_words(
        ["list_sensors"], [{"sensors": [{"name": "28-0316a2791bff", "kind": "w1"}]}]
    )
    assert unnamed_subject(Question.parse("What is the name of the 1-Wire sensor?"), probes) is None


@pytest.mark.parametrize(
    ("question", "doer"),
    [
        ("How much power are the solar panels producing?", ("solar", "panels")),
        ("i'd like to know how much power the solar panels are producing.", ("solar", "panels")),
        ("What power does the heat pump draw?", ("heat", "pump")),
        # No determiner opens a verb's own phrase ("is left"), and the device names no thing.
        ("How much water is left in the tank?", ()),
        ("How much memory is the machine using?", ()),
        ("What time is it?", ()),
        ("Does the greenhouse have a CO2 sensor?", ()),
    ],
)
def test_what_the_questions_verb_is_of_says_which_one(question: str, doer: tuple[str, ...]) -> None:
    subject = question_subject(question)
    assert subject is not None and subject.doer == doer


def test_a_doer_the_evidence_does_not_name_makes_the_subject_unknown() -> None:
    meter = known_words(
        ["grid_meter", "The house's power draw from the grid right now."],
        [{"power": {"value": 1840, "unit": "W"}}],
    )
    solar = Question.parse("How much power are the solar panels producing?")
    assert unnamed_subject(solar, meter) == "solar panels power"
    assert unnamed_subject(Question.parse("How much power is the house drawing?"), meter) is None
    assert unnamed_subject(Question.parse("How much power is the machine drawing?"), meter) is None


@pytest.mark.parametrize(
    ("question", "subject"),
    [
        ("When was the kitchen window opened?", Subject(("kitchen",), "window")),
        ("Since when has the garage door been shut?", Subject(("garage",), "door")),
        ("tell me since when the garage door has been shut", Subject(("garage",), "door")),
        ("When did the dishwasher start?", Subject((), "dishwasher")),
        ("When is high tide?", Subject(("high",), "tide")),
    ],
)
def test_a_question_asking_when_asks_about_the_thing_after_its_auxiliary(
    question: str, subject: Subject
) -> None:
    assert question_subject(question) == subject


def test_when_alone_names_nothing() -> None:
    assert question_subject("When?") is None
    assert question_subject("Since when?") is None
