"""Writes `sam_friends_android_en.txt`: a longer fictional Android export (24 h clock) of Sam's group
chat and one-to-one chats, so the demo has enough of Sam's replies to fine-tune on.

    python examples/whatsapp/make_examples.py          # rewrites the file, byte for byte the same every time

Every line is invented: small scenes written for this project (plans, food, hikes, films, work, favours),
with slots filled from short lists, strung into sessions a few hours to two days apart. `tests/test_whatsapp.py`
checks that the committed file matches this script. The demo config reads this folder beside `examples/whatsapp/`.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path

OUT = Path(__file__).resolve().parent / "sam_friends_android_en.txt"
FRIENDS = ("Priya", "Alex", "Jordan", "Hugo", "Mei")
SLOTS = {
    "day": ("Saturday", "Sunday", "Friday", "tomorrow", "Thursday"),
    "time": ("8:30", "9", "10", "11:30", "6", "7:15"),
    "place": ("the lake trail", "the old mill", "the harbour", "the market", "the park by the river",
              "the climbing gym", "the bakery on Elm Street", "the cinema downtown"),
    "food": ("lentil soup", "a mushroom risotto", "tacos", "banana bread", "a big salad", "pasta with pesto",
             "dumplings", "shakshuka"),
    "film": ("the new space film", "that French comedy", "the documentary about bees", "the detective series"),
    "thing": ("the tent", "your bike pump", "the board game", "the big pan", "my blue jacket", "the charger"),
}
# (who, text): F is the friend of the scene, S is Sam; {…} are slots, one value per scene.
SCENES: tuple[tuple[tuple[str, str], ...], ...] = (
    (("F", "Hey Sam, are you free on {day}?"), ("S", "Hey! Yes I think so 🙂 what's the plan?"),
     ("F", "Thinking of {place}"), ("S", "Love that. What time?"), ("F", "{time}?"),
     ("S", "{time} works for me. I'll bring coffee"), ("F", "Perfect, see you there")),
    (("F", "Are we still on for {day}?"), ("S", "Of course! Still {place}?"), ("F", "Yes, if the weather holds"),
     ("S", "Forecast looks good, sunny until the afternoon"), ("F", "Great"), ("S", "See you at {time} then 🙂")),
    (("F", "What are you cooking tonight?"), ("S", "Trying {food}, first time"), ("F", "Ooh send a picture"),
     ("S", "<Media omitted>"), ("S", "Not pretty but it tastes good haha"), ("F", "Recipe please!"),
     ("S", "Sure, I'll write it down for you tomorrow")),
    (("F", "Did you see {film}?"), ("S", "Not yet! Is it good?"), ("F", "So good. You'd love it"),
     ("S", "Ok it's on my list for {day}"), ("F", "Tell me what you think"), ("S", "Will do 🙂")),
    (("F", "Can I borrow {thing} this weekend?"), ("S", "Sure, no problem"), ("F", "You're a star"),
     ("S", "I'll leave it with my neighbour if I'm out"), ("F", "Thanks!!"), ("S", "Anytime")),
    (("F", "Long day at work 😩"), ("S", "Oh no, what happened?"), ("F", "Two meetings that could have been emails"),
     ("S", "haha classic. Want to grab a drink later?"), ("F", "Yes please"),
     ("S", "{place} at {time}?"), ("F", "Deal")),
    (("S", "Hey all! Anyone up for {place} on {day}?"), ("F", "Me! What time?"),
     ("S", "I was thinking {time}, then lunch after"), ("F", "Count me in"), ("S", "Great, I'll book a table")),
    (("F", "I'm running 10 minutes late, sorry"), ("S", "No worries, I'll grab us a table"),
     ("F", "You're the best"), ("S", "Take your time 🙂")),
    (("F", "Happy birthday Sam!! 🎉"), ("S", "Thank you!! 😊"), ("F", "Any plans?"),
     ("S", "Dinner at {place} with a few people, you should come!"), ("F", "I'd love to. What time?"),
     ("S", "Around {time}. I'll send the address")),
    (("F", "How was your trip?"), ("S", "Amazing, the mountains were unreal"), ("S", "<Media omitted>"),
     ("F", "Wow. Jealous"), ("S", "We should all go next summer"), ("F", "Yes let's plan it")),
    (("F", "Do you know a good place for brunch?"), ("S", "{place} does a great brunch"),
     ("S", "Get the pancakes, trust me"), ("F", "Noted haha"), ("S", "Go early, it gets busy after 11")),
    (("F", "Is it going to rain on {day}?"), ("S", "Looks like showers in the morning, dry after lunch"),
     ("F", "Should we start later then?"), ("S", "Yes, let's say {time} instead"), ("F", "Sounds good")),
    (("F", "I made {food} with your recipe"), ("S", "Yay! How did it turn out?"), ("F", "Delicious, thank you"),
     ("S", "So happy to hear that 🙂"), ("F", "Next time I'm cooking for you"), ("S", "I'll hold you to that haha")),
    (("F", "Are you coming to the game night on {day}?"), ("S", "Yes! Should I bring something?"),
     ("F", "Snacks would be great"), ("S", "I'll make {food}"), ("F", "Perfect")),
    (("S", "Did I leave {thing} at yours?"), ("F", "Let me check"), ("F", "Yes, it's here"),
     ("S", "Phew. I'll pick it up on {day} if that's ok"), ("F", "Of course")),
    (("F", "Feeling a bit down today"), ("S", "Oh no, I'm sorry. Want to talk?"), ("F", "Maybe later, thanks"),
     ("S", "Ok. I'm around all evening, call me anytime"), ("F", "Thank you, that means a lot"),
     ("S", "Always ❤️")),
    (("F", "Quick question, what time does {place} open?"), ("S", "I think at {time}"),
     ("S", "But check their page, it changes on weekends"), ("F", "Thanks!")),
    (("F", "Congrats on the new job!!"), ("S", "Thank you! Still can't believe it"),
     ("F", "When do you start?"), ("S", "Next month. A bit nervous haha"), ("F", "You'll be great"),
     ("S", "Thanks, that helps 🙂")),
    (("F", "Run tomorrow morning?"), ("S", "Yes! Usual loop?"), ("F", "Yes, {time} at the bridge"),
     ("S", "I'll be there"), ("F", "Don't be late this time haha"), ("S", "Never 😇")),
    (("F", "Can you recommend a book?"), ("S", "Just finished a great one about the history of maps"),
     ("F", "Sounds nerdy, I'm in"), ("S", "haha it is, but it's really good. I'll lend it to you")),
)


def _fill(text: str, values: dict[str, str]) -> str:
    return text.format(**values)


def generate(seed: int = 7, sessions: int = 140) -> str:
    rng = random.Random(seed)
    when = datetime(2024, 4, 1, 9, 0)
    lines = [f"{when:%d/%m/%Y, %H:%M} - Messages and calls are end-to-end encrypted. Only people in this chat "
             "can read, listen to, or share them. Learn more."]
    for _ in range(sessions):
        when += timedelta(hours=rng.randint(7, 40), minutes=rng.randint(0, 59))
        when = when.replace(hour=rng.randint(8, 21))
        for _ in range(rng.choice((1, 1, 2))):
            friend = rng.choice(FRIENDS)
            values = {k: rng.choice(v) for k, v in SLOTS.items()}
            for who, text in rng.choice(SCENES):
                when += timedelta(minutes=rng.randint(0, 4))
                author = "Sam" if who == "S" else friend
                lines.append(f"{when:%d/%m/%Y, %H:%M} - {author}: {_fill(text, values)}")
    return "\n".join(lines) + "\n"


def main() -> None:
    OUT.write_text(generate(), encoding="utf-8", newline="\n")


if __name__ == "__main__":
    main()
