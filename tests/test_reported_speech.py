"""What someone is said to have said is about whom their words name (``subject._reported_subject``).

"房东说下个月房租涨到4200" was read as a fact about the landlord, so the user's rent of 3800 stayed
current, while the English "landlord just emailed - rent goes up to $1,600" replaced it. Reported
words are now read for their own subject: "医生说我有高血压" is the user's, "医生说我爸要做手术" the
father's, "我妈说她房租涨了" the mother's. Said with no one named, they are the user's when the
speaker is the other side of one of the user's arrangements (landlord, doctor, boss, HR, bank),
and stay the speaker's when a relative or friend passes on news ("我妈说下个月房租涨到3000": a
fact about a relative never replaces one about the user).

Someone introduced by where they work or live is someone else too ("Dave from accounting just
bought a Tesla", "财务部的小王刚提了车"): read as the user's, such a line outranked "I drive a Mazda
3" for "what car do I drive".

Through the chat service on SQLite and PostgreSQL, in Chinese and English; the rules alone beside it.
"""
from __future__ import annotations

import pytest

from memory_core.llm.offline.slots import supersedes_text
from memory_core.text.subject import about_someone_else, subject_of
from tests.conftest import backend_engine_fixture
from tests.test_truth_over_time import START, User, assert_kept, assert_replaced

engine = backend_engine_fixture("reported-speech", START)


@pytest.mark.parametrize("text, subject", [
    ("房东说下个月房租涨到4200", "self"), ("房东刚通知 房租涨了 以后每月4200", "self"),
    ("医生说我有高血压", "self"), ("HR说下个月起我的工资涨到一万五", "self"),
    ("my landlord told me the rent is going up to 1600", "self"), ("my doctor said my cholesterol is 5.2 now", "self"),
    ("医生说我爸要做手术", "rel:爸爸"), ("我妈说她房租涨到3000了", "other"), ("我妈说下个月房租涨到3000", "rel:妈妈"),
    ("my sister said she got a job at Pfizer", "other"), ("my sister said the rent is going up", "rel:sister"),
    ("the forecast said rain all week", "self"), ("Caroline: my boss said I am promoted", "caroline/rel:boss"),
])
def test_reported_words_are_about_whom_they_name(text: str, subject: str) -> None:
    assert subject_of(text) == subject


def test_a_landlords_notice_is_no_fact_about_the_landlord() -> None:
    assert not about_someone_else("房东说下个月房租涨到4200")
    assert about_someone_else("我妈说下个月房租涨到3000")


@pytest.mark.parametrize("newer, older, replaces", [
    ("房东说下个月房租涨到4200", "我房租一个月3800", True),
    ("房东刚通知 房租涨了 以后每月4200", "我房租一个月3800", True),
    ("my landlord told me the rent is going up to 1600", "my rent is 1450 a month", True),
    # someone else's news replaces nothing of the user's
    ("我妈说她房租涨到3000了", "我房租一个月3800", False), ("我妈说下个月房租涨到3000", "我房租一个月3800", False),
    ("my sister said her rent is going up to 2000", "my rent is 1450 a month", False),
    ("my sister said the rent is going up to 2000", "my rent is 1450 a month", False),
    ("医生说我爸血压高", "我血压正常", False),
    # found in review: another flat, people in general, a time to come
    ("My landlord said the flat upstairs rents for 2000", "my rent is 1500 a month", False),
    ("房东说楼上那家的房租是5000", "我房租每月3800", False),
    ("My doctor said normal blood pressure is under 120", "my blood pressure is 140", False),
    ("医生说一般人的血压是120", "我血压140", False), ("医生说等血压稳定了可以停药", "我每天吃一片降压药", False),
    ("My boss said the team's budget is now 50k", "my budget is 30k", False),
    ("健身房的小刘教练说我体脂降到20%了", "我体脂25%", True),  # someone called by surname, reporting the user's
    # what HR says of another group's pay is theirs; of the user's, the user's
    ("HR said the new starting salary for juniors is 60k", "my salary is 50k", False),
    ("HR说今年应届生起薪一万八", "我月薪一万五", False),
    ("HR said my salary goes up to 60k next month", "my salary is 50k", True),
    ("HR说我的工资下个月涨到一万八", "我月薪一万五", True),
])
def test_reported_words_replace_only_the_users_own_fact(newer: str, older: str, replaces: bool) -> None:
    assert supersedes_text(newer, older) is replaces


@pytest.mark.parametrize("old, new, query, value, stale", [
    ("我房租一个月3800 押一付三", "房东说下个月房租涨到4200 真离谱", "我现在房租多少", "4200", "3800"),
    ("my rent is 1450 a month, bills included", "my landlord told me the rent is going up to 1600 from March",
     "how much is my rent now?", "1600", "1450"),
])
def test_the_landlords_notice_moves_the_users_rent(engine, old: str, new: str, query: str,  # type: ignore[no-untyped-def]
                                                  value: str, stale: str) -> None:
    assert_replaced(User(engine), old, new, 40, query, value, stale)


@pytest.mark.parametrize("old, news, query, value", [
    ("我房租一个月3800 押一付三", "我妈说下个月房租涨到3000 她那边也不便宜", "我现在房租多少", "3800"),
    ("my rent is 1450 a month, bills included", "my sister said her rent is going up to 2000, London is mad",
     "how much is my rent now?", "1450"),
])
def test_a_relatives_news_leaves_the_users_fact_current(engine, old: str, news: str, query: str,  # type: ignore[no-untyped-def]
                                                        value: str) -> None:
    assert_kept(User(engine), old, news, 40, query, value)


@pytest.mark.parametrize("text, someone_else", [
    ("Dave from accounting just bought a Tesla Model Y", True), ("Sam next door adopted a puppy", True),
    ("公司的Dave买了新车", True), ("Priya on my team is vegan", True), ("财务部的小王刚提了辆特斯拉", True),
    ("隔壁的老李又在装修", True), ("单位的老房子分给我了", False),
    ("Dave from accounting gave me a lift home", False), ("I met Dave from accounting", False),
    ("Paris at night is magic", False), ("Bart与家人享用了美味的早餐", False),
    # found in review: where the user is, or the user with someone, is no one else
    ("Im at work till 6 today", False), ("Working from the office on Tuesdays now", False),
    ("Stuck at work again, no gym today", False), ("Sam from work and I are training for a marathon", False),
    ("Living upstairs from a drummer is hell", False), ("我们公司的小程序上线了", False), ("单位的小食堂很难吃", False),
])
def test_someone_introduced_by_where_they_work_is_someone_else(text: str, someone_else: bool) -> None:
    assert about_someone_else(text) is someone_else


@pytest.mark.parametrize("mine, theirs, query, value", [
    ("I drive a Mazda 3", "Dave from accounting just bought a Tesla Model Y and won't shut up about it",
     "what car do I drive, need it for the insurance form", "Mazda"),
    ("我开的是比亚迪海豹", "财务部的小王刚提了辆特斯拉 天天在群里晒", "我开的什么车来着 保险要续了", "海豹"),
])
def test_a_colleagues_new_car_does_not_answer_for_the_users(engine, mine: str, theirs: str, query: str,  # type: ignore[no-untyped-def]
                                                           value: str) -> None:
    assert_kept(User(engine), mine, theirs, 30, query, value)


@pytest.mark.parametrize("mine, news, query, value", [
    ("my salary is 50k, been the same for two years", "HR said the new starting salary for juniors is 60k, awkward",
     "what's my salary?", "50k"),
    ("我月薪一万五 两年没涨了", "HR说今年应届生起薪一万八 心态崩了", "我工资多少", "一万五"),
])
def test_what_hr_says_of_another_group_leaves_the_users_pay(engine, mine: str, news: str, query: str,  # type: ignore[no-untyped-def]
                                                          value: str) -> None:
    assert_kept(User(engine), mine, news, 20, query, value)
