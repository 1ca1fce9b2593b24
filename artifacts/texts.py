"""The MiniLM recipe's check texts, written for it: sentences of varied length and kind (three longer than the
encoder's 128 tokens, so truncation is checked too), and paraphrase pairs among unrelated sentences."""

LONG = ("The committee met on a rainy Tuesday morning to review the budget for the coming year, and after a long "
        "discussion about the cost of repairing the old bridge, the price of new buses, the salaries of the "
        "teachers, the opening hours of the public library and the plan to plant two thousand trees along the "
        "river, the members agreed to postpone the final vote until the auditors had checked every figure twice, "
        "because several of the numbers in the draft did not add up and nobody wanted to explain a mistake to "
        "the town's residents at the next public meeting, which was already expected to be long and difficult "
        "given the number of complaints about potholes, noise from the new factory, parking near the station "
        "and the slow repair of the swimming pool that had been closed since the storms of last winter.")

SENTENCES = [
    "Hello!",
    "ok",
    "The cat sat on the mat.",
    "Where is the nearest train station?",
    "I can't believe it's already December; where did the year go?",
    "Please reset my password, I'm locked out of my account since this morning.",
    "The invoice #4471 for €1,250.00 is overdue by 14 days.",
    "Café au lait, crème brûlée and a naïve résumé walk into a bar.",
    "東京は日本の首都です。",
    "Das Wetter in München ist heute sonnig und warm.",
    "Meeting moved to 3:30pm — bring the Q3 slides 📊 and coffee ☕.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "The quick brown fox jumps over the lazy dog while the dog dreams of chasing rabbits across the field.",
    "Antidisestablishmentarianism is a famously long English word, as is "
    "pneumonoultramicroscopicsilicovolcanoconiosis.",
    "My package arrived damaged: the box was crushed and two of the glasses inside were broken.",
    "Reminder: the dentist appointment is on Friday at 9 a.m., don't forget to bring your insurance card.",
    "In 1969, Apollo 11 landed on the Moon and Neil Armstrong became the first person to walk on its surface.",
    "She sells sea shells by the sea shore.",
    "Can you recommend a good vegetarian restaurant near the city centre that is open late on Sundays?",
    "The function returns None when the input list is empty, otherwise the largest element.",
    "Stocks fell sharply on Monday after the central bank raised interest rates by half a percentage point.",
    LONG,
    "Dear team, " + " ".join(f"item {i} of the agenda is the review of report number {i * 7}." for i in range(1, 16)),
    "word " * 200,
]

# (a sentence, its paraphrase): each one's nearest neighbour by cosine among all of PARAPHRASES and UNRELATED
# must be the other.
PARAPHRASES = [
    ("How do I reset my password?", "What are the steps to change a forgotten password?"),
    ("The train to Paris was cancelled because of a strike.", "A strike led to the cancellation of the Paris train."),
    ("I would like to book a table for two tonight.", "Can I reserve a table for two people this evening?"),
    ("The weather will be cold and rainy tomorrow.", "Tomorrow's forecast says it will be chilly and wet."),
    ("My laptop battery drains very quickly.", "The battery of my notebook computer runs out fast."),
    ("She won the chess tournament last weekend.", "Last weekend she came first in the chess competition."),
    ("The package was delivered to the wrong address.", "The parcel was sent to an incorrect address."),
    ("Doctors recommend drinking plenty of water every day.",
     "Physicians advise people to drink a lot of water daily."),
    ("The museum is closed on Mondays.", "On Mondays the museum does not open."),
    ("He is learning to play the guitar.", "He is taking guitar lessons."),
]

UNRELATED = [
    "Volcanoes form where tectonic plates meet.",
    "The recipe needs three eggs and a cup of flour.",
    "Our quarterly revenue grew by eight percent.",
    "Penguins live mostly in the Southern Hemisphere.",
    "Turn left at the second traffic light.",
    "The concert starts at eight o'clock.",
]
