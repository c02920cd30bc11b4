"""Two ways plain English lost the current truth (found on probe set ``c-en``, tenth session).

- **A dropped "I" made a statement a question**: "had my follow-up with Dr Hale, she bumped the
  sertraline up to 100mg", "had a great time at the beach", "was at the gym till 9" open with an
  auxiliary, as an inverted question does, so nothing of them was stored. Without a question mark,
  "had" / "was" / "were" not followed by a subject is a statement (``intent._EN_SUBJECT_DROPPED``);
  "was my flight delayed", "had you heard", "were they home" still ask.
- **An amount that moved was no change**: "rent goes up to $1,600 starting next month" left "rent
  on my place is $1,450 a month" current: "goes up" / "went down" / "doubled" / "cut to" announce a
  change, rent and pay are single-valued topics, and "1,450" is read as 1450, not 1.45. A third
  party's price ("Vodafone raised the price to £25") still replaces no plan.

Through the chat service on SQLite and PostgreSQL; the rules alone beside it.
"""
from __future__ import annotations

import pytest

from memory_core.llm.offline.slots import supersedes_text
from memory_core.text.facts import same_values, signature
from memory_core.text.intent import is_question, statement_part
from tests.test_truth_over_time import START, User
from tests.conftest import backend_engine_fixture


engine = backend_engine_fixture("dropped-subject", START)


@pytest.mark.parametrize("text, asks", [
    ("had my follow-up with Dr Hale, she said my iron is finally normal", False),
    ("had a great time at the beach", False), ("had lunch with Sam at the new ramen place", False),
    ("was at the gym till 9, legs are dead", False), ("were up all night with the baby", False),
    ("was my flight delayed", True), ("had you heard about the strike", True), ("were they home", True),
    ("was the pharmacy open on sunday", True), ("had a great time?", True), ("does the pharmacy open on Sundays", True),
    # an auxiliary before a preposition, a participle or "so" has no subject to invert
    ("I smoke about a pack a day, have for years", False), ("have been vegan since 2019", False),
    ("has been a rough week at work", False), ("did so twice last month", False),
    ("have you been vegan long", True), ("is drop off before 8:30", True), ("have any of you tried it", True),
    # found in review: a question typed without "?" whose subject opens with too / about / for / still
    ("Is too much protein bad for your kidneys", True), ("Is about 6 hours of sleep enough", True),
    ("Have ever been to Iceland", True), ("Is still open on sundays the pharmacy near me", True),
    ("Do for loops work the same in python 3", True), ("Is at 3pm ok for the meeting", True),
])
def test_a_dropped_i_is_no_question(text: str, asks: bool) -> None:
    assert is_question(text) is asks
    assert (statement_part(text) == "") is asks


def test_a_statement_with_its_i_dropped_is_remembered(engine) -> None:  # type: ignore[no-untyped-def]
    user = User(engine)
    kept = user.says("had my follow-up with Dr Hale, she said my iron is finally normal")
    assert kept.created and "my iron is finally normal" in " ".join(user.active())
    assert not user.says("was my flight delayed", days=2).created


@pytest.mark.parametrize("old, new", [
    ("rent on my place is $1,450 a month, utilities separate",
     "landlord just emailed - rent goes up to $1,600 starting next month"),
    ("my salary is 42k", "pay went up to 46k after the review!"),
    ("我房租一个月3800", "房租涨到4200了 心痛"),
])
def test_an_amount_that_moved_replaces_the_old_one(engine, old: str, new: str) -> None:  # type: ignore[no-untyped-def]
    assert supersedes_text(new, old)
    user = User(engine)
    user.says(old)
    assert user.says(new, days=30).replaced_contents == [old]


@pytest.mark.parametrize("old, new", [
    ("I'm on giffgaff", "Vodafone raised the price to £25"), ("I'm on giffgaff", "Vodafone bumped the price to £25"),
    ("I'm on giffgaff", "EE prices went up again, glad I left"),
    ("rent on my place is $1,450 a month", "my sister's rent went up to $2,000, London is mad"),
])
def test_someone_elses_amount_replaces_nothing(old: str, new: str) -> None:
    assert not supersedes_text(new, old)


def test_a_thousands_comma_is_no_decimal() -> None:
    assert signature("rent is $1,450 a month").numbers == frozenset({"1450"})
    assert signature("3,5 kg").numbers == frozenset({"3.5"})
    assert same_values("rent 1450 a month", "rent 1,450 a month")


@pytest.mark.parametrize("newer, older", [
    # two notes about a named person (MADial's form): episodes of their life, neither replaces the other
    ("Bart participated in a hiking activity and felt very anxious because he did not keep up with his teacher. "
     "Eventually, he managed to find his teacher by asking the staff for directions.",
     "Bart’s pet dog, an Alaskan, had a fever, making Bart very anxious. Eventually, he found a veterinarian "
     "who cured it."),
    ("Bart received a bouquet at his birthday party and felt very happy.",
     "Bart received many gifts from his friends at his birthday party and felt very happy."),
])
def test_notes_about_a_named_person_replace_nothing(newer: str, older: str) -> None:
    """Once "had a fever" stopped reading as a question, this pair met the polarity-flip rule; a note
    that opens with a name and a past-tense verb or a possessive is about that person's life."""
    assert not supersedes_text(newer, older)


@pytest.mark.parametrize("old, new, query, value", [
    # a decimal is one value: 6.8 -> 5.8 is a slip of one digit (the side clause "not diabetes" flips no fact)
    ("got my bloodwork back, A1C is 6.8", "sorry typo yesterday, the A1C was 5.8 - doc says prediabetic range, not diabetes",
     "what was my last A1C result", "5.8"),
    # a run of capitals is a value: KLM -> KLN
    ("my license plate is KLM 4R2 if the parking app asks", "i mean KLN 4R2, the permit got rejected because of my typo",
     "what's my plate number?", "KLN"),
])
def test_a_slip_in_a_decimal_or_a_code_of_capitals_is_corrected(engine, old: str, new: str, query: str,  # type: ignore[no-untyped-def]
                                                                value: str) -> None:
    assert supersedes_text(new, old)
    user = User(engine)
    user.says(old)
    assert user.says(new, days=1).replaced_contents == [old]
    assert value in user.top(query)


def test_capitals_alone_are_no_slip_without_a_correction() -> None:
    assert not supersedes_text("the NHL season starts tonight", "I watch the NHS documentary every week")


@pytest.mark.parametrize("old, new, ends", [
    ("we're not planning to have kids, we're happy as we are with the dogs",
     "ok so... huge news. I'm pregnant!! due in November. we're still in shock, it was NOT planned", True),
    # a long story that only mentions the thing ends nothing
    ("we're not planning to have kids, we're happy as we are with the dogs",
     "went to my cousin's for the weekend. her kids are wild. they ran around all day. we played cards. "
     "got home late and slept till noon", False),
])
def test_a_long_message_may_end_a_state_it_says_ended(old: str, new: str, ends: bool) -> None:
    """From d-en (se-negation-006): a story told in several sentences was never compared with the
    short statement it overturns; it now may end the state (``states.ends_a_state``), and only that."""
    assert supersedes_text(new, old) is ends


@pytest.mark.parametrize("text, negated", [
    ("saving this here: NHS no. 943 476 5919", False), ("room no 12 on the second floor", False),
    ("no pets here, the landlord says no", True), ("No. I do not eat pork", True),
])
def test_no_before_a_number_is_the_number(text: str, negated: bool) -> None:
    """From d-en (se-repeat-007): "NHS no. 943 476 5919" read as a negation, so the number said
    again was a new memory beside "my NHS number is 943 476 5919"."""
    from memory_core.text.facts import negations

    assert (negations(text) > 0) is negated


def test_a_number_saved_again_folds(engine) -> None:  # type: ignore[no-untyped-def]
    user = User(engine)
    user.says("my NHS number is 943 476 5919")
    user.says("saving this here: NHS no. 943 476 5919", days=10)
    assert sum("5919" in m for m in user.active()) == 1
