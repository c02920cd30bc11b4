"""Transcript speaker labels and whether a query names them (memory_core/text/speaker.py)."""
from __future__ import annotations

import pytest

from memory_core.text.speaker import query_names_speaker, speaker_label


@pytest.mark.parametrize(("content", "label"), [
    ("Caroline: I went to a support group yesterday.", "Caroline"),
    ("  Dr. Smith: take it twice a day", "Dr. Smith"),
    ("Mary Ann Lee: see you at eight", "Mary Ann Lee"),
    ("José: ¿vamos mañana?", "José"),
    ("小明：我上周去了杭州", "小明"),
    ("O'Brien: fine by me", "O'Brien"),
])
def test_a_transcript_line_gives_its_speaker(content: str, label: str) -> None:
    assert speaker_label(content) == label


@pytest.mark.parametrize("content", [
    "Note: buy milk",  # a heading, not a person
    "TODO: call the bank",
    "Subject: invoice",
    "Assistant: how can I help?",  # the chat roles are not people a question names
    "10:30 meeting with the dentist",
    "https://example.com/a:b",
    "I told him: no way",  # a sentence, not a label
    "john: lower-case words are not taken for names",
    "Caroline:",  # a label with nothing said
    "The quick brown fox said: hi",  # more than three words
    "R2D2: beep",  # digits
    "",
])
def test_anything_else_has_no_speaker(content: str) -> None:
    assert speaker_label(content) is None


def test_a_query_names_a_speaker_as_a_whole_word_in_any_case() -> None:
    assert query_names_speaker("What did Caroline research?", "Caroline")
    assert query_names_speaker("what is caroline's favourite book?", "Caroline")
    assert query_names_speaker("When did Dr. Smith prescribe it?", "Dr. Smith")
    assert not query_names_speaker("What did Carolines research?", "Caroline")
    assert not query_names_speaker("What did Carol research?", "Caroline")
    assert not query_names_speaker("Where is Jonathan?", "Jon")
    assert query_names_speaker("小明上周去哪了？", "小明")  # Chinese has no word boundaries
    assert not query_names_speaker("anything", "")


def test_labels_with_pattern_characters_are_matched_literally() -> None:
    label = speaker_label("A.J. (Sam): hello")
    assert label is None  # brackets are not part of a name
    assert speaker_label("A.J.: hello") == "A.J."
    assert query_names_speaker("What did A.J. say?", "A.J.")
    assert not query_names_speaker("What did AxJx say?", "A.J.")


def test_name_candidates_are_capitalised_runs_without_question_words() -> None:
    from memory_core.text.speaker import MAX_NAME_CANDIDATES, name_candidates

    assert name_candidates("What exercises has John done?") == ["John"]
    assert name_candidates("What is Caroline's favourite book?") == ["Caroline"]
    assert name_candidates("What do Jon and Gina both have in common?") == ["Jon", "Gina"]
    assert name_candidates("When did Mary Ann call?")[:3] == ["Mary Ann", "Mary", "Ann"]
    assert name_candidates("what did john do") == []  # lower case: no name to strip (the boost still applies)
    assert name_candidates("Note: Where did I go?") == []  # headings and question words are no names
    many = " and ".join(f"Name{chr(65 + i)}x" for i in range(20))
    assert len(name_candidates(f"Did {many} come?")) == MAX_NAME_CANDIDATES


def test_strip_names_removes_whole_names_and_possessives_only() -> None:
    from memory_core.text.speaker import strip_names

    assert strip_names("What exercises has John done?", {"John"}) == "What exercises has done?"
    assert strip_names("What is Caroline's favourite book?", {"Caroline"}) == "What is favourite book?"
    assert strip_names("Did Johnny meet John?", {"John"}) == "Did Johnny meet ?"
    assert strip_names("Is A.J. here?", {"A.J."}) == "Is here?"  # dots are literal, not wildcards
    assert strip_names("Is AxJx here?", {"A.J."}) == "Is AxJx here?"
    assert strip_names("Caroline?", {"Caroline"}) == "Caroline?"  # nothing would be left: keep the text
    assert strip_names("No names here", set()) == "No names here"
