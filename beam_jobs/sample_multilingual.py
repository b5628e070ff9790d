"""A multilingual planted-subject set of chatbot requests: does an embedding model group requests by
subject rather than by language?

    python -m beam_jobs.sample_multilingual --output sample/multilingual.jsonl --per_cell 30 --seed 7

Eight subjects (each the name of a category of beam_jobs/resources/default_keywords.txt, none about
language) times twelve languages (ISO 639-1 codes). Every (subject, language) cell has six request
templates and eight slot fillers, written natively in the language's own script, so a cell can produce
48 distinct requests. Both are aligned by index across languages: template i says the same thing in
every language, and filler j is the same concept (the same dish, city, symptom...), so `parallel_pairs`
gives the English request beside the same request in another language, for measuring cross-language
similarity. Templates are written so that every filler fits them grammatically (case, gender, particles
and articles are fixed by the template's construction, not by the filler). No request mentions a language,
translation or the speaker's country; Travel's destinations are cities.

Each record is a one-turn conversation (the user's request only: an assistant reply in English would add
a language signal of its own) in the pipeline's input schema, plus the truth fields `subject` and
`language` (ignored by the pipeline's reader, like generate_sample's planted fields). Users are people:
each writes 1 to 3 conversations, all in one (subject, language) cell. Everything here was written for
this project (no user data).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import gzip
import json
import os
import random

LANGUAGES: tuple[str, ...] = ("en", "es", "fr", "de", "pt", "it", "zh", "ru", "ar", "hi", "ja", "ko")
SUBJECTS: tuple[str, ...] = ("Food and cooking", "Travel", "Python coding", "Health and symptoms", "Education and study",
                             "Money and finance", "Home and garden", "Cars and transport")
SLOT = "{x}"
DAY = dt.date(2026, 11, 1)


@dataclasses.dataclass(frozen=True)
class _Subject:
    """One subject's requests: per language, templates with one SLOT, and the slot's fillers; both lists
    aligned by index across languages."""

    fillers: dict[str, tuple[str, ...]]
    templates: dict[str, tuple[str, ...]]


_FOOD = _Subject(
    fillers={
        "en": ("chicken curry", "pancakes", "mushroom risotto", "banana bread", "fried rice", "apple pie",
               "vegetable soup", "chocolate cake"),
        "es": ("un curry de pollo", "tortitas", "un risotto de setas", "pan de plátano", "arroz frito",
               "una tarta de manzana", "una sopa de verduras", "un bizcocho de chocolate"),
        "fr": ("un curry de poulet", "des pancakes", "un risotto aux champignons", "un cake à la banane",
               "du riz sauté", "une tarte aux pommes", "une soupe de légumes", "un gâteau au chocolat"),
        "de": ("Hähnchencurry", "Pfannkuchen", "Pilzrisotto", "Bananenbrot", "Bratreis", "Apfelkuchen",
               "Gemüsesuppe", "Schokoladenkuchen"),
        "pt": ("um curry de frango", "panquecas", "um risoto de cogumelos", "pão de banana", "arroz frito",
               "uma torta de maçã", "uma sopa de legumes", "um bolo de chocolate"),
        "it": ("il pollo al curry", "i pancake", "il risotto ai funghi", "il pane alla banana", "il riso saltato",
               "la torta di mele", "la zuppa di verdure", "la torta al cioccolato"),
        "zh": ("咖喱鸡", "松饼", "蘑菇烩饭", "香蕉面包", "炒饭", "苹果派", "蔬菜汤", "巧克力蛋糕"),
        "ru": ("куриное карри", "блины", "ризотто с грибами", "банановый хлеб", "жареный рис", "яблочный пирог",
               "овощной суп", "шоколадный торт"),
        "ar": ("كاري الدجاج", "البان كيك", "ريزوتو الفطر", "خبز الموز", "الأرز المقلي", "فطيرة التفاح",
               "شوربة الخضار", "كعكة الشوكولاتة"),
        "hi": ("चिकन करी", "पैनकेक", "मशरूम रिसोट्टो", "बनाना ब्रेड", "फ्राइड राइस", "एप्पल पाई",
               "वेजिटेबल सूप", "चॉकलेट केक"),
        "ja": ("チキンカレー", "パンケーキ", "きのこのリゾット", "バナナブレッド", "チャーハン", "アップルパイ",
               "野菜スープ", "チョコレートケーキ"),
        "ko": ("치킨 카레", "팬케이크", "버섯 리조또", "바나나 브레드", "볶음밥", "애플파이", "채소 수프",
               "초콜릿 케이크"),
    },
    templates={
        "en": (
            "How do I make {x} at home? Please give me a simple recipe.",
            "Give me a step-by-step recipe to prepare {x} for four people.",
            "I'm cooking {x} for friends on Saturday and it's my first time. What mistakes should I avoid?",
            "What ingredients do I need to prepare {x}, and how long does it take?",
            "Can I prepare {x} the day before and reheat the dish the next day? What is the best way to store it?",
            "Suggest a healthier way to prepare {x}, with less fat and less sugar.",
        ),
        "es": (
            "¿Cómo hago {x} en casa? Dame una receta sencilla, por favor.",
            "Dame una receta paso a paso para preparar {x} para cuatro personas.",
            "El sábado voy a cocinar {x} para unos amigos y es la primera vez. ¿Qué errores debo evitar?",
            "¿Qué ingredientes necesito para preparar {x} y cuánto tiempo se tarda?",
            "¿Puedo preparar {x} el día anterior y recalentar el plato al día siguiente? ¿Cuál es la mejor forma "
            "de guardarlo?",
            "Sugiéreme una forma más sana de preparar {x}, con menos grasa y menos azúcar.",
        ),
        "fr": (
            "Comment faire {x} à la maison ? Donne-moi une recette simple, s'il te plaît.",
            "Donne-moi une recette étape par étape pour préparer {x} pour quatre personnes.",
            "Je prépare {x} pour des amis samedi, et c'est la première fois. Quelles erreurs dois-je éviter ?",
            "De quels ingrédients ai-je besoin pour préparer {x}, et combien de temps faut-il ?",
            "Est-ce que je peux préparer {x} la veille et réchauffer le plat le lendemain ? Quelle est la meilleure "
            "façon de le conserver ?",
            "Propose-moi une façon plus saine de préparer {x}, avec moins de gras et moins de sucre.",
        ),
        "de": (
            "Wie mache ich {x} zu Hause? Gib mir bitte ein einfaches Rezept.",
            "Gib mir ein Rezept Schritt für Schritt, um {x} für vier Personen zuzubereiten.",
            "Ich koche am Samstag {x} für Freunde und mache das zum ersten Mal. Welche Fehler sollte ich vermeiden?",
            "Welche Zutaten brauche ich, um {x} zuzubereiten, und wie lange dauert das?",
            "Kann ich {x} am Vortag zubereiten und das Essen am nächsten Tag aufwärmen? Wie bewahre ich es am "
            "besten auf?",
            "Schlag mir eine gesündere Art vor, {x} zuzubereiten, mit weniger Fett und weniger Zucker.",
        ),
        "pt": (
            "Como eu faço {x} em casa? Me passa uma receita simples, por favor.",
            "Me dê uma receita passo a passo para preparar {x} para quatro pessoas.",
            "Vou preparar {x} para uns amigos no sábado e é a primeira vez. Que erros eu devo evitar?",
            "Quais ingredientes eu preciso para preparar {x}, e quanto tempo leva?",
            "Posso preparar {x} na véspera e esquentar o prato no dia seguinte? Qual é a melhor forma de guardar?",
            "Sugira um jeito mais saudável de preparar {x}, com menos gordura e menos açúcar.",
        ),
        "it": (
            "Come faccio a preparare {x} in casa? Dammi una ricetta semplice, per favore.",
            "Dammi una ricetta passo passo per preparare {x} per quattro persone.",
            "Sabato cucino {x} per alcuni amici ed è la prima volta. Quali errori devo evitare?",
            "Quali ingredienti servono per preparare {x}, e quanto tempo ci vuole?",
            "Posso preparare {x} il giorno prima e riscaldare il piatto il giorno dopo? Qual è il modo migliore "
            "per conservarlo?",
            "Suggeriscimi un modo più sano per preparare {x}, con meno grassi e meno zucchero.",
        ),
        "zh": (
            "在家怎么做{x}？请给我一个简单的食谱。",
            "请给我一份分步骤的{x}做法，够四个人吃。",
            "我周六要给朋友做{x}，这是我第一次做。有哪些错误需要避免？",
            "做{x}需要准备哪些材料？大概要花多长时间？",
            "{x}可以提前一天做好，第二天再加热吗？怎么保存最好？",
            "推荐一种更健康的{x}做法，少油少糖。",
        ),
        "ru": (
            "Как приготовить {x} дома? Дай, пожалуйста, простой рецепт.",
            "Напиши пошаговый рецепт, как приготовить {x} на четырёх человек.",
            "В субботу я готовлю {x} для друзей и делаю это впервые. Каких ошибок стоит избегать?",
            "Какие продукты нужны, чтобы приготовить {x}, и сколько времени это займёт?",
            "Можно ли приготовить {x} накануне и разогреть на следующий день? Как лучше хранить готовое блюдо?",
            "Предложи более полезный способ приготовить {x}, с меньшим количеством жира и сахара.",
        ),
        "ar": (
            "كيف أحضّر {x} في البيت؟ أعطني وصفة بسيطة من فضلك.",
            "اكتب لي وصفة خطوة بخطوة لتحضير {x} لأربعة أشخاص.",
            "سأطبخ {x} لأصدقائي يوم السبت، وهذه أول مرة أطبخ فيها هذا الطبق. ما الأخطاء التي يجب أن أتجنبها؟",
            "ما المكونات التي أحتاجها لتحضير {x}، وكم من الوقت يستغرق ذلك؟",
            "هل يمكنني تحضير {x} في اليوم السابق وتسخين الطبق في اليوم التالي؟ ما أفضل طريقة لحفظه؟",
            "اقترح علي طريقة صحية أكثر لتحضير {x}، بدهون أقل وسكر أقل.",
        ),
        "hi": (
            "घर पर {x} कैसे बनाते हैं? कोई आसान रेसिपी बताइए।",
            "चार लोगों के लिए {x} बनाने की स्टेप-बाय-स्टेप रेसिपी बताइए।",
            "मैं शनिवार को दोस्तों के लिए {x} बनाने वाला हूँ और पहली बार बना रहा हूँ। मुझे किन गलतियों से बचना चाहिए?",
            "{x} बनाने के लिए कौन-कौन सी चीज़ें चाहिए, और इसमें कितना समय लगता है?",
            "क्या मैं {x} एक दिन पहले बनाकर अगले दिन गरम कर सकता हूँ? इसे रखने का सबसे अच्छा तरीका क्या है?",
            "{x} को ज़्यादा हेल्दी तरीके से बनाने का तरीका बताइए, जिसमें कम तेल और कम चीनी हो।",
        ),
        "ja": (
            "家で{x}を作るにはどうすればいいですか？簡単なレシピを教えてください。",
            "{x}を4人分作る手順を、ステップごとに教えてください。",
            "土曜日に友達のために{x}を作りますが、作るのは初めてです。気をつけるべき失敗はありますか？",
            "{x}を作るにはどんな材料が必要ですか？また、どのくらい時間がかかりますか？",
            "{x}を前の日に作っておいて、次の日に温め直してもいいですか？一番いい保存方法も教えてください。",
            "脂肪と砂糖を控えた、もっとヘルシーな{x}の作り方を提案してください。",
        ),
        "ko": (
            "집에서 {x} 만드는 법 알려 주세요. 간단한 레시피면 좋겠어요.",
            "4인분 {x} 레시피를 단계별로 자세히 알려 주세요.",
            "토요일에 친구들한테 {x} 만들어 주려고 하는데 처음 해 봐요. 어떤 실수를 조심해야 하나요?",
            "{x} 만들 때 어떤 재료가 필요하고 시간은 얼마나 걸려요?",
            "{x} 하루 전에 미리 만들어 놨다가 다음 날 데워 먹어도 되나요? 보관은 어떻게 하는 게 제일 좋아요?",
            "기름이랑 설탕을 줄여서 더 건강하게 {x} 만드는 방법을 추천해 주세요.",
        ),
    },
)

_TRAVEL = _Subject(
    fillers={
        "en": ("Lisbon", "Kyoto", "Rome", "Prague", "Istanbul", "Vienna", "Barcelona", "Budapest"),
        "es": ("Lisboa", "Kioto", "Roma", "Praga", "Estambul", "Viena", "Barcelona", "Budapest"),
        "fr": ("Lisbonne", "Kyoto", "Rome", "Prague", "Istanbul", "Vienne", "Barcelone", "Budapest"),
        "de": ("Lissabon", "Kyoto", "Rom", "Prag", "Istanbul", "Wien", "Barcelona", "Budapest"),
        "pt": ("Lisboa", "Quioto", "Roma", "Praga", "Istambul", "Viena", "Barcelona", "Budapeste"),
        "it": ("Lisbona", "Kyoto", "Roma", "Praga", "Istanbul", "Vienna", "Barcellona", "Budapest"),
        "zh": ("里斯本", "京都", "罗马", "布拉格", "伊斯坦布尔", "维也纳", "巴塞罗那", "布达佩斯"),
        # The prepositional case: every Russian template has "в {x}".
        "ru": ("Лиссабоне", "Киото", "Риме", "Праге", "Стамбуле", "Вене", "Барселоне", "Будапеште"),
        "ar": ("لشبونة", "كيوتو", "روما", "براغ", "إسطنبول", "فيينا", "برشلونة", "بودابست"),
        "hi": ("लिस्बन", "क्योटो", "रोम", "प्राग", "इस्तांबुल", "वियना", "बार्सिलोना", "बुडापेस्ट"),
        "ja": ("リスボン", "京都", "ローマ", "プラハ", "イスタンブール", "ウィーン", "バルセロナ", "ブダペスト"),
        "ko": ("리스본", "교토", "로마", "프라하", "이스탄불", "빈", "바르셀로나", "부다페스트"),
    },
    templates={
        "en": (
            "What should I see in {x} if I only have three days?",
            "Plan a one-week itinerary in {x} for a couple with a medium budget.",
            "I'll be in {x} in March with two small children. Which neighbourhood is best to stay in?",
            "What is the cheapest way to get around in {x}? Is public transport easy for tourists?",
            "Recommend some restaurants and markets in {x} where locals go, not tourist traps.",
            "Is it safe to walk around at night in {x}? This is my first time travelling alone.",
        ),
        "es": (
            "¿Qué debería ver en {x} si solo tengo tres días?",
            "Organízame un itinerario de una semana en {x} para una pareja con un presupuesto medio.",
            "En marzo voy a estar en {x} con dos niños pequeños. ¿En qué barrio es mejor alojarse?",
            "¿Cuál es la forma más barata de moverse en {x}? ¿El transporte público es fácil para los turistas?",
            "Recomiéndame restaurantes y mercados en {x} a los que vaya la gente del lugar, no trampas para turistas.",
            "¿Es seguro pasear de noche en {x}? Es la primera vez que viajo sola.",
        ),
        "fr": (
            "Qu'est-ce que je dois voir à {x} si je n'ai que trois jours ?",
            "Prépare un itinéraire d'une semaine à {x} pour un couple avec un budget moyen.",
            "Je serai à {x} en mars avec deux jeunes enfants. Dans quel quartier vaut-il mieux loger ?",
            "Quel est le moyen le moins cher de se déplacer à {x} ? Les transports en commun sont-ils simples "
            "pour les touristes ?",
            "Recommande-moi des restaurants et des marchés à {x} où vont les habitants, pas des pièges à touristes.",
            "Est-ce que c'est sûr de se promener la nuit à {x} ? C'est la première fois que je voyage seule.",
        ),
        "de": (
            "Was sollte ich mir in {x} ansehen, wenn ich nur drei Tage Zeit habe?",
            "Plane eine Reiseroute für eine Woche in {x} für ein Paar mit mittlerem Budget.",
            "Ich bin im März mit zwei kleinen Kindern in {x}. In welchem Viertel übernachtet man am besten?",
            "Wie kommt man in {x} am günstigsten herum? Sind die öffentlichen Verkehrsmittel für Touristen "
            "einfach zu nutzen?",
            "Empfiehl mir Restaurants und Märkte in {x}, in die Einheimische gehen, keine Touristenfallen.",
            "Ist es sicher, nachts in {x} spazieren zu gehen? Ich reise zum ersten Mal allein.",
        ),
        "pt": (
            "O que eu devo visitar em {x} se só tenho três dias?",
            "Monte um roteiro de uma semana em {x} para um casal com orçamento médio.",
            "Vou estar em {x} em março com dois filhos pequenos. Qual é o melhor bairro para ficar?",
            "Qual é a forma mais barata de se locomover em {x}? O transporte público é fácil para turistas?",
            "Me indique restaurantes e mercados em {x} que os moradores frequentam, e não armadilhas para turistas.",
            "É seguro andar à noite em {x}? É a primeira vez que eu viajo sozinha.",
        ),
        "it": (
            "Cosa devo vedere a {x} se ho solo tre giorni?",
            "Organizzami un itinerario di una settimana a {x} per una coppia con un budget medio.",
            "A marzo sarò a {x} con due bambini piccoli. In quale quartiere conviene alloggiare?",
            "Qual è il modo più economico per spostarsi a {x}? I mezzi pubblici sono facili da usare per i turisti?",
            "Consigliami ristoranti e mercati a {x} dove va la gente del posto, non trappole per turisti.",
            "È sicuro passeggiare di notte a {x}? È la prima volta che viaggio da sola.",
        ),
        "zh": (
            "如果我在{x}只有三天时间，应该去看哪些地方？",
            "帮我规划一个在{x}玩一周的行程，两个人，预算中等。",
            "我三月份要带两个小孩去{x}。住在哪个区最合适？",
            "在{x}怎么出行最省钱？公共交通对游客来说方便吗？",
            "推荐一些{x}当地人常去的餐厅和市场，不要那种专门坑游客的地方。",
            "晚上在{x}街上走安全吗？这是我第一次一个人旅行。",
        ),
        "ru": (
            "Что обязательно посмотреть в {x}, если у меня всего три дня?",
            "Составь маршрут на неделю в {x} для пары со средним бюджетом.",
            "В марте я буду в {x} с двумя маленькими детьми. В каком районе лучше остановиться?",
            "Как дешевле всего передвигаться в {x}? Удобен ли общественный транспорт для туристов?",
            "Посоветуй рестораны и рынки в {x}, куда ходят местные жители, а не туристические ловушки.",
            "Безопасно ли гулять ночью в {x}? Я впервые путешествую одна.",
        ),
        "ar": (
            "ماذا يجب أن أزور في {x} إذا كان لدي ثلاثة أيام فقط؟",
            "ضع لي برنامج رحلة لمدة أسبوع في {x} لزوجين بميزانية متوسطة.",
            "سأكون في {x} في شهر مارس مع طفلين صغيرين. ما أفضل حي للإقامة فيه؟",
            "ما أرخص طريقة للتنقل في {x}؟ وهل المواصلات العامة سهلة الاستخدام للسياح؟",
            "انصحني بمطاعم وأسواق في {x} يرتادها السكان المحليون، وليست مصائد للسياح.",
            "هل التجول ليلاً في {x} آمن؟ هذه أول مرة أسافر فيها وحدي.",
        ),
        "hi": (
            "अगर मेरे पास सिर्फ़ तीन दिन हैं तो {x} में क्या-क्या देखना चाहिए?",
            "मध्यम बजट वाले एक कपल के लिए {x} में एक हफ़्ते घूमने का प्लान बनाइए।",
            "मैं मार्च में दो छोटे बच्चों के साथ {x} में रहूँगा। ठहरने के लिए कौन-सा इलाका सबसे अच्छा रहेगा?",
            "{x} में घूमने-फिरने का सबसे सस्ता तरीका क्या है? क्या पर्यटकों के लिए पब्लिक ट्रांसपोर्ट आसान है?",
            "{x} में ऐसे रेस्टोरेंट और बाज़ार बताइए जहाँ स्थानीय लोग जाते हैं, टूरिस्टों को लूटने वाली जगहें नहीं।",
            "क्या रात में {x} में पैदल घूमना सुरक्षित है? मैं पहली बार अकेले सफ़र कर रही हूँ।",
        ),
        "ja": (
            "{x}に3日間しかいられない場合、どこを見ておくべきですか？",
            "予算はふつうくらいで、カップルで{x}を1週間旅行するプランを立ててください。",
            "3月に小さい子ども2人を連れて{x}に行きます。泊まるならどのエリアがおすすめですか？",
            "{x}で一番安く移動する方法は何ですか？観光客でも公共交通機関は使いやすいですか？",
            "{x}で観光客向けではなく、地元の人が行くレストランや市場を教えてください。",
            "{x}で夜に出歩いても安全ですか？一人旅は今回が初めてです。",
        ),
        "ko": (
            "{x}에서 3일밖에 없으면 뭘 꼭 봐야 할까요?",
            "보통 예산으로 커플이 {x}에서 일주일 동안 여행할 일정을 짜 주세요.",
            "3월에 어린아이 둘을 데리고 {x}에 가요. 숙소는 어느 동네가 제일 좋을까요?",
            "{x}에서 제일 싸게 돌아다니는 방법이 뭐예요? 관광객도 대중교통을 이용하기 쉬운가요?",
            "{x}에서 관광객용 말고 현지인들이 가는 식당이랑 시장 좀 추천해 주세요.",
            "{x}에서 밤에 걸어 다녀도 안전한가요? 혼자 여행하는 건 이번이 처음이에요.",
        ),
    },
)

_PYTHON = _Subject(
    fillers={
        "en": ("read a CSV file into a list of dictionaries", "sort a list of dictionaries by one key",
               "remove duplicates from a list while keeping the order", "download a file from a URL",
               "count how often each word appears in a text file", "merge two dictionaries into one",
               "rename all the files in a folder", "send an email with an attachment"),
        "es": ("leer un archivo CSV y convertirlo en una lista de diccionarios",
               "ordenar una lista de diccionarios por una clave",
               "eliminar los duplicados de una lista sin perder el orden", "descargar un archivo desde una URL",
               "contar cuántas veces aparece cada palabra en un archivo de texto", "combinar dos diccionarios en uno",
               "renombrar todos los archivos de una carpeta", "enviar un correo electrónico con un archivo adjunto"),
        "fr": ("lire un fichier CSV et le transformer en liste de dictionnaires",
               "trier une liste de dictionnaires selon une clé",
               "supprimer les doublons d'une liste sans changer l'ordre", "télécharger un fichier à partir d'une URL",
               "compter combien de fois chaque mot apparaît dans un fichier texte",
               "fusionner deux dictionnaires en un seul", "renommer tous les fichiers d'un dossier",
               "envoyer un e-mail avec une pièce jointe"),
        # Each ends in its infinitive: the German templates use them after a modal verb.
        "de": ("eine CSV-Datei in eine Liste von Dictionaries einlesen",
               "eine Liste von Dictionaries nach einem Schlüssel sortieren",
               "Duplikate aus einer Liste entfernen und dabei die Reihenfolge behalten",
               "eine Datei von einer URL herunterladen", "die Häufigkeit jedes Wortes in einer Textdatei zählen",
               "zwei Dictionaries zu einem zusammenführen", "alle Dateien in einem Ordner umbenennen",
               "eine E-Mail mit Anhang verschicken"),
        "pt": ("ler um arquivo CSV e transformá-lo em uma lista de dicionários",
               "ordenar uma lista de dicionários por uma chave",
               "remover os itens duplicados de uma lista mantendo a ordem", "baixar um arquivo a partir de uma URL",
               "contar quantas vezes cada palavra aparece em um arquivo de texto", "juntar dois dicionários em um só",
               "renomear todos os arquivos de uma pasta", "enviar um e-mail com um anexo"),
        "it": ("leggere un file CSV e trasformarlo in una lista di dizionari",
               "ordinare una lista di dizionari in base a una chiave",
               "rimuovere i duplicati da una lista mantenendo l'ordine", "scaricare un file da un URL",
               "contare quante volte compare ogni parola in un file di testo", "unire due dizionari in uno solo",
               "rinominare tutti i file di una cartella", "inviare un'email con un allegato"),
        "zh": ("把CSV文件读成字典列表", "按某个键对字典列表排序", "在保持顺序的情况下去掉列表里的重复项",
               "从URL下载文件", "统计文本文件中每个单词出现的次数", "把两个字典合并成一个",
               "批量重命名文件夹里的所有文件", "发送带附件的电子邮件"),
        "ru": ("прочитать CSV-файл в список словарей", "отсортировать список словарей по ключу",
               "удалить дубликаты из списка с сохранением порядка", "скачать файл по ссылке",
               "подсчитать частоту каждого слова в текстовом файле", "объединить два словаря в один",
               "переименовать все файлы в папке", "отправить письмо с вложением"),
        # Verbal nouns (masdar) without the article, so that a template may attach "ل" or "ب" to them.
        "ar": ("قراءة ملف CSV وتحويله إلى قائمة من القواميس", "ترتيب قائمة من القواميس حسب مفتاح معين",
               "حذف العناصر المكررة من قائمة مع الحفاظ على الترتيب", "تنزيل ملف من رابط URL",
               "حساب عدد مرات ظهور كل كلمة في ملف نصي", "دمج قاموسين في قاموس واحد",
               "إعادة تسمية كل الملفات في مجلد", "إرسال بريد إلكتروني مع مرفق"),
        # Oblique infinitives (-ने): every Hindi template puts a postposition after the slot.
        "hi": ("CSV फ़ाइल को डिक्शनरी की लिस्ट में पढ़ने", "डिक्शनरी की लिस्ट को किसी एक फ़ील्ड के हिसाब से सॉर्ट करने",
               "लिस्ट का क्रम बनाए रखते हुए उसमें से डुप्लिकेट हटाने", "किसी URL से फ़ाइल डाउनलोड करने",
               "टेक्स्ट फ़ाइल में हर शब्द कितनी बार आता है, यह गिनने", "दो डिक्शनरी को मिलाकर एक बनाने",
               "किसी फ़ोल्डर की सारी फ़ाइलों के नाम बदलने", "अटैचमेंट के साथ ईमेल भेजने"),
        # Dictionary forms, which the templates follow with には, ため, 方法, のが...
        "ja": ("CSVファイルを読み込んで辞書のリストにする", "辞書のリストを特定のキーで並べ替える",
               "順番を保ったままリストの重複を取り除く", "URLからファイルをダウンロードする",
               "テキストファイルの各単語の出現回数を数える", "2つの辞書を1つにまとめる",
               "フォルダ内のファイル名をすべて変更する", "添付ファイル付きのメールを送信する"),
        # Sino-Korean nouns of 하다 verbs: every Korean template adds 하- to the slot.
        "ko": ("CSV 파일을 읽어서 딕셔너리 리스트로 변환", "딕셔너리 리스트를 특정 키 기준으로 정렬",
               "순서를 유지하면서 리스트의 중복을 제거", "URL에서 파일을 다운로드",
               "텍스트 파일에서 단어별 등장 횟수를 계산", "딕셔너리 두 개를 하나로 병합",
               "폴더 안의 파일 이름을 한꺼번에 변경", "첨부 파일이 있는 이메일을 전송"),
    },
    templates={
        "en": (
            "How can I {x} in Python? Please show me a short example.",
            "Write a Python function to {x}, with comments that explain each step.",
            "I'm learning Python and I'm stuck: I need to {x}, but my code doesn't work. What is the usual way to "
            "do it?",
            "What is the fastest way to {x} in Python when there is a lot of data?",
            "Is there a Python library that makes it easy to {x}?",
            "Explain to a beginner, step by step, how to {x} in Python.",
        ),
        "es": (
            "¿Cómo puedo {x} en Python? Muéstrame un ejemplo corto, por favor.",
            "Escribe una función en Python para {x}, con comentarios que expliquen cada paso.",
            "Estoy aprendiendo Python y me he atascado: necesito {x}, pero mi código no funciona. ¿Cuál es la "
            "forma habitual de hacerlo?",
            "¿Cuál es la manera más rápida de {x} en Python cuando hay muchos datos?",
            "¿Hay alguna biblioteca de Python que sirva para {x} de forma sencilla?",
            "Explícale a un principiante, paso a paso, cómo {x} en Python.",
        ),
        "fr": (
            "Comment est-ce que je peux {x} en Python ? Montre-moi un petit exemple, s'il te plaît.",
            "Écris une fonction Python pour {x}, avec des commentaires qui expliquent chaque étape.",
            "J'apprends Python et je suis bloqué : je dois {x}, mais mon code ne marche pas. Comment fait-on "
            "d'habitude ?",
            "Quelle est la méthode la plus rapide pour {x} en Python quand il y a beaucoup de données ?",
            "Existe-t-il une bibliothèque Python pratique pour {x} facilement ?",
            "Explique à un débutant, étape par étape, comment {x} en Python.",
        ),
        "de": (
            "Wie kann ich in Python {x}? Zeig mir bitte ein kurzes Beispiel.",
            "Schreib eine Python-Funktion, mit der man {x} kann, und erkläre jeden Schritt in Kommentaren.",
            "Ich lerne gerade Python und komme nicht weiter: Ich muss {x}, aber mein Code funktioniert nicht. "
            "Wie macht man das normalerweise?",
            "Wie kann ich in Python am schnellsten {x}, wenn es sehr viele Daten sind?",
            "Gibt es eine Python-Bibliothek, mit der man ganz einfach {x} kann?",
            "Erkläre einem Anfänger Schritt für Schritt, wie man in Python {x} kann.",
        ),
        "pt": (
            "Como eu posso {x} em Python? Mostre um exemplo curto, por favor.",
            "Escreva uma função em Python para {x}, com comentários explicando cada passo.",
            "Estou aprendendo Python e travei: preciso {x}, mas meu código não funciona. Qual é o jeito mais comum "
            "de fazer isso?",
            "Qual é a forma mais rápida de {x} em Python quando há muitos dados?",
            "Existe alguma biblioteca de Python que ajude a {x} de um jeito fácil?",
            "Explique para um iniciante, passo a passo, como {x} em Python.",
        ),
        "it": (
            "Come posso {x} in Python? Mostrami un breve esempio, per favore.",
            "Scrivi una funzione Python per {x}, con commenti che spieghino ogni passaggio.",
            "Sto imparando Python e mi sono bloccato: devo {x}, ma il mio codice non funziona. Qual è il modo più "
            "comune per farlo?",
            "Qual è il modo più veloce per {x} in Python quando i dati sono tanti?",
            "Esiste una libreria Python che permetta di {x} facilmente?",
            "Spiega a un principiante, passo dopo passo, come {x} in Python.",
        ),
        "zh": (
            "用Python怎么{x}？请给我一个简短的例子。",
            "写一个Python函数来{x}，每一步都加上注释说明。",
            "我在学Python，卡住了：我需要{x}，但是代码一直不对。一般是怎么写的？",
            "数据量很大的时候，用Python{x}最快的方法是什么？",
            "有没有哪个Python库可以很方便地{x}？",
            "请一步一步地给初学者讲解怎么用Python{x}。",
        ),
        "ru": (
            "Как на Python {x}? Покажи, пожалуйста, короткий пример.",
            "Напиши функцию на Python, чтобы {x}, и объясни каждый шаг в комментариях.",
            "Я изучаю Python и застрял: мне нужно {x}, но мой код не работает. Как это обычно делают?",
            "Как быстрее всего {x} на Python, если данных очень много?",
            "Есть ли для Python библиотека, с которой легко {x}?",
            "Объясни новичку по шагам, как {x} на Python.",
        ),
        "ar": (
            "كيف أقوم ب{x} في بايثون؟ أرني مثالاً قصيراً من فضلك.",
            "اكتب دالة في بايثون ل{x}، مع تعليقات تشرح كل خطوة.",
            "أنا أتعلم بايثون وتوقفت عند مشكلة: أحتاج إلى {x} لكن الكود لا يعمل. ما الطريقة المعتادة لفعل ذلك؟",
            "ما أسرع طريقة ل{x} في بايثون عندما تكون البيانات كبيرة جداً؟",
            "هل توجد مكتبة في بايثون تجعل {x} أمراً سهلاً؟",
            "اشرح لمبتدئ خطوة بخطوة كيفية {x} في بايثون.",
        ),
        "hi": (
            "पाइथन में {x} का तरीका क्या है? एक छोटा-सा उदाहरण दिखाइए।",
            "{x} के लिए पाइथन में एक फ़ंक्शन लिखिए, और हर स्टेप को कमेंट में समझाइए।",
            "मैं पाइथन सीख रहा हूँ और अटक गया हूँ: मुझे {x} की ज़रूरत है, लेकिन मेरा कोड काम नहीं कर रहा। आमतौर पर "
            "यह कैसे किया जाता है?",
            "जब डेटा बहुत ज़्यादा हो, तब पाइथन में {x} का सबसे तेज़ तरीका क्या है?",
            "क्या पाइथन की कोई ऐसी लाइब्रेरी है जिससे {x} का काम आसान हो जाए?",
            "शुरुआत करने वाले को कदम-दर-कदम समझाइए कि पाइथन में {x} के लिए क्या करना होता है।",
        ),
        "ja": (
            "Pythonで{x}には、どうすればいいですか？短いサンプルを見せてください。",
            "{x}ためのPython関数を書いてください。各ステップにはコメントで説明を付けてください。",
            "Pythonを勉強中ですが、行き詰まっています。{x}必要があるのに、コードがうまく動きません。"
            "普通はどうやって書くんですか？",
            "データが大量にあるとき、Pythonで{x}一番速い方法は何ですか？",
            "{x}のが簡単になるPythonのライブラリはありますか？",
            "初心者向けに、Pythonで{x}方法をステップごとに説明してください。",
        ),
        "ko": (
            "파이썬에서 {x}하려면 어떻게 해야 하나요? 짧은 예제를 보여 주세요.",
            "{x}하는 파이썬 함수를 작성해 주세요. 각 단계는 주석으로 설명해 주세요.",
            "파이썬을 공부하고 있는데 막혔어요. {x}해야 하는데 코드가 제대로 안 돌아가요. 보통 어떻게 하나요?",
            "데이터가 아주 많을 때 파이썬에서 {x}하는 가장 빠른 방법은 뭔가요?",
            "{x}하는 작업을 쉽게 해 주는 파이썬 라이브러리가 있나요?",
            "초보자도 이해할 수 있게 파이썬에서 {x}하는 방법을 단계별로 설명해 주세요.",
        ),
    },
)

_HEALTH = _Subject(
    fillers={
        "en": ("a dry cough", "a sore throat", "back pain", "a fever", "dizziness", "a skin rash", "stomach pain",
               "joint pain"),
        "es": ("tos seca", "dolor de garganta", "dolor de espalda", "fiebre", "mareos", "una erupción en la piel",
               "dolor de estómago", "dolor en las articulaciones"),
        "fr": ("une toux sèche", "un mal de gorge", "un mal de dos", "de la fièvre", "des vertiges",
               "une éruption cutanée", "des douleurs au ventre", "des douleurs articulaires"),
        "de": ("Reizhusten", "Halsschmerzen", "Rückenschmerzen", "Fieber", "Schwindel", "Hautausschlag",
               "Bauchschmerzen", "Gelenkschmerzen"),
        "pt": ("tosse seca", "dor de garganta", "dor nas costas", "febre", "tontura", "manchas vermelhas na pele",
               "dor de estômago", "dor nas articulações"),
        "it": ("la tosse secca", "mal di gola", "mal di schiena", "la febbre", "le vertigini",
               "un'eruzione cutanea", "mal di pancia", "male alle articolazioni"),
        "zh": ("干咳", "嗓子疼", "背痛", "发烧", "头晕", "皮疹", "胃疼", "关节疼"),
        # Nominative = accusative in each, as the templates use both.
        "ru": ("сухой кашель", "боль в горле", "боль в спине", "жар", "головокружение", "сыпь на коже",
               "боль в животе", "боль в суставах"),
        "ar": ("السعال الجاف", "التهاب الحلق", "ألم الظهر", "الحمى", "الدوخة", "الطفح الجلدي", "ألم المعدة",
               "آلام المفاصل"),
        # Every Hindi template puts a postposition after the slot ("चक्कर आने" is already oblique).
        "hi": ("सूखी खाँसी", "गले में खराश", "पीठ दर्द", "बुखार", "चक्कर आने", "त्वचा पर रैश", "पेट दर्द",
               "जोड़ों में दर्द"),
        "ja": ("乾いた咳", "喉の痛み", "背中の痛み", "熱", "めまい", "皮膚の発疹", "胃の痛み", "関節の痛み"),
        # Each ends in a consonant, so takes 이/을.
        "ko": ("마른기침", "인후통", "허리 통증", "열", "어지럼증", "피부 발진", "복통", "관절 통증"),
    },
    templates={
        "en": (
            "I've had {x} for three days now. Should I see a doctor?",
            "What usually causes {x} in adults, and when can it be something serious?",
            "Which home remedies help when you have {x}?",
            "My son has had {x} since yesterday. What should I do?",
            "In which cases should you go to the emergency room if you have {x}?",
            "Can stress cause {x}? I've been working a lot lately.",
        ),
        "es": (
            "Tengo {x} desde hace tres días. ¿Debería ir al médico?",
            "¿Qué suele causar {x} en los adultos y cuándo puede ser algo grave?",
            "¿Qué remedios caseros ayudan cuando tienes {x}?",
            "Mi hijo tiene {x} desde ayer. ¿Qué debo hacer?",
            "¿En qué casos hay que ir a urgencias si tienes {x}?",
            "¿El estrés puede provocar {x}? Últimamente estoy trabajando muchísimo.",
        ),
        "fr": (
            "J'ai {x} depuis trois jours. Est-ce que je dois consulter un médecin ?",
            "Qu'est-ce qui provoque le plus souvent {x} chez l'adulte, et quand faut-il s'inquiéter ?",
            "Quels remèdes maison peuvent aider quand on a {x} ?",
            "Mon fils a {x} depuis hier. Qu'est-ce que je dois faire ?",
            "Dans quels cas faut-il aller aux urgences quand on a {x} ?",
            "Est-ce que le stress peut provoquer {x} ? Je travaille beaucoup ces derniers temps.",
        ),
        "de": (
            "Ich habe seit drei Tagen {x}. Sollte ich zum Arzt gehen?",
            "Was verursacht bei Erwachsenen normalerweise {x}, und wann kann es etwas Ernstes sein?",
            "Welche Hausmittel helfen, wenn man {x} hat?",
            "Mein Sohn hat seit gestern {x}. Was soll ich tun?",
            "In welchen Fällen sollte man mit {x} in die Notaufnahme gehen?",
            "Kann Stress {x} auslösen? Ich arbeite in letzter Zeit sehr viel.",
        ),
        "pt": (
            "Estou com {x} há três dias. Devo ir ao médico?",
            "O que costuma causar {x} em adultos, e quando pode ser algo grave?",
            "Que remédios caseiros ajudam quando a gente está com {x}?",
            "Meu filho está com {x} desde ontem. O que eu devo fazer?",
            "Em que casos é preciso ir ao pronto-socorro quando se está com {x}?",
            "O estresse pode causar {x}? Ultimamente tenho trabalhado demais.",
        ),
        "it": (
            "Ho {x} da tre giorni. Dovrei andare dal medico?",
            "Cosa causa di solito {x} negli adulti, e quando può essere qualcosa di grave?",
            "Quali rimedi casalinghi aiutano quando si ha {x}?",
            "Mio figlio ha {x} da ieri. Cosa devo fare?",
            "In quali casi bisogna andare al pronto soccorso se si ha {x}?",
            "Lo stress può causare {x}? Ultimamente sto lavorando tantissimo.",
        ),
        "zh": (
            "我出现{x}的症状已经三天了，需要去看医生吗？",
            "成年人出现{x}通常是什么原因？什么情况下可能比较严重？",
            "出现{x}的时候，有哪些在家就能缓解的办法？",
            "我儿子从昨天开始出现{x}，我该怎么办？",
            "出现{x}时，哪些情况下应该马上去急诊？",
            "压力大会导致{x}吗？我最近工作特别忙。",
        ),
        "ru": (
            "У меня уже три дня {x}. Стоит ли идти к врачу?",
            "Что обычно вызывает {x} у взрослых и когда это может быть чем-то серьёзным?",
            "Какие домашние средства помогают, когда у тебя {x}?",
            "У моего сына со вчерашнего дня {x}. Что мне делать?",
            "В каких случаях нужно срочно ехать в больницу, если у тебя {x}?",
            "Может ли стресс вызывать {x}? В последнее время я очень много работаю.",
        ),
        "ar": (
            "أعاني من {x} منذ ثلاثة أيام. هل يجب أن أذهب إلى الطبيب؟",
            "ما الذي يسبب {x} عادةً عند البالغين، ومتى يكون الأمر خطيراً؟",
            "ما العلاجات المنزلية التي تساعد عند الإصابة ب{x}؟",
            "ابني يعاني من {x} منذ الأمس. ماذا يجب أن أفعل؟",
            "في أي حالات يجب الذهاب إلى الطوارئ إذا كان المريض يعاني من {x}؟",
            "هل يمكن أن يسبب التوتر {x}؟ أعمل كثيراً في الفترة الأخيرة.",
        ),
        "hi": (
            "मुझे तीन दिन से {x} की समस्या है। क्या मुझे डॉक्टर को दिखाना चाहिए?",
            "बड़ों में आमतौर पर {x} की वजह क्या होती है, और यह कब गंभीर हो सकता है?",
            "{x} से राहत के लिए कौन-से घरेलू नुस्खे काम आते हैं?",
            "मेरे बेटे को कल से {x} की शिकायत है। मुझे क्या करना चाहिए?",
            "{x} की समस्या हो तो किन हालात में तुरंत इमरजेंसी जाना चाहिए?",
            "क्या तनाव की वजह से {x} की दिक्कत हो सकती है? आजकल मैं बहुत ज़्यादा काम कर रहा हूँ।",
        ),
        "ja": (
            "3日前から{x}が続いています。病院に行ったほうがいいですか？",
            "大人の場合、{x}の原因として多いのは何ですか？どんなときに深刻な可能性がありますか？",
            "{x}があるとき、家でできる対処法はありますか？",
            "息子が昨日から{x}を訴えています。どうすればいいでしょうか？",
            "{x}がある場合、どんなときにすぐ救急外来に行くべきですか？",
            "ストレスで{x}が出ることはありますか？最近、仕事がとても忙しいです。",
        ),
        "ko": (
            "사흘째 {x}이 계속되고 있어요. 병원에 가 봐야 할까요?",
            "성인의 경우 {x}의 흔한 원인은 뭐고, 언제 심각한 상황일 수 있나요?",
            "{x}이 있을 때 집에서 할 수 있는 민간요법이 있나요?",
            "아들이 어제부터 {x}이 있어요. 어떻게 해야 할까요?",
            "{x}이 있을 때 어떤 경우에 바로 응급실에 가야 하나요?",
            "스트레스 때문에 {x}이 생길 수도 있나요? 요즘 일을 너무 많이 하고 있어요.",
        ),
    },
)

_EDUCATION = _Subject(
    fillers={
        "en": ("chemistry", "history", "algebra", "biology", "physics", "geography", "statistics", "economics"),
        "es": ("química", "historia", "álgebra", "biología", "física", "geografía", "estadística", "economía"),
        "fr": ("chimie", "histoire", "algèbre", "biologie", "physique", "géographie", "statistiques", "économie"),
        "de": ("Chemie", "Geschichte", "Algebra", "Biologie", "Physik", "Erdkunde", "Statistik", "Wirtschaft"),
        "pt": ("química", "história", "álgebra", "biologia", "física", "geografia", "estatística", "economia"),
        "it": ("chimica", "storia", "algebra", "biologia", "fisica", "geografia", "statistica", "economia"),
        "zh": ("化学", "历史", "代数", "生物", "物理", "地理", "统计学", "经济学"),
        # The dative, after "по": every Russian template has "по {x}".
        "ru": ("химии", "истории", "алгебре", "биологии", "физике", "географии", "статистике", "экономике"),
        "ar": ("الكيمياء", "التاريخ", "الجبر", "الأحياء", "الفيزياء", "الجغرافيا", "الإحصاء", "الاقتصاد"),
        "hi": ("रसायन विज्ञान", "इतिहास", "बीजगणित", "जीव विज्ञान", "भौतिकी", "भूगोल", "सांख्यिकी", "अर्थशास्त्र"),
        "ja": ("化学", "歴史", "代数", "生物", "物理", "地理", "統計学", "経済学"),
        "ko": ("화학", "역사", "대수학", "생물", "물리", "지리", "통계학", "경제학"),
    },
    templates={
        "en": (
            "My {x} exam is in two weeks. How should I plan my revision?",
            "How can I stay motivated to study {x} when I find it boring?",
            "What are the best techniques to remember what I learn in {x}?",
            "How do I take good notes in {x} classes?",
            "My daughter has very bad grades in {x} at school. How can I help her at home?",
            "Make me a four-week study plan for {x}, one hour a day.",
        ),
        "es": (
            "Tengo un examen de {x} dentro de dos semanas. ¿Cómo organizo el repaso?",
            "¿Cómo puedo mantenerme motivado para estudiar {x} cuando me aburre?",
            "¿Qué técnicas funcionan mejor para recordar lo que aprendo en {x}?",
            "¿Cómo tomo buenos apuntes en las clases de {x}?",
            "Mi hija saca muy malas notas en {x} en el colegio. ¿Cómo puedo ayudarla en casa?",
            "Hazme un plan de estudio de cuatro semanas para {x}, una hora al día.",
        ),
        "fr": (
            "J'ai un examen en {x} dans deux semaines. Comment organiser mes révisions ?",
            "Comment rester motivé pour travailler en {x} quand je trouve ça ennuyeux ?",
            "Quelles sont les meilleures techniques pour retenir ce que j'apprends en {x} ?",
            "Comment prendre de bonnes notes en {x} pendant les cours ?",
            "Ma fille a de très mauvaises notes en {x} à l'école. Comment l'aider à la maison ?",
            "Fais-moi un programme de révision de quatre semaines en {x}, à raison d'une heure par jour.",
        ),
        "de": (
            "In zwei Wochen schreibe ich eine Prüfung in {x}. Wie plane ich das Lernen am besten?",
            "Wie bleibe ich motiviert, für {x} zu lernen, wenn ich das Fach langweilig finde?",
            "Mit welchen Techniken kann man sich am besten merken, was man in {x} lernt?",
            "Wie schreibe ich im Unterricht in {x} gute Mitschriften?",
            "Meine Tochter hat in der Schule sehr schlechte Noten in {x}. Wie kann ich ihr zu Hause helfen?",
            "Erstelle mir einen Lernplan für {x} über vier Wochen, eine Stunde pro Tag.",
        ),
        "pt": (
            "Tenho prova de {x} daqui a duas semanas. Como eu organizo a revisão?",
            "Como faço para continuar motivado a estudar {x} quando acho a matéria chata?",
            "Quais são as melhores técnicas para lembrar o que eu aprendo em {x}?",
            "Como faço boas anotações nas aulas de {x}?",
            "Minha filha está tirando notas muito baixas em {x} na escola. Como posso ajudá-la em casa?",
            "Monte um plano de estudos de quatro semanas para {x}, uma hora por dia.",
        ),
        "it": (
            "Ho un esame di {x} tra due settimane. Come organizzo il ripasso?",
            "Come faccio a restare motivato a studiare {x} quando la materia mi annoia?",
            "Quali sono le tecniche migliori per ricordare quello che studio in {x}?",
            "Come prendo buoni appunti durante le lezioni di {x}?",
            "Mia figlia ha dei voti molto brutti in {x} a scuola. Come posso aiutarla a casa?",
            "Preparami un piano di studio di quattro settimane per {x}, un'ora al giorno.",
        ),
        "zh": (
            "两周后我有{x}考试，复习计划应该怎么安排？",
            "觉得{x}很无聊的时候，怎么才能保持学习的动力？",
            "有什么好方法能记住{x}课上学的内容？",
            "上{x}课的时候，怎么才能把笔记记好？有什么技巧吗？",
            "我女儿在学校{x}成绩很差，我在家里怎么帮她？",
            "帮我做一个为期四周的{x}学习计划，每天学一个小时。",
        ),
        "ru": (
            "Через две недели у меня экзамен по {x}. Как лучше спланировать подготовку?",
            "Как сохранить мотивацию к занятиям по {x}, если предмет кажется скучным?",
            "Какие техники лучше всего помогают запоминать материал по {x}?",
            "Как правильно вести конспекты на уроках по {x}?",
            "У моей дочери очень плохие оценки по {x} в школе. Как помочь ей дома?",
            "Составь мне план подготовки по {x} на четыре недели, по часу в день.",
        ),
        "ar": (
            "عندي امتحان في مادة {x} بعد أسبوعين. كيف أنظم المراجعة؟",
            "كيف أحافظ على حماسي لدراسة {x} عندما أشعر أن المادة مملة؟",
            "ما أفضل الطرق لتذكّر ما أتعلمه في مادة {x}؟",
            "كيف أكتب ملاحظات جيدة أثناء حصص {x}؟",
            "ابنتي درجاتها ضعيفة جداً في {x} في المدرسة. كيف يمكنني مساعدتها في البيت؟",
            "ضع لي خطة مذاكرة لمادة {x} لمدة أربعة أسابيع، بمعدل ساعة يومياً.",
        ),
        "hi": (
            "दो हफ़्ते बाद मेरा {x} का एग्ज़ाम है। रिवीज़न की प्लानिंग कैसे करूँ?",
            "जब {x} की पढ़ाई बोरिंग लगे, तब पढ़ने का मन कैसे बनाए रखूँ?",
            "{x} में जो पढ़ता हूँ, उसे याद रखने के सबसे अच्छे तरीके कौन-से हैं?",
            "{x} की क्लास में अच्छे नोट्स कैसे बनाऊँ?",
            "स्कूल में मेरी बेटी के {x} में बहुत कम नंबर आ रहे हैं। मैं घर पर उसकी मदद कैसे करूँ?",
            "{x} के लिए चार हफ़्ते का पढ़ाई का प्लान बना दीजिए, रोज़ एक घंटा।",
        ),
        "ja": (
            "2週間後に{x}の試験があります。復習の計画はどう立てればいいですか？",
            "{x}の勉強がつまらなく感じるとき、どうやってやる気を保てばいいですか？",
            "{x}で習ったことをしっかり覚えるには、どんな勉強法が一番いいですか？",
            "{x}の授業でうまくノートを取るコツを教えてください。",
            "娘の学校での{x}の成績がとても悪いです。家でどうやって手伝えばいいでしょうか？",
            "{x}の4週間の勉強計画を作ってください。1日1時間でお願いします。",
        ),
        "ko": (
            "2주 뒤에 {x} 시험이 있어요. 복습 계획을 어떻게 세우면 좋을까요?",
            "{x} 공부가 지루하게 느껴질 때 어떻게 하면 의욕을 유지할 수 있을까요?",
            "{x} 시간에 배운 내용을 잘 기억하는 가장 좋은 방법이 뭐예요?",
            "{x} 수업에서 필기를 잘하는 요령을 알려 주세요.",
            "딸이 학교에서 {x} 성적이 너무 안 좋아요. 집에서 어떻게 도와줄 수 있을까요?",
            "하루 한 시간씩, 4주 동안 할 {x} 공부 계획을 짜 주세요.",
        ),
    },
)

_MONEY = _Subject(
    fillers={
        "en": ("a savings account", "an index fund", "a mortgage", "a brokerage account", "a private pension plan",
               "a personal loan", "a fixed-term deposit", "life insurance"),
        "es": ("una cuenta de ahorro", "un fondo indexado", "una hipoteca", "una cuenta de inversión",
               "un plan de pensiones privado", "un préstamo personal", "un depósito a plazo fijo", "un seguro de vida"),
        "fr": ("un livret d'épargne", "un fonds indiciel", "un prêt immobilier", "un compte-titres",
               "un plan d'épargne retraite", "un prêt personnel", "un compte à terme", "une assurance vie"),
        # Neuter or feminine, so the same form serves as nominative and accusative.
        "de": ("ein Sparkonto", "eine Geldanlage in Indexfonds", "eine Baufinanzierung", "ein Depot",
               "eine private Rentenversicherung", "ein Privatdarlehen", "ein Festgeldkonto", "eine Lebensversicherung"),
        "pt": ("uma conta poupança", "um fundo de índice", "um financiamento imobiliário", "uma conta em corretora",
               "um plano de previdência privada", "um empréstimo pessoal", "um depósito a prazo", "um seguro de vida"),
        "it": ("un conto di risparmio", "un fondo indicizzato", "un mutuo", "un conto titoli",
               "una pensione integrativa", "un prestito personale", "un conto vincolato", "un'assicurazione sulla vita"),
        "zh": ("储蓄账户", "指数基金", "房贷", "证券账户", "个人养老金计划", "个人贷款", "定期存款", "人寿保险"),
        # Nominative = accusative in each.
        "ru": ("сберегательный счёт", "индексный фонд", "ипотечный кредит", "брокерский счёт",
               "частный пенсионный план", "потребительский кредит", "срочный вклад", "страхование жизни"),
        # Indefinite, and only ever in the genitive (after a preposition or a noun).
        "ar": ("حساب توفير", "صندوق مؤشرات", "قرض عقاري", "حساب تداول", "خطة تقاعد خاصة", "قرض شخصي",
               "وديعة لأجل", "تأمين على الحياة"),
        "hi": ("सेविंग्स अकाउंट", "इंडेक्स फ़ंड", "होम लोन", "डीमैट अकाउंट", "प्राइवेट पेंशन प्लान", "पर्सनल लोन",
               "फ़िक्स्ड डिपॉज़िट", "लाइफ़ इंश्योरेंस"),
        "ja": ("貯蓄預金口座", "インデックスファンド", "住宅ローン", "証券口座", "個人年金", "個人向けローン",
               "定期預金", "生命保険"),
        "ko": ("적금 통장", "인덱스 펀드", "주택담보대출", "증권 계좌", "개인연금", "개인 신용대출", "정기예금",
               "생명보험"),
    },
    templates={
        "en": (
            "Should I consider {x} if I have an average salary? What are the risks?",
            "Explain as simply as possible how {x} works.",
            "I'm 28 and I've just started my first job. Should I think about {x} now or wait?",
            "Which fees and hidden costs should I check before choosing {x}?",
            "What are the most common mistakes people make when choosing {x}?",
            "My parents advise me to choose {x}. What are the pros and cons?",
        ),
        "es": (
            "¿Debería plantearme {x} si tengo un sueldo normal? ¿Qué riesgos tiene?",
            "Explícame de la forma más sencilla posible cómo funciona {x}.",
            "Tengo 28 años y acabo de empezar en mi primer trabajo. ¿Debería pensar ya en {x} o es mejor esperar?",
            "¿Qué comisiones y gastos ocultos debo revisar antes de elegir {x}?",
            "¿Cuáles son los errores más comunes que comete la gente al elegir {x}?",
            "Mis padres me aconsejan elegir {x}. ¿Qué ventajas y desventajas tiene?",
        ),
        "fr": (
            "Est-ce que je devrais envisager {x} avec un salaire moyen ? Quels sont les risques ?",
            "Explique-moi le plus simplement possible comment fonctionne {x}.",
            "J'ai 28 ans et je viens de commencer mon premier emploi. Est-ce que je dois penser dès maintenant "
            "à {x} ou attendre ?",
            "Quels frais et coûts cachés dois-je vérifier avant de choisir {x} ?",
            "Quelles sont les erreurs les plus fréquentes quand on choisit {x} ?",
            "Mes parents me conseillent de choisir {x}. Quels sont les avantages et les inconvénients ?",
        ),
        "de": (
            "Sollte ich {x} in Betracht ziehen, wenn ich ein durchschnittliches Gehalt habe? Welche Risiken gibt es?",
            "Erkläre mir so einfach wie möglich, wie {x} funktioniert.",
            "Ich bin 28 und habe gerade meinen ersten Job angefangen. Sollte ich mich jetzt schon um {x} kümmern "
            "oder lieber warten?",
            "Auf welche Gebühren und versteckten Kosten sollte ich achten, bevor ich {x} auswähle?",
            "Welche Fehler machen die Leute am häufigsten, wenn sie {x} auswählen?",
            "Meine Eltern raten mir, {x} zu wählen. Was sind die Vor- und Nachteile?",
        ),
        "pt": (
            "Vale a pena eu considerar {x} tendo um salário médio? Quais são os riscos?",
            "Me explique da forma mais simples possível como funciona {x}.",
            "Tenho 28 anos e acabei de começar no meu primeiro emprego. Devo pensar em {x} agora ou esperar?",
            "Quais taxas e custos escondidos eu devo verificar antes de escolher {x}?",
            "Quais são os erros mais comuns que as pessoas cometem na hora de escolher {x}?",
            "Meus pais me aconselham a escolher {x}. Quais são os prós e os contras?",
        ),
        "it": (
            "Dovrei prendere in considerazione {x} con uno stipendio nella media? Quali sono i rischi?",
            "Spiegami nel modo più semplice possibile come funziona {x}.",
            "Ho 28 anni e ho appena iniziato il mio primo lavoro. Dovrei pensare già adesso a {x} o aspettare?",
            "Quali commissioni e costi nascosti devo controllare prima di scegliere {x}?",
            "Quali sono gli errori più comuni che si fanno quando si sceglie {x}?",
            "I miei genitori mi consigliano di scegliere {x}. Quali sono i pro e i contro?",
        ),
        "zh": (
            "我的工资属于中等水平，值得考虑{x}吗？有什么风险？",
            "请尽量简单地解释一下{x}是怎么运作的。",
            "我今年28岁，刚开始第一份工作。现在就该考虑{x}，还是再等等？",
            "在选择{x}之前，我应该查清楚哪些手续费和隐藏费用？",
            "大家在选择{x}的时候，最常犯的错误有哪些？",
            "我父母建议我选{x}。这样做有什么利弊？",
        ),
        "ru": (
            "Стоит ли мне рассматривать {x}, если у меня средняя зарплата? Какие есть риски?",
            "Объясни максимально просто, как работает {x}.",
            "Мне 28 лет, и я только что вышел на первую работу. Стоит ли уже сейчас думать про {x} или лучше "
            "подождать?",
            "Какие комиссии и скрытые расходы нужно проверить, прежде чем выбрать {x}?",
            "Какие ошибки люди чаще всего совершают, когда выбирают {x}?",
            "Родители советуют мне выбрать {x}. Какие у этого плюсы и минусы?",
        ),
        "ar": (
            "هل يجب أن أفكر في {x} إذا كان راتبي متوسطاً؟ ما المخاطر؟",
            "اشرح لي بأبسط طريقة ممكنة آلية عمل {x}.",
            "عمري 28 سنة وبدأت للتو أول وظيفة لي. هل علي أن أفكر في {x} الآن أم أنتظر؟",
            "ما الرسوم والتكاليف الخفية التي يجب أن أتحقق منها قبل اختيار {x}؟",
            "ما أكثر الأخطاء التي يقع فيها الناس عند اختيار {x}؟",
            "ينصحني والداي باختيار {x}. ما المزايا والعيوب؟",
        ),
        "hi": (
            "अगर मेरी सैलरी औसत है तो क्या मुझे {x} के बारे में सोचना चाहिए? इसमें क्या जोखिम हैं?",
            "{x} के काम करने का तरीका बिल्कुल आसान शब्दों में समझाइए।",
            "मेरी उम्र 28 साल है और मैंने अभी-अभी अपनी पहली नौकरी शुरू की है। क्या मुझे अभी से {x} के बारे में सोचना "
            "चाहिए या रुकना चाहिए?",
            "{x} चुनने से पहले मुझे कौन-कौन सी फ़ीस और छिपे हुए खर्चे देखने चाहिए?",
            "{x} चुनते समय लोग सबसे आम गलतियाँ कौन-सी करते हैं?",
            "मेरे माता-पिता मुझे {x} चुनने की सलाह दे रहे हैं। इसके फ़ायदे और नुकसान क्या हैं?",
        ),
        "ja": (
            "給料は平均的ですが、{x}を検討したほうがいいですか？どんなリスクがありますか？",
            "{x}の仕組みを、できるだけわかりやすく説明してください。",
            "28歳で、最初の仕事を始めたばかりです。今から{x}について考えるべきですか？それとも待ったほうがいいですか？",
            "{x}を選ぶ前に、どんな手数料や隠れたコストを確認すべきですか？",
            "{x}を選ぶときに、多くの人がやってしまう失敗は何ですか？",
            "両親に{x}を選ぶように勧められています。メリットとデメリットを教えてください。",
        ),
        "ko": (
            "월급이 평범한 수준인데 {x} 가입을 고려해 봐야 할까요? 어떤 위험이 있나요?",
            "{x}의 작동 방식을 최대한 쉽게 설명해 주세요.",
            "스물여덟 살이고 첫 직장을 막 시작했어요. 지금부터 {x}에 대해 생각해야 할까요, 아니면 좀 기다릴까요?",
            "{x} 선택하기 전에 어떤 수수료나 숨은 비용을 확인해야 하나요?",
            "사람들이 {x} 고를 때 가장 많이 하는 실수는 뭐예요?",
            "부모님이 {x} 쪽을 선택하라고 조언하세요. 장단점이 뭔가요?",
        ),
    },
)

_HOME = _Subject(
    fillers={
        "en": ("grow tomatoes on a balcony", "fix a dripping tap", "get rid of mould in the bathroom",
               "paint a wooden fence", "plant a lemon tree in a pot", "unclog the kitchen sink",
               "keep the lawn green in summer", "seal draughty windows before winter"),
        "es": ("cultivar tomates en el balcón", "arreglar un grifo que gotea", "quitar el moho del baño",
               "pintar una valla de madera", "plantar un limonero en una maceta", "desatascar el fregadero de la cocina",
               "mantener el césped verde en verano", "sellar las ventanas por las que entra aire antes del invierno"),
        "fr": ("faire pousser des tomates sur un balcon", "réparer un robinet qui fuit",
               "enlever la moisissure dans la salle de bain", "peindre une clôture en bois",
               "planter un citronnier en pot", "déboucher l'évier de la cuisine", "garder une pelouse verte en été",
               "isoler des fenêtres qui laissent passer l'air avant l'hiver"),
        "de": ("Tomaten auf dem Balkon anbauen", "einen tropfenden Wasserhahn reparieren",
               "Schimmel im Badezimmer entfernen", "einen Holzzaun streichen", "einen Zitronenbaum in einen Topf pflanzen",
               "den verstopften Abfluss der Küchenspüle frei bekommen", "den Rasen im Sommer grün halten",
               "undichte Fenster vor dem Winter abdichten"),
        "pt": ("cultivar tomates na varanda", "consertar uma torneira pingando", "tirar o mofo do banheiro",
               "pintar uma cerca de madeira", "plantar um limoeiro em um vaso", "desentupir a pia da cozinha",
               "manter o gramado verde no verão", "vedar as janelas por onde entra vento antes do inverno"),
        "it": ("coltivare pomodori sul balcone", "riparare un rubinetto che gocciola", "eliminare la muffa in bagno",
               "verniciare una recinzione di legno", "piantare un albero di limoni in vaso",
               "sturare il lavandino della cucina", "mantenere il prato verde d'estate",
               "isolare le finestre con gli spifferi prima dell'inverno"),
        "zh": ("在阳台上种番茄", "修理滴水的水龙头", "去除浴室里的霉菌", "给木栅栏刷漆", "在花盆里种柠檬树",
               "疏通堵塞的厨房水槽", "夏天让草坪保持绿色", "入冬前把漏风的窗户封好"),
        "ru": ("вырастить помидоры на балконе", "починить протекающий кран", "избавиться от плесени в ванной",
               "покрасить деревянный забор", "посадить лимонное дерево в горшок", "прочистить засор в кухонной раковине",
               "сохранить газон зелёным летом", "утеплить окна, из которых дует, перед зимой"),
        # Verbal nouns (masdar) without the article, so that a template may attach "ل" to them.
        "ar": ("زراعة الطماطم في الشرفة", "إصلاح حنفية تسرّب الماء", "إزالة العفن من الحمام", "طلاء سياج خشبي",
               "زراعة شجرة ليمون في أصيص", "تسليك حوض المطبخ المسدود", "إبقاء العشب أخضر في الصيف",
               "عزل النوافذ التي يدخل منها الهواء قبل الشتاء"),
        # Oblique infinitives (-ने): every Hindi template puts a postposition after the slot.
        "hi": ("बालकनी में टमाटर उगाने", "टपकते नल को ठीक करने", "बाथरूम से फफूंद हटाने", "लकड़ी की बाड़ को पेंट करने",
               "गमले में नींबू का पेड़ लगाने", "किचन सिंक की रुकावट खोलने", "गर्मियों में लॉन को हरा-भरा रखने",
               "सर्दियों से पहले खिड़कियों से आने वाली ठंडी हवा रोकने"),
        "ja": ("ベランダでトマトを育てる", "水漏れする蛇口を修理する", "浴室のカビを取る", "木のフェンスにペンキを塗る",
               "レモンの木を鉢に植える", "詰まった台所のシンクを直す", "夏に芝生を青々と保つ",
               "隙間風の入る窓を冬の前にふさぐ"),
        # Nominalised with -기, so each ends in a vowel and takes 는/를.
        "ko": ("베란다에서 토마토 키우기", "물이 새는 수도꼭지 고치기", "욕실 곰팡이 없애기", "나무 울타리 페인트칠하기",
               "화분에 레몬 나무 심기", "막힌 주방 싱크대 뚫기", "여름에 잔디를 푸르게 유지하기",
               "외풍이 들어오는 창문을 겨울 전에 막기"),
    },
    templates={
        "en": (
            "What is the best way to {x}? I've never done it before.",
            "Give me step-by-step instructions to {x}.",
            "I want to {x} this weekend. Which tools and materials will I need?",
            "How much time and money does it usually take to {x}?",
            "What mistakes do people often make when they try to {x}?",
            "I'm a complete beginner. Can I {x} on my own, or is it too difficult?",
        ),
        "es": (
            "¿Cuál es la mejor forma de {x}? Nunca lo he hecho.",
            "Dame instrucciones paso a paso para {x}.",
            "Este fin de semana quiero {x}. ¿Qué herramientas y materiales voy a necesitar?",
            "¿Cuánto tiempo y dinero hace falta normalmente para {x}?",
            "¿Qué errores comete a menudo la gente cuando intenta {x}?",
            "Soy principiante total. ¿Puedo {x} por mi cuenta o es demasiado difícil?",
        ),
        "fr": (
            "Comment faire pour {x} ? Je ne l'ai jamais fait.",
            "Donne-moi des instructions étape par étape pour {x}.",
            "Ce week-end, je veux {x}. De quels outils et matériaux aurai-je besoin ?",
            "Combien de temps et d'argent faut-il en général pour {x} ?",
            "Quelles erreurs les gens font-ils souvent quand ils veulent {x} ?",
            "Je suis complètement débutant. Est-ce que je peux {x} tout seul, ou c'est trop difficile ?",
        ),
        "de": (
            "Wie kann ich am besten {x}? Ich habe das noch nie gemacht.",
            "Erkläre mir Schritt für Schritt, wie ich {x} kann.",
            "Ich möchte am Wochenende {x}. Welche Werkzeuge und Materialien brauche ich dafür?",
            "Mit wie viel Zeit und Geld muss ich normalerweise rechnen, wenn ich {x} will?",
            "Welche Fehler machen Leute oft, wenn sie {x} wollen?",
            "Ich bin absoluter Anfänger. Kann ich alleine {x}, oder ist das zu schwierig?",
        ),
        "pt": (
            "Qual é a melhor maneira de {x}? Nunca fiz isso antes.",
            "Me dê instruções passo a passo para {x}.",
            "Quero {x} neste fim de semana. De quais ferramentas e materiais eu vou precisar?",
            "Quanto tempo e dinheiro normalmente são necessários para {x}?",
            "Quais erros as pessoas costumam cometer quando tentam {x}?",
            "Sou totalmente iniciante. Consigo {x} sozinho ou é difícil demais?",
        ),
        "it": (
            "Qual è il modo migliore per {x}? Non l'ho mai fatto prima.",
            "Dammi le istruzioni passo passo per {x}.",
            "Questo fine settimana voglio {x}. Quali attrezzi e materiali mi servono?",
            "Quanto tempo e quanti soldi servono di solito per {x}?",
            "Quali errori si fanno spesso quando si prova a {x}?",
            "Sono un principiante assoluto. Posso {x} da solo o è troppo difficile?",
        ),
        "zh": (
            "{x}最好的方法是什么？我以前从来没做过。",
            "请一步一步地告诉我怎么{x}。",
            "这个周末我想{x}，需要准备哪些工具和材料？",
            "{x}一般要花多少时间和钱？",
            "人们在{x}的时候经常犯哪些错误？",
            "我完全是新手。{x}我一个人能搞定吗？还是太难了？",
        ),
        "ru": (
            "Как лучше всего {x}? Я никогда этого не делал.",
            "Распиши пошагово, как {x}.",
            "На выходных хочу {x}. Какие инструменты и материалы мне понадобятся?",
            "Сколько времени и денег обычно нужно, чтобы {x}?",
            "Какие ошибки люди часто совершают, когда пытаются {x}?",
            "Я полный новичок. Смогу ли я сам {x}, или это слишком сложно?",
        ),
        "ar": (
            "ما أفضل طريقة ل{x}؟ لم أفعل ذلك من قبل.",
            "أعطني تعليمات خطوة بخطوة ل{x}.",
            "أريد {x} في عطلة نهاية الأسبوع. ما الأدوات والمواد التي سأحتاجها؟",
            "كم من الوقت والمال أحتاج عادةً ل{x}؟",
            "ما الأخطاء الشائعة التي يقع فيها الناس عند محاولة {x}؟",
            "أنا مبتدئ تماماً. هل يمكنني {x} بنفسي، أم أن الأمر صعب جداً؟",
        ),
        "hi": (
            "{x} का सबसे अच्छा तरीका क्या है? मैंने यह पहले कभी नहीं किया।",
            "{x} के लिए स्टेप-बाय-स्टेप निर्देश दीजिए।",
            "मैं इस वीकेंड {x} की सोच रहा हूँ। मुझे कौन-कौन से औज़ार और सामान चाहिए होंगे?",
            "{x} में आमतौर पर कितना समय और कितना पैसा लगता है?",
            "{x} की कोशिश करते समय लोग अक्सर कौन-सी गलतियाँ करते हैं?",
            "मैं बिल्कुल नौसिखिया हूँ। क्या मैं {x} का काम खुद कर सकता हूँ, या यह बहुत मुश्किल है?",
        ),
        "ja": (
            "{x}には、どうするのが一番いいですか？今までやったことがありません。",
            "{x}手順を、ステップごとに教えてください。",
            "今週末に{x}つもりです。どんな道具や材料が必要ですか？",
            "{x}には、ふつうどのくらいの時間とお金がかかりますか？",
            "{x}ときに、よくある失敗は何ですか？",
            "まったくの初心者です。{x}のは一人でもできますか？それとも難しすぎますか？",
        ),
        "ko": (
            "{x}는 어떻게 하는 게 제일 좋아요? 한 번도 해 본 적이 없어요.",
            "{x} 방법을 단계별로 알려 주세요.",
            "이번 주말에 {x}를 해 보려고요. 어떤 도구랑 재료가 필요할까요?",
            "{x}에는 보통 시간과 비용이 얼마나 드나요?",
            "사람들이 {x}를 할 때 자주 하는 실수는 뭐예요?",
            "완전 초보인데 {x}를 혼자 할 수 있을까요, 아니면 너무 어려울까요?",
        ),
    },
)

_CARS = _Subject(
    fillers={
        "en": ("a flat tyre", "a dead battery", "squeaking brakes", "an overheating engine", "an oil leak",
               "a cracked windscreen", "broken air conditioning", "a noisy exhaust"),
        "es": ("una rueda pinchada", "la batería descargada", "unos frenos que chirrían", "el motor que se recalienta",
               "una fuga de aceite", "el parabrisas agrietado", "el aire acondicionado estropeado",
               "el tubo de escape muy ruidoso"),
        "fr": ("un pneu crevé", "une batterie à plat", "des freins qui grincent", "un moteur qui surchauffe",
               "une fuite d'huile", "un pare-brise fissuré", "une climatisation en panne", "un pot d'échappement bruyant"),
        # The accusative: every German template takes the slot as an object.
        "de": ("einen Platten", "eine leere Batterie", "quietschende Bremsen", "einen überhitzten Motor",
               "einen Ölverlust", "eine gesprungene Windschutzscheibe", "eine kaputte Klimaanlage",
               "einen lauten Auspuff"),
        "pt": ("um pneu furado", "a bateria descarregada", "os freios rangendo", "o motor superaquecendo",
               "um vazamento de óleo", "o para-brisa trincado", "o ar-condicionado quebrado",
               "o escapamento barulhento"),
        "it": ("una gomma a terra", "la batteria scarica", "i freni che fischiano", "il motore che si surriscalda",
               "una perdita d'olio", "il parabrezza crepato", "l'aria condizionata rotta", "la marmitta rumorosa"),
        "zh": ("轮胎漏气", "电瓶没电", "刹车吱吱响", "发动机过热", "漏机油", "挡风玻璃有裂纹", "空调坏了",
               "排气管噪音大"),
        # Nominative = accusative in each.
        "ru": ("спущенное колесо", "разряженный аккумулятор", "скрипящие тормоза", "перегрев двигателя",
               "подтекание масла", "треснувшее лобовое стекло", "сломанный кондиционер", "шумный глушитель"),
        # Indefinite, and only in the nominative or genitive (no accusative alif).
        "ar": ("إطار مثقوب", "بطارية فارغة", "فرامل تصدر صريراً", "محرك ترتفع حرارته", "تسرب في الزيت",
               "زجاج أمامي مشروخ", "مكيف هواء معطل", "عادم مرتفع الصوت"),
        # Followed by "की समस्या" in every Hindi template.
        "hi": ("पंक्चर टायर", "बैटरी डाउन होने", "ब्रेक लगाने पर आवाज़ आने", "इंजन ज़्यादा गरम होने", "तेल लीक होने",
               "विंडस्क्रीन में दरार", "एसी खराब होने", "साइलेंसर से तेज़ आवाज़ आने"),
        "ja": ("タイヤのパンク", "バッテリー上がり", "ブレーキのきしみ音", "エンジンのオーバーヒート", "オイル漏れ",
               "フロントガラスのひび", "エアコンの故障", "マフラーの大きな音"),
        "ko": ("타이어 펑크", "배터리 방전", "브레이크 소음", "엔진 과열", "오일 누유", "앞유리 균열", "에어컨 고장",
               "배기구 소음"),
    },
    templates={
        "en": (
            "My car has {x}. Is it safe to keep driving it?",
            "What usually causes {x} in a ten-year-old car?",
            "How much does it usually cost to get {x} fixed at a garage?",
            "On my way to work this morning I noticed {x}. What should I check first?",
            "Can I fix {x} myself, or do I need a mechanic?",
            "How can I prevent {x} in the future?",
        ),
        "es": (
            "Mi coche tiene {x}. ¿Es seguro seguir conduciéndolo?",
            "¿Qué suele causar {x} en un coche de diez años?",
            "¿Cuánto cuesta normalmente arreglar {x} en un taller?",
            "Esta mañana, de camino al trabajo, he notado {x}. ¿Qué debería revisar primero?",
            "¿Puedo arreglar {x} yo mismo o necesito un mecánico?",
            "¿Cómo puedo evitar {x} en el futuro?",
        ),
        "fr": (
            "Ma voiture a {x}. Est-ce que je peux continuer à rouler sans danger ?",
            "Qu'est-ce qui cause en général {x} sur une voiture de dix ans ?",
            "Combien coûte en général la réparation au garage quand on a {x} ?",
            "Ce matin, en allant au travail, j'ai remarqué {x}. Qu'est-ce que je dois vérifier en premier ?",
            "Est-ce que je peux réparer moi-même {x}, ou faut-il un mécanicien ?",
            "Comment éviter {x} à l'avenir ?",
        ),
        "de": (
            "Mein Auto hat {x}. Kann ich damit noch sicher weiterfahren?",
            "Was verursacht bei einem zehn Jahre alten Auto normalerweise {x}?",
            "Was kostet es normalerweise, {x} in der Werkstatt reparieren zu lassen?",
            "Heute Morgen habe ich auf dem Weg zur Arbeit {x} bemerkt. Was sollte ich zuerst prüfen?",
            "Kann ich {x} selbst reparieren, oder brauche ich einen Mechaniker?",
            "Wie kann ich {x} in Zukunft vermeiden?",
        ),
        "pt": (
            "Meu carro está com {x}. É seguro continuar dirigindo?",
            "O que costuma causar {x} em um carro de dez anos?",
            "Quanto custa normalmente consertar {x} numa oficina?",
            "Hoje de manhã, a caminho do trabalho, percebi {x}. O que eu devo verificar primeiro?",
            "Consigo consertar {x} sozinho ou preciso de um mecânico?",
            "Como posso evitar {x} no futuro?",
        ),
        "it": (
            "La mia macchina ha {x}. È sicuro continuare a guidarla?",
            "Cosa causa di solito {x} in un'auto di dieci anni?",
            "Quanto costa di solito far riparare {x} in officina?",
            "Stamattina, andando al lavoro, ho notato {x}. Cosa dovrei controllare per prima cosa?",
            "Posso sistemare {x} da solo o mi serve un meccanico?",
            "Come posso evitare {x} in futuro?",
        ),
        "zh": (
            "我的车出现了{x}的问题，还能继续开吗？安全吗？",
            "一辆开了十年的车，出现{x}通常是什么原因？",
            "去修车厂修{x}的问题，一般要花多少钱？",
            "今天早上上班路上，我发现车子{x}。应该先检查什么？",
            "{x}这种问题我自己能修吗？还是得找修车师傅？",
            "以后怎么才能避免{x}？",
        ),
        "ru": (
            "У моей машины {x}. Можно ли дальше на ней ездить?",
            "Из-за чего обычно бывает {x} у машины, которой десять лет?",
            "Сколько обычно стоит ремонт в автосервисе, если у машины {x}?",
            "Сегодня утром по дороге на работу я заметил {x}. Что проверить в первую очередь?",
            "Если у машины {x}, можно ли разобраться самому или нужен механик?",
            "Как в будущем избежать такой проблемы, как {x}?",
        ),
        "ar": (
            "في سيارتي {x}. هل من الآمن أن أستمر في القيادة؟",
            "ما سبب وجود {x} عادةً في سيارة عمرها عشر سنوات؟",
            "كم تبلغ تكلفة إصلاح {x} في الورشة عادةً؟",
            "لاحظت هذا الصباح وأنا في طريقي إلى العمل وجود {x}. ما الذي يجب أن أفحصه أولاً؟",
            "هل يمكنني إصلاح {x} بنفسي، أم أحتاج إلى ميكانيكي؟",
            "كيف أتجنب مشكلة {x} في المستقبل؟",
        ),
        "hi": (
            "मेरी कार में {x} की समस्या है। क्या इसे चलाते रहना सुरक्षित है?",
            "दस साल पुरानी कार में आमतौर पर {x} की समस्या किस वजह से होती है?",
            "गैराज में {x} की समस्या ठीक करवाने में आमतौर पर कितना खर्च आता है?",
            "आज सुबह ऑफ़िस जाते हुए मुझे {x} की समस्या दिखी। सबसे पहले क्या चेक करूँ?",
            "क्या मैं {x} की समस्या खुद ठीक कर सकता हूँ, या मुझे मैकेनिक के पास जाना होगा?",
            "आगे से {x} की समस्या से कैसे बचूँ?",
        ),
        "ja": (
            "車に{x}の問題があります。このまま運転を続けても安全ですか？",
            "10年乗っている車で、{x}の原因として多いのは何ですか？",
            "{x}を修理工場で直してもらうと、ふつういくらくらいかかりますか？",
            "今朝、通勤の途中で{x}に気づきました。まず何を確認すればいいですか？",
            "{x}は自分で直せますか？それとも整備士に頼むべきですか？",
            "今後{x}を防ぐには、どうすればいいですか？",
        ),
        "ko": (
            "제 차에 {x} 문제가 있어요. 계속 운전해도 안전한가요?",
            "10년 된 차에서 {x} 문제가 생기는 흔한 원인은 뭔가요?",
            "정비소에서 {x} 수리하면 보통 비용이 얼마나 드나요?",
            "오늘 아침 출근길에 {x} 증상을 발견했어요. 뭐부터 확인해야 할까요?",
            "{x} 문제는 제가 직접 고칠 수 있나요, 아니면 정비사한테 가야 하나요?",
            "앞으로 {x} 문제를 예방하려면 어떻게 해야 하나요?",
        ),
    },
)

_BY_SUBJECT: dict[str, _Subject] = dict(zip(SUBJECTS, (_FOOD, _TRAVEL, _PYTHON, _HEALTH, _EDUCATION, _MONEY, _HOME,
                                                       _CARS)))


def _check_tables() -> None:
    """Every subject has every language, with as many templates and fillers as English, one slot a template."""
    for subject, table in _BY_SUBJECT.items():
        for language in LANGUAGES:
            templates, fillers = table.templates[language], table.fillers[language]
            if len(templates) != len(table.templates["en"]) or len(fillers) != len(table.fillers["en"]):
                raise AssertionError(f"{subject}/{language}: not aligned with English")
            if any(t.count(SLOT) != 1 for t in templates):
                raise AssertionError(f"{subject}/{language}: a template without exactly one {SLOT}")


_check_tables()


def _text(subject: str, language: str, template: int, filler: int) -> str:
    table = _BY_SUBJECT[subject]
    return table.templates[language][template].replace(SLOT, table.fillers[language][filler])


def _combinations(subject: str) -> list[tuple[int, int]]:
    table = _BY_SUBJECT[subject]
    return [(t, f) for t in range(len(table.templates["en"])) for f in range(len(table.fillers["en"]))]


def cell_texts(subject: str, language: str) -> list[str]:
    """Every distinct request of a (subject, language) cell, in template-major order."""
    _check_cell(subject, language)
    return list(dict.fromkeys(_text(subject, language, t, f) for t, f in _combinations(subject)))


def parallel_pairs(subject: str, language: str) -> list[tuple[str, str]]:
    """(English request, the same request in `language`) for every template index and filler index."""
    _check_cell(subject, language)
    return [(_text(subject, "en", t, f), _text(subject, language, t, f)) for t, f in _combinations(subject)]


def _check_cell(subject: str, language: str) -> None:
    if subject not in _BY_SUBJECT:
        raise ValueError(f"unknown subject {subject!r}; one of {SUBJECTS}")
    if language not in LANGUAGES:
        raise ValueError(f"unknown language {language!r}; one of {LANGUAGES}")


def _user_sizes(count: int, users: int | None, rng: random.Random) -> list[int]:
    """How many conversations each of a cell's users writes (1 to 3 each, `count` in all): `users` of them,
    or as many as random sizes need."""
    if users is None:
        sizes = []
        while sum(sizes) < count:
            sizes.append(min(rng.randint(1, 3), count - sum(sizes)))
        return sizes
    if not users <= count <= 3 * users:
        raise ValueError(f"{users} users cannot write {count} conversations of a cell at 1 to 3 each")
    sizes = [1] * users
    for _ in range(count - users):
        sizes[rng.choice([i for i, size in enumerate(sizes) if size < 3])] += 1
    return sizes


def multilingual_conversations(per_cell: int, seed: int, languages: tuple[str, ...] = LANGUAGES,
                               subjects: tuple[str, ...] = SUBJECTS, users_per_cell: int | None = None) -> list[dict]:
    """`per_cell` one-turn conversations for every (subject, language) cell, shuffled; deterministic for a
    seed. Each cell's requests are drawn without replacement from its distinct template x filler texts
    (ValueError if `per_cell` exceeds them). Each user writes 1 to 3 of a cell's conversations:
    `users_per_cell` users a cell (ValueError unless users_per_cell <= per_cell <= 3 x users_per_cell),
    or, by default, as many as random sizes of 1 to 3 make. Timestamps fall on DAY (UTC)."""
    if per_cell < 1:
        raise ValueError(f"per_cell must be at least 1, got {per_cell}")
    for subject in subjects:
        for language in languages:
            _check_cell(subject, language)
    rng = random.Random(f"multilingual-{seed}")
    drawn = []  # (subject, language, text, user index)
    users = 0
    for subject in subjects:
        for language in languages:
            texts = cell_texts(subject, language)
            if per_cell > len(texts):
                raise ValueError(f"per_cell={per_cell} exceeds the {len(texts)} distinct requests of "
                                 f"{subject}/{language}")
            chosen = rng.sample(texts, per_cell)
            owners = [users + i for i, size in enumerate(_user_sizes(per_cell, users_per_cell, rng)) for _ in range(size)]
            users = owners[-1] + 1
            drawn += [(subject, language, text, owner) for text, owner in zip(chosen, owners)]
    rng.shuffle(drawn)
    start = dt.datetime.combine(DAY, dt.time(), tzinfo=dt.timezone.utc)
    records = []
    for index, (subject, language, text, owner) in enumerate(drawn):
        timestamp = start + dt.timedelta(seconds=rng.randrange(86400))
        records.append({
            "conversation_id": f"ml-{seed}-{index:06d}",
            "user_id": f"ml-user-{seed}-{owner:06d}",
            "timestamp": timestamp.isoformat().replace("+00:00", "Z"),
            "messages": [{"role": "user", "content": text}],
            "source": "urania-beam synthetic multilingual sample",
            "subject": subject,
            "language": language,
        })
    return records


def write_multilingual(path: str, per_cell: int, seed: int) -> int:
    """Writes the set as JSON Lines (gzip if path ends in .gz); returns the number of lines."""
    records = multilingual_conversations(per_cell, seed)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wb") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n")
    return len(records)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", required=True, help="JSON Lines file to write (.jsonl or .jsonl.gz)")
    parser.add_argument("--per_cell", type=int, default=30,
                        help=f"conversations per (subject, language) cell; at most {len(_combinations(SUBJECTS[0]))}")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    lines = write_multilingual(args.output, args.per_cell, args.seed)
    print(f"wrote {lines} conversations ({len(SUBJECTS)} subjects x {len(LANGUAGES)} languages x {args.per_cell}) "
          f"to {args.output}")


if __name__ == "__main__":
    main()
