"""The use cases: one service per feature, each taking the services it needs in its constructor
(bot/core/engine.py builds them once). `base.py` holds what they share: the store, the bank,
the clock and the helpers that find a community, a member, a question and a round's card."""
