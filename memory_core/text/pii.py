"""Find and mask personal identifiers before text is stored, embedded or indexed.

Kinds: ``cn_id`` (PRC resident ID), ``bank_card``, ``phone``, ``email``. Every candidate is
validated, not just pattern-matched: IDs need the ISO 7064 MOD 11-2 check digit, a real
province code and a plausible birth date; cards need the Luhn check and a real issuer prefix.
That is what keeps order numbers, dates, amounts and version strings intact.

Placeholders are language-neutral (``[PHONE]``, ``[EMAIL]``, ``[ID_NUMBER]``, ``[BANK_CARD]``)
so the embedding model and the keyword index see the same token in Chinese and English text.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import Callable

from stdnum import luhn
from stdnum.cn import ric
from stdnum.exceptions import ValidationError as _NumberError

PLACEHOLDERS: dict[str, str] = {
    "cn_id": "[ID_NUMBER]",
    "bank_card": "[BANK_CARD]",
    "phone": "[PHONE]",
    "email": "[EMAIL]",
}

# A placeholder as stored: plain ("[PHONE]": redacted only, or written before tags) or tagged
# with a keyed hash of its value ("[PHONE#3f2a9c]", memory_core/pii_vault.py).
_TAG = r"(?:#[0-9a-f]{6})?"  # non-capturing: the pattern is also embedded in others
PLACEHOLDER_RE = re.compile(r"\[(" + "|".join(p[1:-1] for p in PLACEHOLDERS.values()) + r")" + _TAG + r"\]")


def placeholder_pattern(kind: str) -> str:
    """The regex source of one kind's placeholder, plain or tagged (``[PHONE]``, ``[PHONE#3f2a9c]``)."""
    return re.escape(PLACEHOLDERS[kind][:-1]) + _TAG + r"\]"


def masked(text: str) -> str:
    """``text`` with every tag dropped (``[PHONE#3f2a9c]`` -> ``[PHONE]``): what is embedded and
    keyword-indexed, so retrieval reads a memory as it did before tags existed."""
    return PLACEHOLDER_RE.sub(lambda m: f"[{m.group(1)}]", text)


@dataclass(frozen=True)
class PiiFinding:
    kind: str  # one of PLACEHOLDERS' keys
    start: int  # span in the *original* text
    end: int
    replacement: str


@dataclass(frozen=True)
class Redaction:
    text: str  # the redacted text
    findings: list[PiiFinding] = field(default_factory=list)

    @property
    def kinds(self) -> list[str]:
        """Distinct kinds found, in order of first appearance."""
        return list(dict.fromkeys(f.kind for f in self.findings))


# A number must not continue a Latin word or another number: no letter/digit/underscore
# on either side, not part of a decimal ("1.3812345678"), and not an amount of money
# ("¥13812345678", "13812345678元").
_LB = r"(?<![A-Za-z0-9_])(?<!\d\.)(?<![¥$€£])(?<![¥$€£] )"
_LA = r"(?![A-Za-z0-9_])(?!\.\d)(?!\s?(?:元|块|美元|欧元|英镑|日元|人民币|(?i:rmb|yuan|dollars?|usd|cny|eur)\b))"

_EMAIL_RE = re.compile(
    r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9][A-Za-z0-9._%+\-]*@[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,24}(?![A-Za-z0-9\-])"
)
_CN_ID_RE = re.compile(_LB + r"\d{17}[\dXx]" + _LA)
_CARD_RE = re.compile(
    _LB
    + r"(?:\d{13,19}"  # contiguous
    + r"|\d{4}(?:[ \-]\d{4}){2,3}(?:[ \-]\d{1,3})?"  # 4-4-4(-4)(-1..3)
    + r"|\d{4}[ \-]\d{6}[ \-]\d{4,5}"  # Amex / Diners 4-6-5, 4-6-4
    + r"|\d{6}[ \-]\d{12,13})"  # UnionPay 6-13 as printed on some cards
    + _LA
)
_SEP = r"[ \-]?"
_MOBILE_RE = re.compile(
    _LB + r"(?:(?:\+|00)?86" + _SEP + r"|\(\+?86\)" + _SEP + r")?"
    r"1[3-9]\d" + _SEP + r"\d{4}" + _SEP + r"\d{4}" + _LA
)
_INTL_RE = re.compile(r"(?<![A-Za-z0-9_+])\+\d{1,3}(?:[ \-.]?\(?\d{1,5}\)?){2,5}" + _LA)
_LANDLINE_RE = re.compile(
    _LB + r"(?:\(0\d{2,3}\)" + _SEP + r"|0\d{2,3}[ \-])\d{3,4}[ \-]?\d{4}(?:-\d{1,5})?" + _LA
)
_NANP_RE = re.compile(_LB + r"(?:\(\d{3}\) ?|\d{3}-)\d{3}-\d{4}" + _LA)

# Words that, just before a long number, mark it as an order/tracking/invoice number.
_ORDER_CONTEXT_RE = re.compile(
    r"(订单|单号|编号|流水|运单|快递|发票|工单|序列号|型号|条码|order|tracking|invoice|ref|serial|sku|no\.|#)\s*[:：号]?\s*$",
    re.IGNORECASE,
)

_PROVINCES = frozenset(
    "11 12 13 14 15 21 22 23 31 32 33 34 35 36 37 41 42 43 44 45 46 50 51 52 53 54 61 62 63 64 65 71 81 82 83 91".split()
)


def cn_id_valid(value: str) -> bool:
    """18-character PRC resident ID: province code, birth date and MOD 11-2 check digit
    (python-stdnum's ``cn.ric`` for the date and the check digit). Not ``ric.is_valid``: it
    also looks the county up in stdnum's table, and a real ID from a county missing there
    would then be stored unredacted; a known province is enough to tell IDs from decoys."""
    v = value.upper()
    if len(v) != 18 or not v[:17].isdigit() or v[:2] not in _PROVINCES:
        return False
    try:
        born = ric.get_birth_date(v)
    except _NumberError:
        return False
    if not (1900 <= born.year and born <= date.today()):
        return False
    return ric.calc_check_digit(v) == v[17]


def luhn_valid(digits: str) -> bool:
    return luhn.is_valid(digits)


def _issuer_plausible(digits: str) -> bool:
    """Real card prefixes: 3 (Amex/JCB/Diners), 4 (Visa), 5 (Mastercard/Maestro), 6
    (UnionPay/Discover/Maestro), 2221-2720 (Mastercard). Numbers starting with a year
    ("2024...") or 1/7/8/9/0 are not cards."""
    if digits[0] in "3456":
        return True
    return 2221 <= int(digits[:4]) <= 2720


def bank_card_valid(value: str) -> bool:
    digits = re.sub(r"[ \-]", "", value)
    return 13 <= len(digits) <= 19 and _issuer_plausible(digits) and luhn_valid(digits)


def _digit_count(value: str) -> int:
    return sum(ch.isdigit() for ch in value)


@dataclass(frozen=True)
class _Candidate:
    kind: str
    start: int
    end: int
    priority: int


def _find_candidates(text: str) -> tuple[list[_Candidate], list[tuple[int, int]]]:
    """Valid candidates of every kind, and the spans of long numbers that failed validation.

    A failed ID/card span "blocks" smaller matches inside it: a phone-like run of digits
    within a 16-digit number that failed Luhn is part of that number, not a phone.
    """
    found: list[_Candidate] = []
    blocked: list[tuple[int, int]] = []
    for m in _EMAIL_RE.finditer(text):
        found.append(_Candidate("email", m.start(), m.end(), 0))
    for m in _CN_ID_RE.finditer(text):
        if cn_id_valid(m.group()):
            found.append(_Candidate("cn_id", m.start(), m.end(), 1))
        else:
            blocked.append((m.start(), m.end()))
    for m in _CARD_RE.finditer(text):
        ordered = _ORDER_CONTEXT_RE.search(text[max(0, m.start() - 12) : m.start()]) is not None
        if bank_card_valid(m.group()) and not ordered:
            found.append(_Candidate("bank_card", m.start(), m.end(), 2))
        else:
            blocked.append((m.start(), m.end()))
    for prio, regex in enumerate((_MOBILE_RE, _LANDLINE_RE, _INTL_RE, _NANP_RE), start=3):
        for m in regex.finditer(text):
            if regex is _INTL_RE and not 8 <= _digit_count(m.group()) <= 15:
                continue
            found.append(_Candidate("phone", m.start(), m.end(), prio))
    return found, blocked


def _fold_fullwidth(text: str) -> str:
    """Full-width ASCII (＋８６ １３８…) to ASCII, one character for one, so offsets still
    point into the original text (NFKC would change lengths for characters like "㎏")."""
    return "".join(
        chr(ord(ch) - 0xFEE0) if 0xFF01 <= ord(ch) <= 0xFF5E else (" " if ch == "\u3000" else ch) for ch in text
    )


def find_pii(text: str) -> list[PiiFinding]:
    """Non-overlapping findings in text order; on overlap the stronger kind wins
    (email > ID > card > mobile > landline > international > North American)."""
    candidates, blocked = _find_candidates(_fold_fullwidth(text))
    chosen: list[_Candidate] = []
    for c in sorted(candidates, key=lambda c: (c.priority, c.start, -(c.end - c.start))):
        if any(c.start < b_end and b_start < c.end and (b_end - b_start) > (c.end - c.start) for b_start, b_end in blocked):
            continue
        if any(c.start < o.end and o.start < c.end for o in chosen):
            continue
        chosen.append(c)
    chosen.sort(key=lambda c: c.start)
    return [PiiFinding(c.kind, c.start, c.end, PLACEHOLDERS[c.kind]) for c in chosen]


def redact(text: str, placeholder: Callable[[PiiFinding, str], str] | None = None) -> Redaction:
    """Replace every identifier in ``text`` by its placeholder, or by ``placeholder(finding,
    value)`` when given (the PII vault tags each value: ``memory_core/pii_vault.py``)."""
    findings = find_pii(text)
    if not findings:
        return Redaction(text=text, findings=[])
    parts: list[str] = []
    pos = 0
    for f in findings:
        parts.append(text[pos : f.start])
        parts.append(placeholder(f, text[f.start : f.end]) if placeholder else f.replacement)
        pos = f.end
    parts.append(text[pos:])
    return Redaction(text="".join(parts), findings=findings)
