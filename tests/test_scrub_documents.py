"""Private values in documents people paste (issue 43, a fifth probe): a card's security code
beside its number (redacted already or not), a VAT or tax id on an invoice in several
countries' labels (a company's stays: it is public by design), an address in an e-mail
signature in Turkish and other formats. Values of our own; each family beside the look-alikes
it must leave byte for byte. Pure functions, no files."""

from __future__ import annotations

import pytest

from agenteval.llm.private import PrivateScrubber
from agenteval.llm.residue import residue

_CARD_CODES = (
    ("Card 4929 1307 5521 8834 exp 11/28 CVV 507, thanks", "507"),
    ("card [REDACTED] / CVC: 3190", "3190"),
    ("Kartennummer [REDACTED], Prüfnummer 274", "274"),
    ("carte [REDACTED], cryptogramme visuel : 618", "618"),
    ("tarjeta [REDACTED] código de seguridad 905", "905"),
    ("the card's security code is 442", "442"),
    ("kart [REDACTED] güvenlik kodu 731", "731"),
)
_TAX_IDS = (
    ("Sprzedawca: Jan Nowicki Usługi Ogrodnicze, NIP: PL7282615413", "7282615413"),
    ("Rechnung an Ida Brenner, USt-IdNr.: DE 276 452 197", "276 452 197"),
    ("Facture: Paul Moreau, N° TVA FR83404833048", "83404833048"),
    ("Fattura: Giulia Conti, P.IVA 04825310968 (ditta individuale)", "04825310968"),
    ("Factura a Marta Gil, NIF: 45826371L", "45826371"),
    ("Factuur: Sanne Visser, BTW-nummer NL812334966B01", "812334966"),
    ("Fatura: Emre Demir, Vergi No: 4820931765", "4820931765"),
    ("Invoice to R. Patel, VAT number GB 314 1592 65", "314 1592 65"),
)
_TAX_LOOKALIKES = (
    "Acme Logistics Sp. z o.o., KRS 0000731926, NIP firmy PL9512348851",
    "Nordwind Handel GmbH, USt-IdNr. DE318849203",
    "VAT 23% on every line; the CVV is three digits; error code 404",
    r"also redact CVV\s*\d{3,4}",
)
_SIGNATURES = (
    ("Av. Selin Arslan\nArslan Hukuk\nCumhuriyet Bulvarı No: 47/3, 35210 Konak/İzmir\n", "47/3"),
    ("Adres: Bağdat Caddesi No:218 D:9, 34728 Kadıköy/İstanbul", "218"),
    ("Teşvikiye Mah. Valikonağı Cad. No: 61 Daire 4", "Valikonağı"),
    ("Ayla Öztürk\nLale Sk. No.14", "Lale"),
)


@pytest.mark.parametrize(("text", "code"), _CARD_CODES)
def test_a_card_security_code_goes_beside_its_name(text: str, code: str) -> None:
    assert code not in PrivateScrubber().scrub_text(text)


@pytest.mark.parametrize(("text", "number"), _TAX_IDS)
def test_a_persons_tax_id_goes_under_any_countrys_label(text: str, number: str) -> None:
    out = PrivateScrubber().scrub_text(text)
    assert number not in out, out


@pytest.mark.parametrize("text", _TAX_LOOKALIKES)
def test_a_companys_vat_id_and_prose_about_codes_stay(text: str) -> None:
    assert PrivateScrubber().scrub_text(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "Biuro Nordlicht Sp. z o.o., KRS 0000731926, infolinia 800 321 654",
        "Service-Hotline 0800 222 3344, Handelsregister HRB 184522",
        "toll-free +1 888 555 2671; SIRET 73282932000074",
    ],
)
def test_a_companys_register_entry_and_business_line_cost_nothing(text: str) -> None:
    out = PrivateScrubber().scrub_text(text)
    assert out == text and not residue(out)


def test_a_persons_phone_number_still_goes() -> None:
    out = PrivateScrubber().scrub_text("call me on +48 601 234 567 or 0151 23456789")
    assert "601" not in out and "23456789" not in out


@pytest.mark.parametrize(("text", "piece"), _SIGNATURES)
def test_an_address_in_a_signature_goes(text: str, piece: str) -> None:
    out = PrivateScrubber().scrub_text(text)
    assert piece not in out, out


def test_a_signature_keeps_its_other_lines_and_a_numbered_item() -> None:
    out = PrivateScrubber().scrub_text(_SIGNATURES[0][0] + "see Issue No: 12, PR No: 45")
    assert out.startswith("Av. Selin Arslan\nArslan Hukuk\n") and "Issue No: 12, PR No: 45" in out


_FACTS = (
    ("Notes: Priya Raman is off for surgery until March.", "Priya Raman"),
    ("Tobias Reinhardt ist seit Montag krankgeschrieben (Migräne).", "Tobias Reinhardt"),
    ("Herr Brandt ist krankgeschrieben (Gürtelrose), bitte übernehmen.", "krankgeschrieben"),
    ("Frau Albers ist krank (Gürtelrose), bitte übernehmen.", "Gürtelrose"),
    ("Camille Lefèvre est en arrêt maladie jusqu'à vendredi.", "Camille Lefèvre"),
    ("El sueldo de Javier Morales sube a 48.000 EUR.", "Javier Morales"),
    ("Agnieszka Wróbel jest na zwolnieniu lekarskim; wraca w piątek.", "Agnieszka Wróbel"),
    ("Zeynep Aydın'ın maaşı 62.000 TL oldu.", "Zeynep Aydın"),
    ("У Ольги Смирновой диагноз: астма.", "Ольги Смирновой"),
    ("Giulia Conti's salary goes up; Conti asked us to keep it quiet.", "Conti"),
)
_FACT_LOOKALIKES = (
    "The Salary API returns Base Pay per Employee ID.",
    "See Google Cloud docs for HIV research datasets.",
    "Anna is on sick leave until Friday.",  # a first name alone: kept (the module says why)
    "Priya Raman merged the cache fix on Friday.",  # a name without a private fact
)


@pytest.mark.parametrize(("text", "private"), _FACTS)
def test_a_named_person_beside_a_health_or_pay_fact_loses_the_name(text: str, private: str) -> None:
    out = PrivateScrubber().scrub_text(text)
    assert private not in out, out


@pytest.mark.parametrize("text", _FACT_LOOKALIKES)
def test_names_without_a_private_fact_and_facts_without_a_name_stay(text: str) -> None:
    assert PrivateScrubber().scrub_text(text) == text


def test_published_test_cards_and_fictional_phones_stay_real_ones_go() -> None:
    kept = (
        "test cards 4242 4242 4242 4242, 5555555555554444; fictional +1 202-555-0143, "
        "07700 900123, +61 491 570 156"
    )
    out = PrivateScrubber().scrub_text(kept)
    assert out == kept and not residue(out)
    real = PrivateScrubber().scrub_text("card 4929 1307 5521 8834, phone +1 202-456-1414")
    assert "8834" not in real and "456-1414" not in real
