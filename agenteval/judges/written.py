"""Numbers written in other locales' ways, rewritten in the one way the quantity reader reads.

"USD 12 300", "17 900 kg", "48'000", "86.500 EUR", "41,5 %": the digits are grouped by a
space, a no-break or narrow no-break space, an apostrophe or a dot, or the decimal mark is a
comma. Babel parses each with the number symbols of a locale that writes it so (CLDR data),
and the figure is written back as "12,300" / "41.5"; currency codes before or after a figure
become its symbol ("USD 12,300" -> "$12,300"), and a symbol written after a figure
("1 200 $") goes before it. A grouping that could be something else is
read only where the text says it is one figure: a plain space or a dot groups digits only
next to a currency or a unit ("between 2 300 and" stays as it is), a comma is a decimal mark
only before a percent sign, a currency or a unit. The quantity reader (`judges.numbers`)
then reads the rewritten text as it reads any other.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from decimal import Decimal
from typing import Any

CODES = {"USD": "$", "US$": "$", "EUR": "€", "GBP": "£"}
_CODE = r"(?:USD|US\$|EUR|GBP)"
_SYMBOL = r"[$€£]"
# Words after a figure that make a grouped number one amount (units, currencies).
_AFTER_AMOUNT = (
    rf"(?:{_CODE}\b|{_SYMBOL}(?!\s?\d)|%|per\s?cent\b|dollars?\b|euros?\b|pounds?\b|kg\b|g\b|km\b|m\b|mi\b|"
    r"miles?\b|lbs?\b|t\b|tonnes?\b|kwh\b|wh\b|requests?\b|units?\b|"
    r"thousand\b|million\b|billion\b|lakhs?\b|crores?\b|k\b|bn\b)"
)
# Every space of Unicode (category Zs: no-break, narrow no-break, thin, figure, hair, ...)
# groups digits as a space does; all but the plain space are only ever written as one.
SPACES = "".join(ch for ch in map(chr, range(0x3001)) if unicodedata.category(ch) == "Zs")
_SPACES = SPACES
# Digits grouped by threes with one separator throughout, and an optional decimal part.
_GROUPED = re.compile(
    rf"(?<![\d.,'’])(?P<num>\d{{1,3}}(?P<sep>[{SPACES}'’.])\d{{3}}(?:(?P=sep)\d{{3}})*"
    r"(?:[.,]\d+)?)(?![\d'’]|[.,]\d)"
)
# A decimal comma: one or two decimals, or four and more (never a group of three).
# A currency symbol before it says as much ("$0,62 per mile": no grouping writes two digits).
_DECIMAL_COMMA = re.compile(
    rf"(?<![\d.,])(?P<num>\d+,(?:\d{{1,2}}|\d{{4,}}))(?=\s?{_AFTER_AMOUNT})(?!\d)"
    r"|(?<=[$€£¥])(?P<sym_num>\d+,\d{1,2})(?![\d,.])",
    re.I,
)
# The locale whose grouping symbol each separator is (Babel gives the symbols); a space of
# any width is French's.
_LOCALE_OF = {"'": "de_CH", "’": "de_CH", ".": "de_DE"}
# Scale words and their abbreviations in other languages, as the quantity reader's English
# words: "8,6 Mio. USD", "16,5 milliards de dollars", "0,2 Mrd. EUR", "48 Tsd. USD". Read
# only right after a figure. (lakh and crore are read by `judges.numbers` as they are.)
_SCALE_WORDS = (
    (r"mio\.?|mill\.|mln\.?|millions?|millionen|millones|milioni|milione|miljoen", "million"),
    (r"mrd\.?|mld\.?|milliards?|milliarden?|miljard|mil\s+millones|bln\.?", "billion"),
    (r"tsd\.?|tausend|mille", "thousand"),
)
_SCALE = [
    (re.compile(rf"(?<=\d)(\s?)(?:{words})(?=[\s,;:)]|$)", re.I), english)
    for words, english in _SCALE_WORDS
]
# "millions de dollars", "millones de dólares": the scale word then the currency word.
_SCALE_OF = re.compile(r"\b(million|billion|thousand)\s+(?:de|di|van|d')\s*(?=[a-zà-ÿ$€£])", re.I)
_ENGLISH_SCALE = r"(?:thousand|million|billion|lakhs?|crores?|k|m|mn|bn)"
_BEFORE_CODE = re.compile(rf"\b{_CODE}\s?(?=\d)")
_AFTER_CODE = re.compile(rf"(?<=\d)\s?{_CODE}\b")


@functools.cache
def _numbers() -> Any:
    from babel import numbers  # lazy: only judging reads locale numbers

    return numbers


def parse(written: str, locale: str) -> Decimal | None:
    """`written` read with `locale`'s number symbols (its grouping separator may be any
    space when the locale's is a space); None when the locale does not write it so."""
    numbers = _numbers()
    group = numbers.get_group_symbol(locale)
    text = written
    if group in _SPACES:
        text = re.sub(f"[{_SPACES}]", group, text)
    elif group == "'":
        text = text.replace("’", "'")
    try:
        return Decimal(numbers.parse_decimal(text, locale=locale, strict=True))
    except (numbers.NumberFormatError, ValueError):
        return None


def _english(value: Decimal) -> str:
    whole, _, frac = f"{value:f}".partition(".")
    grouped = f"{int(whole):,}"
    return f"{grouped}.{frac}" if frac else grouped


def _amount_context(text: str, start: int, end: int) -> bool:
    before = text[max(0, start - 5) : start]
    after = text[end : end + 12]
    return bool(
        re.search(rf"(?:{_SYMBOL}|{_CODE})\s?$", before)
        or re.match(rf"\s?{_AFTER_AMOUNT}", after, re.I)
    )


def _grouped(m: re.Match[str], text: str) -> str:
    sep, written = m.group("sep"), m.group("num")
    unambiguous = sep not in " ."
    if not unambiguous and not _amount_context(text, m.start(), m.end()):
        return written
    if sep == "." and "," not in written and written.count(".") == 1:
        # "86.500" is 86,500 in Germany and 86.5 in England: only a currency code or a
        # euro sign beside it says which.
        # A symbol after the figure ("2.690 $") is the continental way, grouping included.
        around = text[max(0, m.start() - 5) : m.end() + 5]
        after = re.match(rf"\s?{_SYMBOL}", text[m.end() : m.end() + 2])
        if not re.search(rf"{_CODE}|€", around) and not after:
            return written
    value = parse(written, _LOCALE_OF.get(sep, "fr_FR"))
    return written if value is None else _english(value)


def _scale_to(english: str) -> Any:
    def sub(m: re.Match[str]) -> str:
        return f"{m.group(1) or ' '}{english}"

    return sub


# Scientific notation: "8.6e6", "5.2412E+05", "8.6 × 10^6", "8.6 x 10**6", "8.6·10⁶". Only a
# mantissa with a decimal point or an explicit "× 10" reads so: "2e5" alone may be a code.
_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
_SCIENTIFIC = re.compile(
    r"(?<![\w.,])(?P<mantissa>\d+\.\d+)[eE](?P<e>[+-]?\d{1,2})(?!\w|\.\d)"
    r"|(?<![\w.,])(?P<mantissa2>\d+(?:\.\d+)?)\s?[×x·*]\s?10\s?"
    r"(?:(?:\^|\*\*)\s?(?P<e2>[+-]?\d{1,2})|(?P<sup>[⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]{1,2}))(?!\w|\.\d)"
)


def _scientific(m: re.Match[str]) -> str:
    mantissa = m.group("mantissa") or m.group("mantissa2")
    exponent = m.group("e") or m.group("e2") or (m.group("sup") or "").translate(_SUPERSCRIPT)
    value = Decimal(mantissa).scaleb(int(exponent))
    plain = f"{value:f}"
    return plain.rstrip("0").rstrip(".") if "." in plain else plain


def scientific(text: str) -> str:
    """Figures in scientific notation written out ("8.6e6" -> "8600000")."""
    return _SCIENTIFIC.sub(_scientific, text)


def rewrite(text: str) -> str:
    """Locale-written figures and currency codes as the quantity reader reads them."""
    if not re.search(r"\d", text):
        return text
    text = scientific(text)
    for pattern, english in _SCALE:
        text = pattern.sub(_scale_to(english), text)
    text = _SCALE_OF.sub(lambda m: m.group(1) + " ", text)
    text = _GROUPED.sub(lambda m: _grouped(m, text), text)
    text = _DECIMAL_COMMA.sub(lambda m: _decimal_comma(m.group("num") or m.group("sym_num")), text)
    text = _BEFORE_CODE.sub(lambda m: CODES[m.group(0).strip()], text)
    text = _SYMBOL_AFTER.sub(lambda m: m.group("sym") + m.group("num"), text)
    return _AFTER_CODE.sub("", _move_codes(text))


# "1,200 $", "0.62 €": the symbol after the figure, as French or Spanish write it, moved
# before it; a symbol that starts another figure ("5 $10 notes") is left alone.
_SYMBOL_AFTER = re.compile(
    rf"(?<![\d.,$€£])(?P<num>\d[\d,]*(?:\.\d+)?)\s?(?P<sym>{_SYMBOL})(?!\s?\d)"
)


def _decimal_comma(written: str) -> str:
    value = parse(written, "de_DE")
    return written if value is None else _english(value)


def _move_codes(text: str) -> str:
    """ "1,849 USD" -> "$1,849 USD" (the code after is then dropped); a figure that has its
    symbol already keeps it."""

    def put(m: re.Match[str]) -> str:
        if re.search(rf"{_SYMBOL}\s?$", text[max(0, m.start() - 2) : m.start()]):
            return m.group(0)
        return CODES[m.group("code")] + m.group("num") + (m.group("scale") or "")

    # "8.6 million USD" -> "$8.6 million": a scale word may stand between figure and code
    return re.sub(
        rf"(?<![\d.,$€£])(?P<num>\d[\d,]*(?:\.\d+)?)(?P<scale>\s(?i:{_ENGLISH_SCALE})\b)?"
        rf"\s?(?P<code>{_CODE})\b",
        put,
        text,
    )
