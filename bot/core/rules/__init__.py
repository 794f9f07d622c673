"""The rules, as pure functions and values with no storage and no clock of their own: points and
streaks, time zones, spaced repetition and ratings, the codecs of button ids, what a /demo or a
member's question may ask, what the answers say about a question. The services apply them."""
