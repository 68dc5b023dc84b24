"""Where a person lives and when they were born: postal addresses and a name with a birth date.

No maintained library fits: `pyap` and `usaddress` read US, Canadian and British addresses only
and libpostal (`postal`) needs a 2 GB model, so these are the project's own patterns, one
per way a country writes a street (tuned on `eval/scrub/dev.jsonl`, measured on held):

- a house number, a capitalised street name and a street word or its abbreviation (`4099
  Maple Grove Ave`, `10 Downing Street`), the English-speaking countries' order;
- a street name ending in a street word, then the number (`Lindenstraße 37`, `Keizersgracht
  123`, `Drottninggatan 5`): German, Dutch, Scandinavian;
- a street word, a name and the number (`Calle de Alcalá 42`, `Via Roma 12`, `Rua Augusta
  100`) or a number, a street word and a name (`12 rue de la Paix`): Romance languages;
- Turkish: a quarter, avenue or street word after its name, abbreviated or not (`Mah.`,
  `Cad.`, `Sok.`, `Bulvarı`), then `No:` and the door, a flat, the postcode and district/city
  (`Atatürk Bulvarı No: 112/5, 06680 Çankaya/Ankara`);
- a PO box (`PO Box 1234`, `Postfach 10 11 12`, `Apartado 45`);
- a postcode after a city (`Springfield, IL 62704`, `10969 Berlin`, `London SW1A 1AA`).

Each match is redacted whole with the unit, floor, city and postcode that follow it. A date
of birth is redacted with the name before it (`Jonas Lindqvist, born 1987-03-14`, `geb. am
14.03.1987`, `née le 3 mars 1990`, `DOB: 03/14/1987`).
"""

from __future__ import annotations

import re

from agenteval.llm.secret_rules import REDACTED, Rule

_CAP = r"[A-ZÀ-ÖØ-Þ][\wÀ-ÖØ-öø-ÿ'’.\-]*"  # a capitalised word, accents included
_SUFFIX = (
    r"(?:Street|St|Avenue|Ave|Av|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Place|Pl"
    r"|Square|Sq|Terrace|Ter|Parkway|Pkwy|Circle|Cir|Highway|Hwy|Way|Close|Crescent|Cres"
    r"|Grove|Gardens|Gdns|Row|Mews|Trail|Trl|Pike|Alley|Plaza|Loop|Hill|Walk|Parade|Esplanade)"
)
_UNIT = r"(?:,?\s*(?i:apt|apartment|suite|ste|unit|flat|floor|fl|room|rm|#)\.?\s*[\w\-]{1,6})?"
_US_STATES = (
    r"(?:AL|AK|AZ|AR|CA|CO|CT|DE|DC|FL|GA|HI|ID|IL|IN|IA|KS|KY|LA|ME|MD|MA|MI|MN|MS|MO|MT|NE"
    r"|NV|NH|NJ|NM|NY|NC|ND|OH|OK|OR|PA|RI|SC|SD|TN|TX|UT|VT|VA|WA|WV|WI|WY"
    r"|AB|BC|MB|NB|NL|NS|ON|PE|QC|SK|NSW|VIC|QLD|WA|TAS)"
)
_POSTCODE = r"(?:\d{5}(?:-\d{4})?|[A-Z]{1,2}\d[A-Z\d]?\s\d[A-Z]{2}|[A-Z]\d[A-Z]\s?\d[A-Z]\d|\d{4})"
# A city, a region and a postcode after the street: `, Springfield, IL 62704`, `, 10969 Berlin`.
_TAIL = (
    rf"(?:,?\s*\d{{4,5}}\s+{_CAP}(?:\s{_CAP})?"
    rf"|(?:,\s*{_CAP}(?:\s{_CAP}){{0,2}})?(?:,?\s*{_US_STATES})?(?:,?\s*{_POSTCODE})?)"
)
_GERMANIC = (
    r"(?:straße|strasse|str\.|weg|allee|platz|gasse|damm|ufer|chaussee|steig|pfad|markt"
    r"|straat|laan|gracht|plein|kade|gatan|vägen|gränd|veien|vej|gade|stræde|katu)"
)
_ROMANCE = (
    r"(?:Calle|C/|Avenida|Avda\.?|Carrer|Rua|Travessa|Viale|Piazza|Piazzale|Vicolo|Strada"
    r"|Rambla|Ronda)"
)
# Street words that are English words too ("Via Docker Compose 2"): only with a postcode.
_ROMANCE_AMBIGUOUS = r"(?:Via|Plaza|Largo|Corso|Paseo|Camino|Av\.)"
_TR_CAP = r"[A-ZÀ-ÖØ-ÞĀ-ſ][\wÀ-ſ'’\-]*"  # Ş, İ, Ğ too
_TURKISH = (
    r"(?:Mahallesi|Mah\.|Mh\.|Caddesi|Cad\.|Cd\.|Sokağı|Sokak|Sok\.|Sk\.|Bulvarı|Bulv?\."
    r"|Blv\.|Meydanı|Yolu)"
)
_FRENCH = r"(?i:rue|avenue|av\.|boulevard|bd|place|chemin|allée|impasse|quai|cours|route)"
_LINK = r"(?:(?i:de la|de l'|del|de|dos|das|da|do|di|della|dei|du|des|d')\s*)?"
ADDRESS = re.compile(
    # English order: number, name, street word
    rf"\b\d{{1,6}}[A-Za-z]?(?:\s(?:[NSEW]\.?|North|South|East|West))?(?:\s{_CAP}){{1,4}}"
    rf"\s{_SUFFIX}\b\.?{_UNIT}{_TAIL}"
    # Germanic: name ending in a street word, number
    rf"|\b(?:{_CAP}\s)?[A-ZÄÖÜÅÆØ][\wäöüßåæø\-]*{_GERMANIC}\s+\d{{1,4}}\s?[a-zA-Z]?\b{_TAIL}"
    rf"|\b(?:{_CAP}\s)(?i:Straße|Strasse|Str\.|Weg|Allee|Platz|Gasse|Ring|Damm)\s+\d{{1,4}}"
    rf"[a-z]?\b{_TAIL}"
    # Romance: street word, name, number; French: number, street word, name
    rf"|\b{_ROMANCE}\s+{_LINK}{_CAP}(?:\s{_LINK}{_CAP}){{0,3}},?\s*(?:n\.?[º°o]?\s*)?\d{{1,4}}"
    rf"\b{_TAIL}"
    rf"|\b{_ROMANCE_AMBIGUOUS}\s+{_LINK}{_CAP}(?:\s{_LINK}{_CAP}){{0,3}},?\s*\d{{1,4}}[a-z]?"
    rf",?\s*\d{{4,5}}\s+{_CAP}"
    rf"|\b\d{{1,4}}(?:\s?(?i:bis|ter))?,?\s+{_FRENCH}\s+{_LINK}{_CAP}(?:\s{_LINK}{_CAP}){{0,3}}"
    rf"{_TAIL}"
    # Turkish: a quarter, avenue or street word after its name (each abbreviated or not),
    # then `No:` and the door, a flat, the postcode and district/city
    rf"|(?<![\w.])(?:{_TR_CAP}[ \t]){{1,4}}{_TURKISH}"
    rf"(?:,?[ \t]*(?:{_TR_CAP}[ \t]){{1,4}}{_TURKISH})*"
    r",?[ \t]*No[ \t]*[:.]?[ \t]*\d{1,4}[A-Za-z]?(?:[ \t]*/[ \t]*\d{1,4})?"
    r"(?:,?[ \t]*(?:Daire|D|Kat|K)[ \t]*[:.]?[ \t]*\d{1,3})*"
    rf"(?:,?[ \t]*\d{{5}}[ \t]+{_TR_CAP}(?:[ \t]*/[ \t]*{_TR_CAP})?)?"
    # PO boxes
    r"|\b(?:P\.?\s?O\.?\s?Box|Post\sOffice\sBox|Postfach|Apartado(?:\sde\scorreos)?"
    r"|Bo[iî]te\spostale|Casella\spostale|Caixa\spostal)\s+\d[\d\s]{0,10}\d\b"
    # a postcode after a city
    rf"|\b{_CAP}(?:\s{_CAP})?,\s{_US_STATES}\s\d{{5}}(?:-\d{{4}})?\b"
    rf"|\b{_CAP},?\s[A-Z]{{1,2}}\d[A-Z\d]?\s\d[A-Z]{{2}}\b"
)
_MONTH = (
    r"(?i:jan|feb|m[aä]r|apr|ma[iyj]|jun|jul|aug|sep|o[ck]t|nov|d[ée]c|janvier|f[ée]vrier"
    r"|mars|avril|juin|juillet|ao[uû]t|septembre|octobre|novembre|enero|febrero|marzo|abril"
    r"|mayo|junio|julio|agosto|septiembre|octubre|noviembre|diciembre|gennaio|febbraio"
    r"|aprile|maggio|giugno|luglio|settembre|ottobre|dicembre|januar|februar|m[äa]rz|juni|juli"
    r"|oktober|dezember)[a-z]*\.?"
)
_DATE = (
    rf"(?:\d{{4}}-\d{{1,2}}-\d{{1,2}}|\d{{1,2}}[./\-]\d{{1,2}}[./\-]\d{{2,4}}"
    rf"|\d{{1,2}}(?:st|nd|rd|th|er|º)?\.?\s+(?:de\s+)?{_MONTH}\s+(?:de\s+)?\d{{4}}"
    rf"|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}})"
)
_BORN = (
    r"(?i:born(?:\s+on)?|b\.|n[ée]e?(?:\s+le)?|geb(?:oren)?\.?(?:\s+am)?|nacid[oa](?:\s+el)?"
    r"|nat[oa](?:\s+il)?|date\s+of\s+birth|d\.?o\.?b\.?|birth\s*date|birthday|geburtsdatum"
    r"|date\s+de\s+naissance|fecha\s+de\s+nacimiento|data\s+di\s+nascita|data\s+de\s+nascimento)"
)
BIRTH = re.compile(rf"(?:\b{_CAP}(?:\s{_CAP}){{1,3}}[\s,(]*)?(?<![\w.])\b{_BORN}[\s:=(]*{_DATE}\b")
# A necessary condition for either pattern: a number beside a capitalised word, a street
# word, a PO box's or a birth's word.
HINT = (
    r"\d[A-Za-z]?,?\s+[A-ZÀ-Þ]|[a-zäöüß]\s+\d|\bNo\s*[:.]\s*\d|(?i:box|postfach|apartado|postale|postal|born|geb"
    r"|n[ée]e|nacid|nat[oa]|birth|dob|naissance|nacimiento|nascita)"
)


def _whole(_: re.Match[str]) -> str:
    return REDACTED


def address_rules() -> list[Rule]:
    return [("date_of_birth", BIRTH, _whole), ("postal_address", ADDRESS, _whole)]
