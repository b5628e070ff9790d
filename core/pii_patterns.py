"""The PII-like text no released string may hold: the release gate scans for it, and the exemplars and
lineages refuse a text that matches, so every one of them reads the same patterns from here."""

from __future__ import annotations

import re

PII_PATTERNS = {
    "email": re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}"),
    "phone": re.compile(r"(?<!\w)(?:\+?\d{1,3}[ .-]?)?(?:\(\d{2,4}\)[ .-]?)?\d{3,4}[ .-]\d{3,4}(?:[ .-]\d{2,4})?(?!\w)"),
    "url": re.compile(r"(?:https?://|www\.)\S+", re.IGNORECASE),
    "card_or_account_number": re.compile(r"(?<!\d)(?:\d[ -]?){12,19}(?!\d)"),
    "ip_address": re.compile(r"(?<!\d)(?:\d{1,3}\.){3}\d{1,3}(?!\d)"),
    "street_address": re.compile(r"\b\d{1,5}\s+(?:[A-Z][a-z]+\s+){1,3}(?:Street|St|Avenue|Ave|Road|Rd|Lane|Ln|Drive|Dr|"
                                 r"Boulevard|Blvd)\b"),
}
