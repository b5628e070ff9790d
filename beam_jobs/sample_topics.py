"""Planted topics for the synthetic sample data (see beam_jobs.generate_sample).

Each topic has user-turn templates with slots, follow-up turns, and the keywords of the bundled
keyword set that an analyst would expect to see for it (used by tests and evals to measure how many
planted topics the pipeline recovers). Everything here is invented for this project.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class PlantedTopic:
    name: str
    theme: str  # a broader theme several planted topics share: what a group of the hierarchy should hold
    expected_keywords: tuple[str, ...]
    openers: tuple[str, ...]
    followups: tuple[str, ...]
    slots: dict[str, tuple[str, ...]]


PLANTED_TOPICS: tuple[PlantedTopic, ...] = (
    PlantedTopic(
        name="python debugging",
        theme="software",
        expected_keywords=("python", "debugging", "error message"),
        openers=(
            "My Python script crashes with a {error} when I call {func}. How do I fix it?",
            "I keep getting {error} in Python inside a for loop over a list of dicts, what am I doing wrong?",
            "Can you help me debug this Python function? It raises {error} on line 12.",
            "Why does my Python code throw {error} when reading a CSV file with pandas?",
        ),
        followups=(
            "I added a print statement and the variable is None there.",
            "Here is the traceback, the error happens in {func}.",
            "That fixed it, but now the unit test fails with an assertion error.",
        ),
        slots={
            "error": ("KeyError", "TypeError", "IndexError", "AttributeError", "ValueError"),
            "func": ("json.loads", "sorted()", "the constructor", "dict.get", "open()"),
        },
    ),
    PlantedTopic(
        name="javascript web development",
        theme="software",
        expected_keywords=("javascript", "react", "web development", "css", "html"),
        openers=(
            "How do I center a div with CSS flexbox in my React component?",
            "My React {hook} hook runs twice on every render, is that a bug?",
            "What is the difference between let, const and var in JavaScript?",
            "How can I fetch JSON from an API in JavaScript and show it in an HTML table?",
        ),
        followups=(
            "I am using {framework} with TypeScript if that matters.",
            "The button click handler still does not update the state.",
            "Can you show the same thing with async await?",
        ),
        slots={
            "hook": ("useEffect", "useState", "useMemo", "useCallback"),
            "framework": ("Next.js", "Vite", "create-react-app", "Remix"),
        },
    ),
    PlantedTopic(
        name="sql databases",
        theme="software",
        expected_keywords=("sql", "database", "postgresql"),
        openers=(
            "Write a SQL query that joins the orders and customers tables and counts orders per {col}.",
            "My PostgreSQL query with a GROUP BY on {col} is very slow, which index should I add?",
            "How do I find duplicate rows in a SQL table based on the {col} column?",
            "What is the difference between a LEFT JOIN and an INNER JOIN in SQL?",
        ),
        followups=(
            "The table has about ten million rows.",
            "Can you rewrite it with a window function instead?",
            "I am on {engine}, does the syntax change?",
        ),
        slots={
            "col": ("country", "month", "product category", "email", "status"),
            "engine": ("MySQL", "SQLite", "PostgreSQL 15", "SQL Server"),
        },
    ),
    PlantedTopic(
        name="cooking recipes",
        theme="home and daily life",
        expected_keywords=("recipes", "cooking", "baking"),
        openers=(
            "Give me a simple recipe for {dish} that I can cook in under thirty minutes.",
            "What can I cook for dinner with {ingredient}, rice and onions?",
            "How long should I bake {dish} in the oven and at what temperature?",
            "Can I replace eggs in a {dish} recipe? I am out of eggs.",
        ),
        followups=(
            "I only have a frying pan and an oven.",
            "How many servings does that make? I am cooking for six people.",
            "Can I make it spicier with chili flakes?",
        ),
        slots={
            "dish": ("banana bread", "lasagna", "chicken curry", "pancakes", "vegetable soup"),
            "ingredient": ("chicken thighs", "chickpeas", "salmon", "tofu", "ground beef"),
        },
    ),
    PlantedTopic(
        name="travel planning",
        theme="leisure",
        expected_keywords=("travel planning", "itinerary", "flights", "hotels"),
        openers=(
            "Plan a five day itinerary for {city} in {month} on a moderate budget.",
            "What are the best neighbourhoods to book a hotel in {city} for a first visit?",
            "Is it cheaper to fly or take the train from {city} to the coast?",
            "What should I pack for a two week trip to {city} in {month}?",
        ),
        followups=(
            "We are travelling with two kids aged six and nine.",
            "Can you add a day trip outside the city to the itinerary?",
            "How much cash should I bring for food and transport each day?",
        ),
        slots={
            "city": ("Lisbon", "Kyoto", "Mexico City", "Prague", "Cape Town"),
            "month": ("April", "July", "October", "December"),
        },
    ),
    PlantedTopic(
        name="personal finance and budgeting",
        theme="money and work",
        expected_keywords=("personal finance", "budgeting", "saving money", "debt"),
        openers=(
            "I earn {amount} a month after tax. How should I split it into a budget?",
            "Should I pay off my credit card debt first or build an emergency fund?",
            "How can I save money on groceries and bills each month?",
            "What is the fifty thirty twenty budgeting rule and does it work on {amount} a month?",
        ),
        followups=(
            "My rent takes almost half of my income.",
            "I also have a student loan with four percent interest.",
            "Can you turn that into a monthly spending plan table?",
        ),
        slots={"amount": ("2,400 dollars", "3,100 euros", "1,800 pounds", "4,500 dollars")},
    ),
    PlantedTopic(
        name="investing",
        theme="money and work",
        expected_keywords=("investing", "stocks", "index funds", "retirement"),
        openers=(
            "Is it better to invest in index funds or individual stocks for retirement?",
            "How does compound interest work if I invest {amount} every month for {years} years?",
            "What is a Roth IRA and should I open one before investing in stocks?",
            "How do I rebalance a portfolio of index funds and bonds?",
        ),
        followups=(
            "I am thirty two and have no retirement savings yet.",
            "What about expense ratios, which fund is cheaper?",
            "How risky is that if the stock market drops by thirty percent?",
        ),
        slots={"amount": ("200 dollars", "500 dollars", "1,000 dollars"), "years": ("10", "20", "30")},
    ),
    PlantedTopic(
        name="fitness and workouts",
        theme="health",
        expected_keywords=("exercise", "workout plan", "strength training", "running"),
        openers=(
            "Make me a {days} day per week workout plan to build muscle at the gym.",
            "How can I improve my {distance} running time without getting injured?",
            "What is a good beginner strength training routine with dumbbells at home?",
            "How many sets and reps should I do for squats and deadlifts?",
        ),
        followups=(
            "I can only train for forty five minutes each session.",
            "My knees hurt a bit after running, should I stretch more?",
            "Should I do cardio before or after lifting weights?",
        ),
        slots={"days": ("three", "four", "five"), "distance": ("5k", "10k", "half marathon")},
    ),
    PlantedTopic(
        name="sleep and stress",
        theme="health",
        expected_keywords=("sleep", "insomnia", "stress", "anxiety"),
        openers=(
            "I wake up at {time} every night and cannot fall asleep again. What can I do?",
            "How can I manage stress and anxiety before a big {event}?",
            "What are good habits for better sleep when working night shifts?",
            "I feel anxious and my heart races at bedtime, any tips to relax?",
        ),
        followups=(
            "I drink about four cups of coffee a day.",
            "Would meditation or breathing exercises help with that?",
            "I already tried melatonin and it did not work.",
        ),
        slots={"time": ("3 am", "4 am", "2 am"), "event": ("exam", "job interview", "presentation")},
    ),
    PlantedTopic(
        name="medical symptoms",
        theme="health",
        expected_keywords=("symptoms", "headache", "fever", "medication"),
        openers=(
            "I have had a headache and a mild fever for {days} days. Should I see a doctor?",
            "What could cause a persistent dry cough and sore throat for {days} days?",
            "Is it safe to take ibuprofen and paracetamol together for a fever?",
            "My child has a rash and a fever, what symptoms mean I should go to urgent care?",
        ),
        followups=(
            "The fever goes down with medication but comes back at night.",
            "I also feel very tired and have no appetite.",
            "What dose is safe for an adult?",
        ),
        slots={"days": ("two", "three", "five")},
    ),
    PlantedTopic(
        name="job search and resumes",
        theme="money and work",
        expected_keywords=("resume", "job interview", "cover letter"),
        openers=(
            "Can you improve the bullet points on my resume for a {role} position?",
            "How do I answer the interview question about my greatest weakness for a {role} job?",
            "Write a cover letter for a {role} role at a mid sized company.",
            "What questions should I ask at the end of a job interview for a {role} position?",
        ),
        followups=(
            "I have three years of experience and a career gap of one year.",
            "Make it sound more confident but not arrogant.",
            "Can you keep the resume to one page?",
        ),
        slots={"role": ("data analyst", "nurse", "marketing manager", "software engineer", "teacher")},
    ),
    PlantedTopic(
        name="essay writing",
        theme="study and writing",
        expected_keywords=("essay writing", "academic writing", "editing"),
        openers=(
            "Help me write a thesis statement for an essay about {subject}.",
            "Can you give me an outline for a five paragraph argumentative essay on {subject}?",
            "Please edit this essay introduction about {subject} for clarity and flow.",
            "How do I write a strong conclusion for my essay on {subject}?",
        ),
        followups=(
            "The essay must be around 1500 words with APA citations.",
            "My teacher said my paragraphs are too long.",
            "Can you suggest counterarguments I should address?",
        ),
        slots={
            "subject": ("social media and teenagers", "renewable energy policy", "the causes of the French revolution",
                        "school uniforms", "universal basic income"),
        },
    ),
    PlantedTopic(
        name="poetry and creative writing",
        theme="study and writing",
        expected_keywords=("poetry", "storytelling", "fiction"),
        openers=(
            "Write a short poem about {theme} in the style of a haiku sequence.",
            "Give me an opening paragraph for a fantasy story about {theme}.",
            "Write a rhyming poem for my friend's birthday that mentions {theme}.",
            "Help me develop the plot of a short story about {theme}.",
        ),
        followups=(
            "Make the tone darker and more mysterious.",
            "Can you add a plot twist at the end?",
            "Now make it rhyme and keep it under sixteen lines.",
        ),
        slots={"theme": ("the ocean at night", "a lost robot", "autumn leaves", "a dragon who fears fire", "the moon")},
    ),
    PlantedTopic(
        name="language learning",
        theme="study and writing",
        expected_keywords=("language learning", "spanish", "french", "grammar"),
        openers=(
            "How do I conjugate the verb {verb} in the past tense in {language}?",
            "What is the fastest way to learn {language} vocabulary for a trip?",
            "Can you correct the grammar in my {language} sentence about my weekend?",
            "Explain when to use the subjunctive in {language} with examples.",
        ),
        followups=(
            "Can you give me ten practice sentences?",
            "How do I pronounce that correctly?",
            "What about the informal form with friends?",
        ),
        slots={"verb": ("to go", "to have", "to be", "to eat"), "language": ("Spanish", "French", "German", "Italian")},
    ),
    PlantedTopic(
        name="math homework",
        theme="study and writing",
        expected_keywords=("homework help", "algebra", "calculus", "equations"),
        openers=(
            "Solve the equation {equation} and explain each step.",
            "How do I find the derivative of {function}?",
            "Can you explain how to integrate {function} by substitution?",
            "My homework asks to factor {equation}, I do not understand how.",
        ),
        followups=(
            "Why do you divide both sides by two there?",
            "Can you give me a similar practice problem?",
            "How would I check that the answer is correct?",
        ),
        slots={
            "equation": ("3x + 7 = 22", "x squared minus 5x plus 6 = 0", "2x squared = 18"),
            "function": ("x cubed times sin x", "e to the 2x", "ln of x squared"),
        },
    ),
    PlantedTopic(
        name="physics and chemistry",
        theme="study and writing",
        expected_keywords=("physics", "chemistry"),
        openers=(
            "Explain Newton's {law} law of motion with an everyday example.",
            "How do I balance the chemical equation for the combustion of {compound}?",
            "Why does ice float on water? Explain the chemistry of hydrogen bonds.",
            "What is the difference between kinetic and potential energy in physics?",
        ),
        followups=(
            "Can you explain it like I am in high school?",
            "How would I calculate the force in newtons for that?",
            "What units should the answer be in?",
        ),
        slots={"law": ("first", "second", "third"), "compound": ("methane", "propane", "glucose")},
    ),
    PlantedTopic(
        name="tenant and legal questions",
        theme="people and law",
        expected_keywords=("legal advice", "tenant rights", "landlord", "contracts"),
        openers=(
            "My landlord is keeping my security deposit for {reason}. Is that legal?",
            "Can my landlord raise the rent by {percent} percent in the middle of a lease?",
            "What should I check in a rental contract before signing it?",
            "My landlord has not fixed the {problem} for a month. What are my tenant rights?",
        ),
        followups=(
            "I live in an apartment in California.",
            "Should I send a formal letter before going to small claims court?",
            "The lease does not mention this at all.",
        ),
        slots={
            "reason": ("normal wear and tear", "carpet cleaning", "painting"),
            "percent": ("ten", "fifteen", "twenty"),
            "problem": ("broken heating", "mold in the bathroom", "leaking roof"),
        },
    ),
    PlantedTopic(
        name="relationship advice",
        theme="people and law",
        expected_keywords=("relationships", "dating", "communication skills", "breakup"),
        openers=(
            "My partner and I keep arguing about {issue}. How can we communicate better?",
            "How do I know if I should break up after {years} years together?",
            "What is a good first date idea for someone who is shy?",
            "My boyfriend forgets important dates, how do I bring it up without a fight?",
        ),
        followups=(
            "We live together, which makes it harder.",
            "I do not want to hurt their feelings.",
            "Should we try couples therapy?",
        ),
        slots={"issue": ("money", "household chores", "spending time with friends"), "years": ("two", "five", "seven")},
    ),
    PlantedTopic(
        name="gardening",
        theme="home and daily life",
        expected_keywords=("gardening", "vegetables", "houseplants"),
        openers=(
            "When should I plant {plant} seeds in a small backyard vegetable garden?",
            "Why are the leaves of my {plant} turning yellow?",
            "How often should I water {plant} in hot summer weather?",
            "What is the best soil and fertilizer for growing {plant} in pots?",
        ),
        followups=(
            "The garden gets about six hours of sun.",
            "I see small white bugs on the underside of the leaves.",
            "Is compost enough or do I need fertilizer too?",
        ),
        slots={"plant": ("tomato", "basil", "pepper", "cucumber", "monstera")},
    ),
    PlantedTopic(
        name="pet care",
        theme="home and daily life",
        expected_keywords=("pets", "dogs", "cats", "dog training"),
        openers=(
            "How do I stop my {age} {pet} from {behaviour}?",
            "What should I feed a {age} {pet} and how often?",
            "My {pet} is not eating and seems tired, should I call the vet?",
            "How do I house train a {age} {pet}?",
        ),
        followups=(
            "We adopted the animal from a shelter two weeks ago.",
            "We also have a second pet at home.",
            "Are treats a good reward for training?",
        ),
        slots={
            "pet": ("puppy", "dog", "kitten", "cat"),
            "age": ("young", "senior", "one year old"),
            "behaviour": ("biting", "barking at night", "scratching the sofa", "pulling on the leash"),
        },
    ),
    PlantedTopic(
        name="video games",
        theme="leisure",
        expected_keywords=("video games", "game strategy", "minecraft"),
        openers=(
            "What is the best strategy to beat the {boss} boss in {game}?",
            "Give me tips to build a better base in {game} survival mode.",
            "Which character build is strongest for a beginner in {game}?",
            "How do I get better at ranked matches in {game}?",
        ),
        followups=(
            "I play on console, not PC.",
            "I keep running out of resources early in the game.",
            "What about playing co-op with a friend?",
        ),
        slots={
            "boss": ("final", "dragon", "second", "ice"),
            "game": ("Minecraft", "Elden Ring", "Stardew Valley", "League of Legends"),
        },
    ),
    PlantedTopic(
        name="car maintenance",
        theme="home and daily life",
        expected_keywords=("car maintenance", "car repair", "oil change", "tires"),
        openers=(
            "My car makes a {noise} noise when I brake. What could be wrong?",
            "How often should I change the oil in a {car} with 80,000 miles?",
            "The check engine light came on in my {car}, is it safe to drive?",
            "How do I know when my car tires need replacing?",
        ),
        followups=(
            "The mechanic quoted me 600 dollars for it.",
            "It only happens when the engine is cold.",
            "Can I do that repair myself with basic tools?",
        ),
        slots={"noise": ("squealing", "grinding", "clicking"), "car": ("Toyota Corolla", "Honda Civic", "Ford F-150")},
    ),
    PlantedTopic(
        name="home repair",
        theme="home and daily life",
        expected_keywords=("home repair", "plumbing", "electrical wiring", "painting walls"),
        openers=(
            "How do I fix a {fixture} that keeps {fault}?",
            "What tools do I need to patch a hole in drywall before painting the wall?",
            "Is it safe to replace a light switch myself if I turn off the breaker?",
            "How do I unclog a {fixture} without calling a plumber?",
        ),
        followups=(
            "The house was built in the 1970s.",
            "I do not have a lot of DIY experience.",
            "What should it cost if I hire someone instead?",
        ),
        slots={
            "fixture": ("kitchen sink", "toilet", "shower drain", "bathroom faucet"),
            "fault": ("dripping", "running", "leaking"),
        },
    ),
    PlantedTopic(
        name="marketing and small business",
        theme="money and work",
        expected_keywords=("marketing", "small business", "social media marketing", "branding"),
        openers=(
            "How can I market my small {business} on Instagram with no budget?",
            "Write three social media posts announcing a discount at my {business}.",
            "What is a good pricing strategy for a new {business}?",
            "Help me write a short brand story for my {business}.",
        ),
        followups=(
            "Our customers are mostly local families.",
            "Can you make the tone more playful?",
            "How do I measure if the campaign worked?",
        ),
        slots={"business": ("bakery", "yoga studio", "bike repair shop", "online candle store", "coffee shop")},
    ),
    PlantedTopic(
        name="parenting",
        theme="people and law",
        expected_keywords=("parenting", "toddlers", "teenagers"),
        openers=(
            "My {age} throws tantrums every night at bedtime. How should I respond?",
            "How much screen time is healthy for a {age}?",
            "How do I talk to my {age} about {subject}?",
            "What are good chores for a {age} to build responsibility?",
        ),
        followups=(
            "We have tried timeouts but they do not work.",
            "My partner and I disagree on how strict to be.",
            "Any book you would recommend on this?",
        ),
        slots={
            "age": ("three year old", "toddler", "teenager", "seven year old"),
            "subject": ("bullying at school", "a divorce", "using social media safely"),
        },
    ),
)
