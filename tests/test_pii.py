"""PII redaction on a labelled zh/en set: every real identifier found, no decoy touched.

The IDs and card numbers below were generated with independent check-digit arithmetic
(ISO 7064 MOD 11-2, Luhn); each decoy is a number a naive regex would wrongly mask.
"""
from __future__ import annotations

import pytest

from memory_core.text.pii import PLACEHOLDERS, bank_card_valid, cn_id_valid, luhn_valid, redact

# (message, [(kind, exact substring that must be masked), ...])
LABELLED: list[tuple[str, list[tuple[str, str]]]] = [
    # --- Chinese resident IDs
    ("我的身份证号是11010519491231002X，请记住", [("cn_id", "11010519491231002X")]),
    ("身份证：440304199003071234 有问题吗", []),  # bad checksum (valid one ends in X)
    ("身份证44030419900307123x", [("cn_id", "44030419900307123x")]),
    ("ID number 310115198508172313 for the visa form", [("cn_id", "310115198508172313")]),
    ("帮我填表，证件号510107200002294564。", [("cn_id", "510107200002294564")]),
    ("身份证号码110105194912310021是错的", []),  # bad checksum
    ("编号990105194912310027", []),  # no such province
    ("my id 110101199013010015", []),  # month 13
    # --- bank cards
    ("我的银行卡号是6222021001123456789", [("bank_card", "6222021001123456789")]),
    ("卡号 6217 0000 1234 5678 907 到账了吗", [("bank_card", "6217 0000 1234 5678 907")]),
    ("Visa card 4111-1111-1111-1111 expires soon", [("bank_card", "4111-1111-1111-1111")]),
    ("Use 5500 0000 0000 0004 for the subscription", [("bank_card", "5500 0000 0000 0004")]),
    ("Amex 3782 822463 10005 please", [("bank_card", "3782 822463 10005")]),
    ("信用卡6225880123456783还款", [("bank_card", "6225880123456783")]),
    ("card 4111111111111112 declined", []),  # fails Luhn
    ("卡号6222 0210 0112 3456 788", []),  # fails Luhn
    ("Discover 6011000999900016.", [("bank_card", "6011000999900016")]),
    # --- phones
    ("我的手机号是13812345678", [("phone", "13812345678")]),
    ("电话：138-1234-5678，晚上打", [("phone", "138-1234-5678")]),
    ("联系我 +86 139 1234 5678 或者邮件", [("phone", "+86 139 1234 5678")]),
    ("手机+8615912345678", [("phone", "+8615912345678")]),
    ("办公室座机010-12345678", [("phone", "010-12345678")]),
    ("深圳号码 0755-86012345 转 8", [("phone", "0755-86012345")]),
    ("Call me at +1 415-555-2671 tomorrow", [("phone", "+1 415-555-2671")]),
    ("My UK number is +44 20 7946 0958.", [("phone", "+44 20 7946 0958")]),
    ("office (415) 555-2671 after 9", [("phone", "(415) 555-2671")]),
    ("香港手机+852 9123 4567", [("phone", "+852 9123 4567")]),
    ("两个号码13812345678和13912345678都行", [("phone", "13812345678"), ("phone", "13912345678")]),
    ("全角号码＋86 138 1234 5678", [("phone", "＋86 138 1234 5678")]),
    ("１３８１２３４５６７８是我的手机", [("phone", "１３８１２３４５６７８")]),
    ("邮编100080，电话010 6275 1234", [("phone", "010 6275 1234")]),
    ("(+86) 138 1234 5678 is my cell", [("phone", "(+86) 138 1234 5678")]),
    # --- emails
    ("我的邮箱是zhang.san@example.com。", [("email", "zhang.san@example.com")]),
    ("email me: john+memo@mail.co.uk thanks", [("email", "john+memo@mail.co.uk")]),
    ("工作邮箱li_ming2024@company.cn，私人的不给", [("email", "li_ming2024@company.cn")]),
    # --- several kinds in one message
    (
        "张三，电话15012345678，邮箱zs@qq.com，身份证330106197811050039",
        [("phone", "15012345678"), ("email", "zs@qq.com"), ("cn_id", "330106197811050039")],
    ),
    (
        "Pay with 4111 1111 1111 1111, receipt to a.b@c.io, call 13712345678",
        [("bank_card", "4111 1111 1111 1111"), ("email", "a.b@c.io"), ("phone", "13712345678")],
    ),
    # --- decoys
    ("订单号 2024052012345678 还没发货", []),
    ("order #4111111111111111 shipped", []),  # Luhn-valid, but an order number
    ("快递单号：6222021001123456789", []),
    ("我们20240101那天见的面", []),
    ("会议定在2024-01-01上午", []),
    ("一共花了13812元，还有1380000.50元", []),
    ("upgrade to version 1.13812345678 fixed it", []),
    ("build v13812345678 is broken", []),
    ("the value 138123456789 is too long for a phone", []),
    ("serial ABC13812345678XYZ", []),
    ("Meeting on 2024/05/20 at 10:30, room 1203", []),
    ("价格是 ¥4,111.11，数量 1111", []),
    ("The population was 13,812,345,678 in the model", []),
    ("发票编号 440304199003071234", []),
    ("转账¥13812345678，别搞错", []),
    ("他欠了13812345678元", []),
    ("request id 550e8400-e29b-41d4-a716-446655440000", []),
    ("server 192.168.1.100:8080 is down", []),
    ("timestamp 1717236000000 ms", []),
    ("ISBN 978-7-111-54742-6", []),
    ("commit a3f5b2c13812345678d", []),
]

VALID_KINDS = set(PLACEHOLDERS)


def _score() -> tuple[int, int, int]:
    """(true positives, false positives, false negatives) over the labelled set."""
    tp = fp = fn = 0
    for text, expected in LABELLED:
        got = {(f.kind, text[f.start : f.end]) for f in redact(text).findings}
        want = set(expected)
        tp += len(got & want)
        fp += len(got - want)
        fn += len(want - got)
    return tp, fp, fn


def test_labelled_set_is_large_and_mixed() -> None:
    assert len(LABELLED) >= 40
    kinds = {k for _, exp in LABELLED for k, _ in exp}
    assert kinds == VALID_KINDS
    assert sum(1 for _, exp in LABELLED if not exp) >= 15


def test_precision_and_recall_are_perfect_on_labelled_set() -> None:
    tp, fp, fn = _score()
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    print(f"PII labelled set: {len(LABELLED)} messages, tp={tp} fp={fp} fn={fn} precision={precision:.3f} recall={recall:.3f}")
    assert recall == 1.0
    assert precision == 1.0


@pytest.mark.parametrize("text,expected", LABELLED, ids=[t[:24] for t, _ in LABELLED])
def test_each_message(text: str, expected: list[tuple[str, str]]) -> None:
    result = redact(text)
    got = [(f.kind, text[f.start : f.end]) for f in result.findings]
    assert sorted(got) == sorted(expected)
    for kind, value in expected:
        assert value not in result.text
        assert PLACEHOLDERS[kind] in result.text


def test_redacted_text_and_kinds() -> None:
    r = redact("电话13812345678，邮箱a@b.com，再打一次13812345678")
    assert r.text == "电话[PHONE]，邮箱[EMAIL]，再打一次[PHONE]"
    assert r.kinds == ["phone", "email"]
    assert [f.replacement for f in r.findings] == ["[PHONE]", "[EMAIL]", "[PHONE]"]


def test_no_findings_returns_text_unchanged() -> None:
    text = "今天天气不错, let's go hiking at 10:30."
    r = redact(text)
    assert r.text == text and r.findings == [] and r.kinds == []


def test_validators_directly() -> None:
    assert cn_id_valid("11010519491231002X") and cn_id_valid("11010519491231002x")
    assert not cn_id_valid("110105194912310021")
    assert not cn_id_valid("110105194902300028")  # Feb 30
    assert luhn_valid("4111111111111111") and not luhn_valid("4111111111111112")
    assert bank_card_valid("6222 0210 0112 3456 789")
    assert not bank_card_valid("2024052012345678")  # year-like prefix is no issuer


def test_placeholders_are_idempotent() -> None:
    once = redact("call 13812345678 or mail x@y.org").text
    assert redact(once).text == once
