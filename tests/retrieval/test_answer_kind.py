"""The kind of value a question asks for (``retrieval/answer_kind.py``)."""

from __future__ import annotations

import pytest

from mindpalace.retrieval.answer_kind import (
    AMOUNT,
    EMAIL,
    PHONE,
    asks_amount,
    asks_email,
    asks_phone,
    missing_kind,
    states_amount,
    states_email,
    states_phone,
)


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("How much are we paying Kestrel Security for the pen test?", True),
        ("How much did I spend on a designer handbag?", True),
        ("How much money did we raise last week?", True),
        ("What does a new sonde cost?", True),
        ("What is the total cost of the vet visit and the flea medication?", True),
        ("What's the rent on the shop?", True),
        ("When is the MOT due, and what will it cost?", True),
        ("How expensive was the taxi?", True),
        ("What do I have to pay if I lose my fob?", True),
        ("How much is a night in one of the pods?", True),
        ("How much is an adult ticket?", True),
        ("How much did the fundraiser bring in?", True),
        ("How much do couples put down to hold their date?", True),
        # an amount of something else, or money not asked for
        ("How much notice does the label printer need?", False),
        ("How much milk does Chidi drink?", False),
        ("Who do I pay my regatta entry fee to?", False),
        ("What's our parental leave policy?", False),
        ("How much is it?", False),
        ("How much of my plot has to be worked?", False),
    ],
)
def test_asks_amount(question: str, asks: bool) -> None:
    assert asks_amount(question) is asks


@pytest.mark.parametrize(
    ("text", "states"),
    [
        ("replacing a lost fob costs £15", True),
        ("about $1,200 with the engine", True),
        ("twenty pounds a month", True),
        ("twenty-five pounds", True),
        ("a few dollars", True),
        ("it was 40 euros", True),
        ("50p a slice", True),
        ("EUR 300 deposit", True),
        ("entry is free for juniors", True),
        ("booked for 7 to 11 December 2026, with Kenji as the contact", False),
        ("7:55 pm on 9 June, 2023", False),
        ("at 3 p.m. on Monday", False),
        ("in dollar terms, five years ago", False),
        ("Kestrel Security runs the penetration test", False),
    ],
)
def test_states_amount(text: str, states: bool) -> None:
    assert states_amount(text) is states


def test_missing_kind() -> None:
    question = "How much did we pay for the new sofa?"
    assert missing_kind(question, ["The sofa was delivered on Tuesday."]) == AMOUNT
    assert missing_kind(question, ["The sofa was delivered.", "It cost £640."]) is None
    # no hits: nothing to judge (recall answers nothing anyway)
    assert missing_kind(question, []) is None
    assert missing_kind("When was the sofa delivered?", ["on Tuesday"]) is None


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("What's the phone number of the coach company?", True),
        ("Which number should I call for the out-of-hours vet?", True),
        ("Do we have a contact number for the plumber?", True),
        ("What is the phone no. for the vet?", True),
        ("Any contact numbers for the caterer?", True),
        ("How many numbers are on the rota?", False),
        ("Who answers the phone on Mondays?", False),
        ("Which number bus do I take to reach the hospital?", False),
    ],
)
def test_asks_phone(question: str, asks: bool) -> None:
    assert asks_phone(question) is asks


@pytest.mark.parametrize(
    ("text", "states"),
    [
        ("the practice mobile, 07700 900412, goes with the vet on call", True),
        ("ring +44 (0)20 7946 0018 after 6", True),
        ("mobile 07700.900.412", True),
        ("The out-of-hours number is 07700 900412.", True),  # a sentence's end
        ("Ring 02079460018.", True),
        ("booked for 2026-11-12 at 13:56", False),
        ("on 12.11.2026 between 10.30 and 11.45", False),
        ("the sale went through at £1,200,000", False),
        ("room 4, 9 am, 29 pupils", False),
    ],
)
def test_states_phone(text: str, states: bool) -> None:
    assert states_phone(text) is states


def test_missing_phone_and_email() -> None:
    phone = "What's the phone number of the coach company?"
    assert missing_kind(phone, ["Redline Travel runs the coach on 22 April."]) == PHONE
    assert missing_kind(phone, ["Redline Travel: 0117 496 0123."]) is None
    email = "What is the caterer's email address?"
    assert asks_email(email) and not asks_email("Email the caterer about the menu")
    assert missing_kind(email, ["The caterer is Bloom & Co."]) == EMAIL
    assert missing_kind(email, ["Write to orders@bloom-catering.co.uk."]) is None
    assert states_email("a.b+c@example.org") and not states_email("me @ home")


def test_a_share_of_a_price_is_an_amount() -> None:
    assert states_amount("For surgery we take a 50 percent deposit at admission.")
    assert states_amount("members get 10% off")
    assert not states_amount("the percentage of members who row")
