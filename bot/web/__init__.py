"""The study web page (issue 13): leaderboards, a member's progress, the bank, demo results
and an admin view, served by the bot process (bot/web/app.py)."""
