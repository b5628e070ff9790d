import json

import pytest

from publishing.release_gate import scan


def _report(**topic):
    base = {"id": 1, "name": "Python and debugging", "description": "Conversations about python.",
            "keywords": ["python", "debugging"], "size": 5551234}
    return json.dumps({"topics": [dict(base, **topic)], "privacy": {"epsilon": 6.9999987443256, "delta": 1e-06}}).encode()


def test_a_clean_report_passes_even_with_long_numbers():
    assert scan("release/report.json", _report()) == []


@pytest.mark.parametrize("text,kind", [
    ("mail jane.doe.12345@example.com now", "email"),
    ("call 555-123-4567", "phone"),
    ("see https://example.com/u/42", "url"),
    ("card 4111 1111 1111 1111", "card_or_account_number"),
    ("from 192.168.10.20", "ip_address"),
    ("lives at 42 Maple Street", "street_address"),
])
def test_pii_in_any_released_string_is_found(text, kind):
    findings = scan("release/report.json", _report(description=text))
    assert kind in {f.kind for f in findings}


def test_canaries_are_found_case_insensitively_in_any_file():
    findings = scan("release/report.html", b"<p>Purple Giraffe Umbrella</p>", canaries=("purple giraffe umbrella",))
    assert [f.kind for f in findings] == ["canary"]
