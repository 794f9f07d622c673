"""The demo worker's side: what a GPU host runs without the engine or the database. The Celery
app (celery_app.py, `studybot worker`), one demo in a child process with its limits
(demo_process.py) and a community's FSRS fit (fsrs_fit.py). Nothing here imports bot.core, the
store or a platform (the import contracts in pyproject.toml hold it), so a worker host needs
only torch and these."""
