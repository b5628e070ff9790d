"""Hard private-context rules (issue 61): where the words around a detected name say it is a private
person's, the name is replaced whatever a keep signal says (the keep-list of public figures, the local
model's score or verdict). They run before any keep signal (Pseudonymizer._judged_public).

- a relation or role of the user's before the name: "my friend X", "mi jefe X", "мой друг X", "我的朋友X";
- the addressee of a message: "an e-mail to X", "une lettre à X", "письмо для X", "给X的邮件";
- the user's own name: "me (X)", "X (me)", "я (X)";
- a name in a table row ("| X | 34 | Sales |", tab- or semicolon-separated fields) or in a list item
  that gives the person's data ("- X, 34, accountant", "1. X: 555-0199");
- a letter standing for a person in a puzzle ("A", "B": a name of one letter).

English cues of the same kinds are also spaCy Matcher patterns of name_rules_patterns (CUE_PATTERNS:
"possessed", "interaction"), which mark the name private (score 1.0) where spaCy's tokens are read;
these regexes are the second net for names the Matcher's tokens miss, in any language, on the raw text.
"""

from __future__ import annotations

import re

# Relations and roles after a possessive of the user's, per language (lower case; the name follows).
_RELATIONS = {
    "en": r"(?:my|our)\s+(?:\w+\s+)?(?:friend|best friend|boyfriend|girlfriend|boss|manager|colleague|coworker|co-worker|"
          r"neighbou?r|roommate|flatmate|husband|wife|partner|ex|son|daughter|mother|father|mom|mum|dad|brother|sister|"
          r"cousin|aunt|uncle|grandma|grandpa|grandmother|grandfather|niece|nephew|client|customer|tenant|landlord|"
          r"teacher|student|classmate|coach|doctor|therapist|employee|supervisor|team ?lead|assistant|fianc[eé]e?)",
    "es": r"(?:mi|mis|nuestr[oa]s?)\s+(?:amig[oa]|jef[ea]|compañer[oa]|vecin[oa]|novi[oa]|espos[oa]|marido|herman[oa]|"
          r"madre|padre|mamá|papá|hij[oa]|prim[oa]|tí[oa]|abuel[oa]|cliente|profesor[a]?)",
    "pt": r"(?:meu|minha|nosso|nossa)\s+(?:amig[oa]|chefe|colega|vizinh[oa]|namorad[oa]|marido|esposa|irmão|irmã|mãe|pai|"
          r"filh[oa]|prim[oa]|ti[oa]|avó|avô|cliente|professor[a]?)",
    "fr": r"(?:mon|ma|mes|notre)\s+(?:ami|amie|copain|copine|patron|patronne|chef|collègue|voisin|voisine|mari|femme|"
          r"frère|sœur|soeur|mère|père|fils|fille|cousin|cousine|oncle|tante|client|cliente|prof)",
    "it": r"(?:il mio|la mia|mio|mia|i miei|le mie)\s+(?:amic[oa]|capo|collega|vicin[oa]|ragazz[oa]|marito|moglie|"
          r"fratello|sorella|madre|padre|mamma|papà|figli[oa]|cugin[oa]|zi[oa]|nonn[oa]|cliente)",
    "de": r"(?:mein|meine|meinem|meinen|meiner|unser|unsere)\s+(?:freund|freundin|chef|chefin|kollege|kollegin|nachbar|"
          r"nachbarin|mann|frau|bruder|schwester|mutter|vater|sohn|tochter|cousin|cousine|onkel|tante|kunde|kundin)",
    "ru": r"(?:мой|моя|моего|моей|моему|моим|моих|мои|наш|наша|нашего|нашей)\s+(?:друг[а-я]*|подруг[а-я]*|начальни[а-я]*|"
          r"босс[а-я]*|коллег[а-я]*|сосед[а-я]*|муж[а-я]*|жен[а-я]*|брат[а-я]*|сестр[а-я]*|мам[а-я]*|пап[а-я]*|сын[а-я]*|"
          r"доч[а-я]*|парн[а-я]*|девушк[а-я]*|клиент[а-я]*|учител[а-я]*)",
    "pl": r"(?:mój|moja|mojego|mojej|mojemu|nasz|nasza)\s+(?:przyjaci[a-ząćęłńóśźż]*|szef[a-ząćęłńóśźż]*|kolega|koleżanka|"
          r"sąsiad[a-ząćęłńóśźż]*|mąż|żona|brat|siostra|mama|tata)",
    "zh": r"(?:我的|我们的|我)(?:朋友|好友|老板|上司|同事|邻居|男朋友|女朋友|丈夫|老公|妻子|老婆|"
          r"哥哥|弟弟|姐姐|妹妹|妈妈|爸爸|儿子|女儿|客户|老师|同学)",
    "ja": r"(?:私の|僕の|俺の|うちの)(?:友達|友人|上司|同僚|隣人|彼氏|彼女|夫|妻|兄|弟|姉|妹|母|父|息子|娘|客|先生)",
    "ko": r"(?:내|나의|우리)\s*(?:친구|상사|동료|이웃|남자친구|여자친구|남편|아내|"
          r"형|오빠|누나|언니|동생|엄마|아빠|아들|딸)",
    "ar": r"(?:صديقي|صديقتي|مديري|زميلي|زميلتي|جاري|زوجي|زوجتي|أخي|أختي|أمي|أبي|ابني|ابنتي)",
    "hi": r"(?:मेरा|मेरी|मेरे)\s+(?:दोस्त|मित्र|बॉस|सहकर्मी|पड़ोसी|पति|पत्नी|भाई|बहन|माँ|पिता|बेटा|बेटी)",
}
# The addressee of a message: "an e-mail to X", "une lettre à X", "письмо для X".
_ADDRESSEE = (r"(?:e-?mails?|letters?|messages?|notes?|texts?|cards?|invitations?|memos?|replies|reply|correos?|cartas?|"
              r"mensajes?|lettres?|courriels?|mails?|lettere?|messaggi[o]?|briefe?|nachrichten?|"
              r"письм[а-я]*|сообщени[а-я]*|записк[а-я]*|listy?|wiadomoś[a-ząćęłńóśźż]*)\s+"
              r"(?:to|for|à|au|pour|a|para|per|an|für|для|к|do)\s+")
_BEFORE_NAME = re.compile(r"(?:(?<![\w])(?:" + "|".join(v for k, v in _RELATIONS.items() if k not in ("zh", "ja", "ar"))
                          + r"|" + _ADDRESSEE + r")[\s,:(]*|(?:" + "|".join(_RELATIONS[k] for k in ("zh", "ja", "ar"))
                          + r")[\s,:(、，：]*)$", re.I)
# "给X的邮件/写信", "Xへのメール/手紙", "Xに手紙": CJK addressees around the name
_CJK_ADDRESSEE_BEFORE = re.compile(r"(?:给|致|寄给)\s*$")
_CJK_ADDRESSEE_AFTER = re.compile(r"\s*(?:さん|様|くん|君|ちゃん|先生)?"
                                  r"(?:への(?:メール|手紙|メッセージ)|に(?:メール|手紙)|宛て|様へ)")
# The user's own name: "me (X)", "X (me)", "I (X)"; "я (X)", "yo (X)", "moi (X)", "ich (X)", "我（X）"
_ME_BEFORE = re.compile(r"(?<!\w)(?:me|myself|i|yo|moi|ich|io|eu|я|меня|мне|我|私|나)\s*[(（]\s*$", re.I)
_ME_AFTER = re.compile(r"\s*[(（]\s*(?:me|myself|that's me|yo|moi|ich|io|eu|я|我|私|나)\s*[)）]", re.I)
# Table rows: a line with two or more cell separators around the name.
_CELL_SEPARATORS = ("|", "\t", ";")
# A list item ("- X", "* X", "1. X", "a) X") whose next field after the name is data: a number, an e-mail or phone.
_LIST_MARK = re.compile(r"^\s*(?:[-*•·–]|\d{1,3}[.)]|[a-z][.)])\s*$", re.I)
_DATA_AFTER = re.compile(r"^\s*(?:[,:;–—-]|\s\()\s*(?:[^\n]{0,30}?\d|[^\n\s]*@)")


def _line(text: str, start: int, end: int) -> tuple[int, int]:
    left = text.rfind("\n", 0, start) + 1
    right = text.find("\n", end)
    return left, len(text) if right == -1 else right


def in_table_row(text: str, start: int, end: int) -> bool:
    """Whether the name stands in a table row: its line holds two or more of one cell separator
    ("|", a tab, ";"), one of them before the name and one after it."""
    left, right = _line(text, start, end)
    before, after = text[left:start], text[end:right]
    return any((sep in before and sep in after)
               or (sep != ";" and before.count(sep) + after.count(sep) >= 2)
               for sep in _CELL_SEPARATORS)


def in_list_with_data(text: str, start: int, end: int) -> bool:
    """Whether the name opens a list item whose next field is a person's data ("- Ana Ruiz, 34, ...")."""
    left, right = _line(text, start, end)
    return bool(_LIST_MARK.match(text[left:start]) and _DATA_AFTER.match(text[end:right]))


def puzzle_letter(name: str) -> bool:
    """A name of one letter ("A", "B" of a seating puzzle) stands for a person the user invents."""
    return len(re.findall(r"[^\W\d_]", name)) == 1


def private_context(text: str, start: int, end: int) -> str | None:
    """Which hard rule says text[start:end] is a private person's name ("relation", "addressee", "me",
    "table", "list", "letter"), or None."""
    before = text[max(0, start - 60):start]
    if puzzle_letter(text[start:end]):
        return "letter"
    match = _BEFORE_NAME.search(before)
    if match:
        return "addressee" if re.search(_ADDRESSEE + r"[\s,:(]*$", match.group(0), re.I) else "relation"
    if _CJK_ADDRESSEE_BEFORE.search(before) or _CJK_ADDRESSEE_AFTER.match(text, end):
        return "addressee"
    if _ME_BEFORE.search(before) or _ME_AFTER.match(text, end):
        return "me"
    if in_table_row(text, start, end):
        return "table"
    if in_list_with_data(text, start, end):
        return "list"
    return None
