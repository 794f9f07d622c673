# The bot image: the bot and its console, Discord and Slack adapters; no torch (demos run on
# a worker with `pip install '.[demo]'`). Runs as a non-root user; the database lives in /data.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    STUDYBOT_DATABASE_URL=sqlite:////data/studybot.db \
    STUDYBOT_QUESTIONS_DIR=/app/questions

WORKDIR /app
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY demos ./demos
COPY questions ./questions
# The bank names its executable facts; the loader checks that they exist.
COPY tests/facts ./tests/facts
RUN pip install '.[postgres]' \
    && useradd --create-home --uid 10001 studybot \
    && mkdir -p /data && chown studybot:studybot /data

USER studybot
VOLUME ["/data"]
ENTRYPOINT ["studybot"]
CMD ["run"]
