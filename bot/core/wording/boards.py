"""/score and the leaderboards."""

from __future__ import annotations

from bot.core.values import LeaderboardCard, LeaderboardRow, ScoreCard
from bot.core.wording.common import count, counted, percent
from bot.core.wording.learning import calibration_lines, levels_lines, streak_repair_lines


def score_lines(card: ScoreCard, with_link: bool = True) -> list[str]:
    rank = f"rank {card.week_rank}" if card.week_rank else "unranked"
    lines = [
        f"{card.user}: {counted(card.week_points, 'point')} in {card.week} ({rank}), {card.total_points} all time.",
        f"Daily accuracy {percent(card.daily)}; practice {percent(card.practice)}.",
        f"Streak {card.streak} (best {card.best_streak}). Reviews due: {card.reviews_due}.",
        *levels_lines(card.levels),
        *calibration_lines(card.calibration),
        *streak_repair_lines(card),
    ]
    if card.link and with_link:
        lines.append(f"{MEMBER_LINK}: {card.link}")
    return lines


# The signed web links /score and /config carry (the page behind them is bot/web).
MEMBER_LINK = "Your progress on the web (a private link that expires)"


def leaderboard_title(card: LeaderboardCard) -> str:
    return "All-time leaderboard" if card.scope == "all" else f"Leaderboard for {card.scope}"


def leaderboard_row(row: LeaderboardRow) -> str:
    return f"{row.rank}. {row.user}: {row.points}"


EMPTY_BOARD = "No points yet."


def leaderboard_lines(card: LeaderboardCard) -> list[str]:
    """The ranked rows (or that nobody scored), then a line for admins when questions are flagged."""
    lines = [leaderboard_row(row) for row in card.rows] or [EMPTY_BOARD]
    if card.flagged:
        shown = ", ".join(card.flagged[:5]) + (f" and {len(card.flagged) - 5} more" if len(card.flagged) > 5 else "")
        lines.append(
            f"For admins: the answers suggest {count(len(card.flagged), 'question')} need a look ({shown}); "
            "/config shows why."
        )
    return lines


HOME_BOARD_TITLE = "This week"
