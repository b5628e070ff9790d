"""Planted facets for the synthetic sample (beam_jobs.generate_sample --facet_mix).

Ten of the planted topics, each with one kind of request (an answer id of the request_kind facet in
beam_jobs/resources/default_facets.json) and known language shares: a conversation of the topic is
in language L with the declared probability, else English. Every user turn of such a conversation is
written in its language from the templates below and asks for the topic's kind, so the planted
language and kind are the truth the facet classifiers are measured against
(eval/utility/facet_accuracy.py). Everything here was written for this project (no user data); slot
values are per language, so a Spanish turn has Spanish words in its slots.
"""

from __future__ import annotations

import dataclasses
import random


@dataclasses.dataclass(frozen=True)
class Phrasing:
    """One language's user turns for a facet topic: templates with {slots}, and each slot's values."""

    templates: tuple[str, ...]
    slots: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class FacetTopic:
    topic: str  # a PlantedTopic's name (beam_jobs.sample_topics)
    request_kind: str
    languages: dict[str, float]  # language (ISO 639-1) -> share of the topic's conversations; the rest English
    phrasings: dict[str, Phrasing]  # "en" and every language of `languages`

    def language(self, rng: random.Random) -> str:
        draw, cumulative = rng.random(), 0.0
        for code, share in self.languages.items():
            cumulative += share
            if draw < cumulative:
                return code
        return "en"

    def turns(self, language: str, rng: random.Random) -> list[str]:
        """One or two distinct user turns in `language`, slots filled."""
        phrasing = self.phrasings[language]
        chosen = rng.sample(phrasing.templates, k=rng.randint(1, min(2, len(phrasing.templates))))
        return [t.format(**{slot: rng.choice(values) for slot, values in phrasing.slots.items()}) for t in chosen]


_ERRORS = ("KeyError", "TypeError", "IndexError", "ValueError")
_FUNCS = ("json.loads", "sorted()", "dict.get", "open()")
_COLUMNS = ("customer_id", "order_date", "status", "country_code")
_EQUATIONS = ("3x + 7 = 22", "x^2 - 5x + 6 = 0", "2x - 4 = 10", "x^2 + 2x - 15 = 0")
_FUNCTIONS = ("x^2 * e^x", "sin(x) * cos(x)", "x^3 - 2x", "ln(x) / x")

FACET_TOPICS: tuple[FacetTopic, ...] = (
    FacetTopic("python debugging", "coding", {"zh": 0.15}, {
        "en": Phrasing((
            "Fix this Python function, it raises {error} when I call {func}.",
            "Write a Python function that reads a CSV file into a list of dicts without raising {error}.",
            "Please correct my Python code: the loop over the list fails with {error} inside {func}.",
        ), {"error": _ERRORS, "func": _FUNCS}),
        "zh": Phrasing((
            "请帮我修复这个Python函数，调用{func}的时候出现{error}错误。",
            "帮我写一个Python函数，读取CSV文件并返回字典列表，不要出现{error}。",
            "我的Python代码在循环里报{error}错误，请帮我改一下代码。",
        ), {"error": _ERRORS, "func": _FUNCS}),
    }),
    FacetTopic("sql databases", "coding", {"de": 0.2}, {
        "en": Phrasing((
            "Write a SQL query that counts the orders per {col} in the orders table.",
            "Rewrite my SQL query so that it groups by {col} with a window function.",
            "Write the SQL to find duplicate rows by the {col} column in PostgreSQL.",
        ), {"col": _COLUMNS}),
        "de": Phrasing((
            "Schreib mir bitte eine SQL-Abfrage, die die Bestellungen pro {col} in der Tabelle zählt.",
            "Kannst du meine SQL-Abfrage so umschreiben, dass sie mit einer Fensterfunktion nach {col} gruppiert?",
            "Wie finde ich mit SQL doppelte Zeilen anhand der Spalte {col} in meiner PostgreSQL-Datenbank?",
        ), {"col": _COLUMNS}),
    }),
    FacetTopic("essay writing", "writing", {"fr": 0.25}, {
        "en": Phrasing((
            "Write an introduction for my essay about {subject}.",
            "Draft a five paragraph essay arguing that {subject} matters more than people think.",
            "Write a strong conclusion paragraph for my school essay on {subject}.",
        ), {"subject": ("climate change", "social media and teenagers", "the industrial revolution",
                        "renewable energy")}),
        "fr": Phrasing((
            "Rédige une introduction pour ma dissertation sur {subject}.",
            "Écris une dissertation en cinq paragraphes qui défend l'idée que {subject} est plus important qu'on ne le croit.",
            "Peux-tu écrire la conclusion de mon devoir de français sur {subject} ?",
        ), {"subject": ("le changement climatique", "les réseaux sociaux et les adolescents",
                        "la révolution industrielle", "les énergies renouvelables")}),
    }),
    FacetTopic("poetry and creative writing", "writing", {"es": 0.4}, {
        "en": Phrasing((
            "Write a short poem about {theme} that rhymes.",
            "Write a short story about {theme} for a creative writing class.",
            "Can you write song lyrics about {theme}?",
        ), {"theme": ("the sea at night", "an old lighthouse", "autumn leaves", "a lost friendship")}),
        "es": Phrasing((
            "Escribe un poema corto que rime sobre {theme}.",
            "Escríbeme un cuento breve sobre {theme} para mi taller de escritura.",
            "¿Puedes escribir la letra de una canción sobre {theme}?",
        ), {"theme": ("el mar de noche", "un viejo faro", "las hojas de otoño", "una amistad perdida")}),
    }),
    FacetTopic("language learning", "translation", {"es": 0.3, "fr": 0.1}, {
        "en": Phrasing((
            "Translate this sentence into {target}: '{phrase}'.",
            "How do you say '{phrase}' in {target}?",
            "Please translate the following text into {target}: {phrase}.",
        ), {"target": ("Spanish", "French", "German", "Italian"),
            "phrase": ("where is the train station", "I would like a cup of coffee", "see you tomorrow morning",
                       "how much does this cost")}),
        "es": Phrasing((
            "Traduce al inglés esta frase: «{phrase}».",
            "¿Cómo se traduce «{phrase}» al inglés?",
            "Necesito la traducción al inglés de este texto: {phrase}.",
        ), {"phrase": ("¿dónde está la estación de tren?", "quisiera un café con leche", "nos vemos mañana por la mañana",
                       "¿cuánto cuesta esto?")}),
        "fr": Phrasing((
            "Traduis en anglais cette phrase : « {phrase} ».",
            "Comment traduire « {phrase} » en anglais ?",
            "Peux-tu me donner la traduction anglaise de ce texte : {phrase} ?",
        ), {"phrase": ("où est la gare", "je voudrais un café", "à demain matin", "combien ça coûte")}),
    }),
    FacetTopic("math homework", "math", {"de": 0.1, "zh": 0.1}, {
        "en": Phrasing((
            "Solve the equation {eq} step by step.",
            "Calculate the integral of {fn} from 0 to 1 and show the steps.",
            "What is the derivative of {fn}? Please show your work.",
        ), {"eq": _EQUATIONS, "fn": _FUNCTIONS}),
        "de": Phrasing((
            "Löse die Gleichung {eq} bitte Schritt für Schritt.",
            "Berechne das Integral von {fn} zwischen 0 und 1 mit allen Zwischenschritten.",
            "Wie lautet die Ableitung von {fn}? Bitte mit Rechenweg.",
        ), {"eq": _EQUATIONS, "fn": _FUNCTIONS}),
        "zh": Phrasing((
            "请一步一步地解这个方程：{eq}。",
            "计算{fn}从0到1的定积分，并写出步骤。",
            "求函数{fn}的导数，请写出详细的计算过程。",
        ), {"eq": _EQUATIONS, "fn": _FUNCTIONS}),
    }),
    FacetTopic("travel planning", "brainstorming", {"fr": 0.3, "de": 0.1}, {
        "en": Phrasing((
            "Give me some ideas for a three day trip to {city}.",
            "Brainstorm fun things to do in {city} with two kids.",
            "Suggest a few creative ideas for a weekend in {city} on a small budget.",
        ), {"city": ("Lisbon", "Kyoto", "Montreal", "Edinburgh")}),
        "fr": Phrasing((
            "Donne-moi des idées pour un voyage de trois jours à {city}.",
            "Propose-moi des activités amusantes à faire à {city} avec deux enfants.",
            "Quelles idées originales pour un week-end à {city} avec un petit budget ?",
        ), {"city": ("Lisbonne", "Kyoto", "Montréal", "Édimbourg")}),
        "de": Phrasing((
            "Gib mir ein paar Ideen für eine dreitägige Reise nach {city}.",
            "Was kann man in {city} mit zwei Kindern unternehmen? Sammle bitte ein paar Ideen.",
            "Hast du kreative Ideen für ein Wochenende in {city} mit wenig Geld?",
        ), {"city": ("Lissabon", "Kyoto", "Montreal", "Edinburgh")}),
    }),
    FacetTopic("relationship advice", "advice", {"es": 0.2, "pt": 0.15}, {
        "en": Phrasing((
            "My partner and I keep arguing about {issue}. What should I do?",
            "Should I talk to my boyfriend about {issue} or let it go? I need advice.",
            "How can I deal with constant fights about {issue} in my relationship?",
        ), {"issue": ("money", "household chores", "his friends", "where to live")}),
        "es": Phrasing((
            "Mi pareja y yo discutimos siempre por {issue}. ¿Qué debería hacer?",
            "¿Debería hablar con mi novio sobre {issue} o dejarlo pasar? Necesito un consejo.",
            "¿Cómo puedo manejar las peleas constantes por {issue} en mi relación?",
        ), {"issue": ("el dinero", "las tareas de la casa", "sus amigos", "dónde vivir")}),
        "pt": Phrasing((
            "Eu e o meu namorado brigamos sempre por causa de {issue}. O que devo fazer?",
            "Devo conversar com a minha namorada sobre {issue} ou deixar para lá? Preciso de um conselho.",
            "Como posso lidar com as brigas constantes sobre {issue} no meu relacionamento?",
        ), {"issue": ("dinheiro", "as tarefas de casa", "os amigos dele", "onde morar")}),
    }),
    FacetTopic("video games", "role_play", {"ja": 0.2}, {
        "en": Phrasing((
            "Pretend you are the dungeon master of a fantasy game and start my quest in {place}.",
            "Let's role play: you are a grumpy blacksmith in {place} and I am a young knight.",
            "Stay in character as the narrator of a text adventure that begins in {place}.",
        ), {"place": ("a haunted castle", "a desert city", "a pirate harbour", "a frozen forest")}),
        "ja": Phrasing((
            "ファンタジーゲームのゲームマスターになりきって、{place}から私の冒険を始めてください。",
            "ロールプレイをしましょう。あなたは{place}に住む頑固な鍛冶屋で、私は若い騎士です。",
            "{place}から始まるテキストアドベンチャーの語り手として、キャラクターを崩さずに進めてください。",
        ), {"place": ("幽霊の出る城", "砂漠の都市", "海賊の港", "凍った森")}),
    }),
    FacetTopic("physics and chemistry", "explanation", {"ru": 0.15}, {
        "en": Phrasing((
            "Explain how {concept} works in simple terms.",
            "What is the difference between {concept} and a normal chemical reaction?",
            "Why does {concept} happen? Explain it like I am fifteen.",
        ), {"concept": ("nuclear fission", "photosynthesis", "electrolysis", "radioactive decay")}),
        "ru": Phrasing((
            "Объясни простыми словами, как работает {concept}.",
            "Чем {concept} отличается от обычной химической реакции?",
            "Почему происходит {concept}? Объясни так, как будто мне пятнадцать лет.",
        ), {"concept": ("ядерное деление", "фотосинтез", "электролиз", "радиоактивный распад")}),
    }),
)


def facet_topic(name: str) -> FacetTopic:
    return next(topic for topic in FACET_TOPICS if topic.topic == name)
