"""The name rules' data (backends/pii/name_rules.py): word lists, and the token-sequence cues as spaCy
`Matcher` patterns. A pattern's label names the rule; name_rules applies them to a Doc once
(`cue_matches`) and reads, at each token, which cues end right before it (CUE_PATTERNS) or start
right after a name (AFTER_NAME_PATTERNS). Conditions that are no token sequence (the case of a word,
where a line starts, the tagger's view) stay in name_rules' code."""

from __future__ import annotations

RELATIONS = frozenset("""
colleague colleagues coworker co-worker boss manager supervisor friend friends wife husband partner
fiance fiancee fiancé fiancée girlfriend boyfriend son daughter kid kids child children mother father
mom mum dad brother sister cousin uncle aunt nephew niece grandmother grandfather grandma grandpa
granddaughter grandson neighbor neighbour neighbors neighbours landlord landlady tenant roommate
flatmate client customer patient student teacher tutor coach doctor therapist lawyer attorney
assistant employee employer intern mentor classmate teammate ex stepson stepdaughter stepmother
stepfather baby babysitter nanny coworkers employees students clients tenants
""".split())
POSSESSIVES = frozenset({"my", "our", "your", "his", "her", "their"})
# Kinship words that stand before a name like a title, with no "my": "a card for aunt Marta's 60th",
# "Uncle Desmond is visiting", "tell grandpa Walt".
KINSHIP_TITLES = frozenset("""
aunt auntie aunty uncle grandma grandpa granny gran grandmother grandfather nana nan cousin
great-aunt great-uncle grandaunt granduncle
""".split())
# Roles in a team or a business: "their founder (Lars)", "our designer, Paloma", "the client's CTO
# (Ingrid)". After a possessive pronoun or before a name in parentheses they mark a private person
# (meeting notes, e-mails); not after "Google's": "Google's CEO Sundar Pichai" is public.
ROLES = frozenset("""
founder cofounder co-founder ceo cto cfo coo cmo vp pm po designer developer engineer architect analyst
recruiter accountant contractor consultant freelancer editor agent realtor dentist vet nurse counselor
counsellor principal director lead head rep representative admin administrator owner partner sponsor
stakeholder investor advisor adviser champion contact liaison coordinator secretary receptionist
technician plumber electrician mechanic driver cleaner housekeeper caregiver carer translator tutor
pastor priest rabbi imam officer
""".split())
# People nouns that "named"/"called" introduce a person after: "a girl named lila", "my coworker
# called Dusan" (not "a function named parse_args", "a file called notes").
PERSON_NOUNS = frozenset("""
girl boy man woman guy gal dude lady gentleman kid child baby teen teenager person someone somebody
character protagonist hero heroine villain detective knight prince princess wizard witch warrior
student pupil classmate singer dancer
""".split())
SALUTATIONS = frozenset({"dear", "hi", "hello", "hey", "hiya", "thanks", "thank", "greetings", "morning"})
SIGN_OFFS = frozenset({"best", "regards", "cheers", "sincerely", "love", "thanks", "yours", "warmly",
                       "cordially", "respectfully", "xoxo", "xo", "wishes"})
TITLES = frozenset({"mr", "mrs", "ms", "miss", "mx", "dr", "prof", "professor", "sr", "sra", "mme"})
INTRODUCTIONS = (("my", "name", "is"), ("i", "'m"), ("i", "am"), ("this", "is"), ("it", "'s"),
                 ("name", ":"), ("from", "me", ","), ("signed", ","), ("called",), ("named",))
# E-mail headers and copy lines name the correspondents: "From: X", "To: X", "cc X".
HEADERS = ((("from", ":"), ("to", ":"), ("cc", ":"), ("bcc", ":"), ("attn", ":"), ("cc",), ("attn",)))
# Labels of a list of people: "Attendees: X, Y, Z", "Guests: ..."
PEOPLE_LABELS = frozenset("""
attendees attendee participants participant guests guest invitees invitee members present absent apologies
speakers speaker panelists panellists organizer organiser organizers organisers assignee assignees reviewer
reviewers reporter owner owners author authors host hosts recipient recipients contact
""".split())
# "a reply to X", "a party for X": a capitalized word spaCy does not call a place, an organisation,
# ... is probably a person; a weak cue (a public-figure context still keeps it). The small model tags
# many unknown names as ORG, so ORG does not rule a person out here.
PREPOSITIONS = frozenset({"to", "for", "with", "between"})
NOT_PERSON_ENTITIES = frozenset({"GPE", "LOC", "NORP", "FAC", "PRODUCT", "WORK_OF_ART", "EVENT", "LANGUAGE",
                                 "LAW", "DATE", "TIME", "MONEY", "QUANTITY", "CARDINAL", "ORDINAL", "PERCENT"})
_PLACES_AND_PEOPLES = frozenset({"GPE", "LOC", "NORP", "LANGUAGE"})
# Nouns of a social exchange or a message whose "with/between/to/for X" is a person: "a fight with X",
# "an argument between X and Y", "a call with X", "a resignation letter to X".
INTERACTION_NOUNS = frozenset("""
fight fights argument arguments quarrel disagreement dispute call calls meeting meetings chat conversation
conversations dinner lunch breakfast date playdate catch-up relationship letter note card message reply
email e-mail text invitation apology toast speech eulogy
""".split())
INTERACTION_PREPOSITIONS = frozenset({"with", "between", "to", "for"})
INTERACTION_VERBS = frozenset({"argued", "arguing", "fought", "fighting", "quarrelled", "quarreled", "married"})
INTERACTION_VERB_PAIRS = (["broke", "up"], ["break", "up"], ["breaking", "up"], ["fell", "out"], ["falling", "out"])
# First words of many place names ("San Jose", "Los Angeles", "New Delhi", "Port Harcourt").
PLACE_NAME_STARTS = frozenset("""
san santa santo sao são los las la le el new port fort mount lake saint st sainte rio buenos hong kuala
abu addis tel sri costa puerto cape north south east west upper lower greater palm key
""".split())
# Words of travel whose "to X" is a place: "go to Vegas", "a trip to Lagos", "moving to Kisumu".
MOTION_WORDS = frozenset("""
go goes going went travel travels traveled travelled traveling travelling move moves moved moving fly flies
flew flying drive drives drove driving trip trips flight flights relocate relocated relocating immigrate
immigrated emigrate emigrated return returned returning commute commuting vacation holiday journey road
ticket tickets route way
""".split())
# Verbs whose object is usually a person: "tell X", "supervised X", "congratulate X".
PERSON_VERBS = frozenset("""
tell ask email e-mail text call invite remind thank congratulate supervise hire fire meet cc message
introduce pay visit marry date contact inform notify mentor interview promote recommend greet hug
""".split())
# Verbs whose subject is usually a private person in a request: "X told me", "X keeps interrupting".
SUBJECT_VERBS = frozenset("""
told tells asked asks wants wanted texted emailed messaged replied refuses refused owes owed borrowed
promised yelled complained
""".split())
# Capitalized words that follow a cue without being a name ("Hi team,", "Dear Sir", "my boss I").
# Not "will": "my cousin Will" is a name more often than a question starts there.
NOT_NAMES = frozenset("""
i you he she we they it me him her us them the a an and or but to for at in on of with team all
everyone everybody there guys folks sir madam dear hi hello hey thanks thank please sorry yes no
again so just here who what when where why how is was are be would can could should
""".split())

DETERMINERS = frozenset({"the", "a", "an", "this", "that", "these", "those", "its"}) | POSSESSIVES
# "X's birthday", "X's wedding": events of a person's life
LIFE_EVENTS = frozenset("""
birthday bday wedding funeral graduation retirement anniversary baby shower christening baptism
bar bat mitzvah engagement farewell housewarming memorial quinceañera
""".split())
DEPARTMENTS = frozenset("""
accounting finance hr sales marketing legal it support engineering ops operations procurement payroll
admissions billing reception security facilities management research
""".split())


# What only people keep doing ("X keeps interrupting"; "X keeps crashing" is a program)
HUMAN_HABITS = frozenset("""
interrupting disrupting bullying ignoring yelling shouting texting calling emailing messaging complaining
teasing lying stealing borrowing flirting gossiping criticizing criticising undermining mocking insulting
harassing talking crying asking blaming avoiding cancelling canceling skipping procrastinating
""".split())


def _in(*words) -> dict:
    """A token whose lower-case text is one of the words (sets of words or single words)."""
    flat = set()
    for w in words:
        flat |= {w} if isinstance(w, str) else set(w)
    return {"LOWER": {"IN": sorted(flat)}}


_ANY = {}
_APART = _in(",", "(")
# A cue ends right before the token it marks: each pattern matches the tokens before a name. name_rules
# (_cue_before) checks the labels in the order of its rules and adds the conditions no pattern says.
CUE_PATTERNS = [
    # "Dr. X", "Mr X" (spaCy keeps the period on a title, or splits it off)
    {"label": "title", "pattern": [{"LOWER": {"REGEX": r"^(?:" + "|".join(sorted(TITLES)) + r")\.*\Z"}}]},
    {"label": "title", "pattern": [_in(TITLES), {"LOWER": "."}]},
    # "my colleague X", "my new boss X", "our tenant X", "my mother, X", "the patient, X", "our designer, X",
    # "their founder (X)", "the client's CTO (X)"; the word before the name is the relation or role
    {"label": "possessed", "pattern": [_in(ROLES), {"LOWER": "("}]},
    {"label": "possessed", "pattern": [_in(POSSESSIVES), _in(RELATIONS, ROLES)]},
    {"label": "possessed", "pattern": [_in(POSSESSIVES), _ANY, _in(RELATIONS, ROLES)]},
    {"label": "possessed", "pattern": [_in(POSSESSIVES), _in(RELATIONS, ROLES), _APART]},
    {"label": "possessed", "pattern": [_in(POSSESSIVES), _ANY, _in(RELATIONS, ROLES), _APART]},
    {"label": "possessed", "pattern": [{"LOWER": "the"}, _in(RELATIONS), _APART]},
    {"label": "possessed", "pattern": [{"LOWER": "the"}, _ANY, _in(RELATIONS), _APART]},
    # "a card for aunt Marta's 60th", "Uncle Desmond", "tell grandpa walt"
    {"label": "kinship", "pattern": [_in(KINSHIP_TITLES)]},
    # "a fight with X", "an argument between X and Y", "a letter to X", "broke up with X"
    {"label": "interaction", "pattern": [_in(INTERACTION_NOUNS, INTERACTION_VERBS), _in(INTERACTION_PREPOSITIONS)]},
    *({"label": "interaction", "pattern": [{"LOWER": a}, {"LOWER": b}, _in(INTERACTION_PREPOSITIONS)]}
      for a, b in INTERACTION_VERB_PAIRS),
    {"label": "thanks so much", "pattern": [_in("thanks", "you"), {"LOWER": "so"}, {"LOWER": "much"}]},
    # "Dear X", "Hi X,", "Thank you X" (where a line or sentence starts)
    {"label": "salutation", "pattern": [_in(SALUTATIONS)]},
    {"label": "salutation", "pattern": [{"LOWER": "thank"}, {"LOWER": "you"}]},
    # a sign-off, then commas, dashes or line breaks, then the name: "Best,\nX", "Cheers, X"
    {"label": "sign-off", "pattern": [_in(SIGN_OFFS), {"TEXT": {"REGEX": r"^(?:\s+|,|-|—)\Z"}, "OP": "+"}]},
    # "a girl named Lila", "my coworker called dusan"
    {"label": "named", "pattern": [_in(PERSON_NOUNS, RELATIONS, ROLES), _in("named", "called")]},
    *({"label": "introduction", "pattern": [{"LOWER": w} for w in cue]} for cue in INTRODUCTIONS),
    # "From: X", "cc X" (at the start of a line but for "cc", "attn")
    *({"label": "header", "pattern": [{"LOWER": w} for w in cue]} for cue in HEADERS),
    # "Attendees: X, Y and Z"
    {"label": "people label", "pattern": [_in(PEOPLE_LABELS), {"LOWER": ":"}]},
    # "— X" on a line of its own: a signature
    {"label": "dash", "pattern": [_in("—", "–", "--")]},
    # "go to X", "a trip to X": a destination, not an addressee
    {"label": "motion", "pattern": [_in(MOTION_WORDS), {"LOWER": "to"}]},
    # "me and X"
    {"label": "me and", "pattern": [_in("me", "i"), {"LOWER": "and"}]},
]
# What follows a name and marks a private person's: each pattern starts right after the name.
AFTER_NAME_PATTERNS = [
    # "X, my landlord,"
    {"label": "apposition", "pattern": [{"LOWER": ","}, _in(POSSESSIVES), _in(RELATIONS)]},
    # "X's wedding", "X's 40th birthday"
    {"label": "life event", "pattern": [_in("'s", "’s"), _in(LIFE_EVENTS)]},
    {"label": "life event", "pattern": [_in("'s", "’s"), _ANY, _in(LIFE_EVENTS)]},
    # "X from accounting"
    {"label": "department", "pattern": [{"LOWER": "from"}, _in(DEPARTMENTS)]},
    # "sunny told me"
    {"label": "report", "pattern": [_in(SUBJECT_VERBS), _in("me", "us")]},
    # "X keeps interrupting me"
    {"label": "habit", "pattern": [_in("keeps", "kept", "always", "constantly"), _in(HUMAN_HABITS)]},
]
# A public office, title or trade of fame right before the name: "Senator Rand Paul", "CNN news anchor
# Erin Burnett", "actress Cameron Diaz", "President Lincoln" (name_rules._PUBLIC_ROLE: the words of a
# phrase are matched case-insensitively, with any whitespace between them, on the raw text)
PUBLIC_ROLES = (
    "vice president", "president", "senator", "sen.", "congressman", "congresswoman", "congressperson",
    "congressmember", "congress person", "governor", "prime minister", "chancellor", "king", "queen", "pope",
    "emperor", "empress", "dictator", "actor", "actress", "singer", "rapper", "musician", "songwriter", "comedian",
    "news anchor", "anchor", "anchorman", "anchorwoman", "journalist", "novelist", "author", "poet", "playwright",
    "composer", "painter", "filmmaker", "film director", "movie director", "talk show host", "tv host",
    "radio host", *(f"{sport} player" for sport in ("basketball", "baseball", "football", "soccer", "tennis", "hockey",
                                                      "golf", "chess", "nba", "nfl")),
    "quarterback", "golfer", "boxer", "billionaire", "celebrity", "youtuber", "physicist", "philosopher", "economist",
    "apostle", "prophet",
)

# Words after which a capitalized word in a sentence of another language is a place, not a person
# (the second set of eval/pii/pii_real.py: "по Волхову плывут", "о городе Одинцово"): prepositions of
# place and motion, and nouns of a settlement or a river, in Russian, Ukrainian, Polish, Czech and the
# Romance languages. Not "у", "к", "с", "à", "a": they also come before people ("у Маши", "lettre à Marie").
PLACE_BEFORE_FOREIGN = frozenset("""
в во из по до через около возле вдоль над под город городе города городу городом городка село селе селу деревня
деревне деревни река реке реки реку рекой озеро озере озера область области край крае улица улице улицы столица
столице місто місті місто річка річці w we miasto mieście wieś wsi rzeka rzece v ve město městě obec obci řeka
řece en ciudad cidade città ville río rio fiume pueblo vila villa dans depuis
""".split())
# Last words of a place name whose words are all English words ("Old Town", "Palm Springs", "Green Bay").
PLACE_NOUNS = frozenset("""
town city village county borough district park square street avenue road lane bridge hill hills valley beach
lake river island islands bay harbor harbour heights springs falls gardens station port mountain mountains
""".split())
