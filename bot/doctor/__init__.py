"""`studybot doctor` and `studybot health`: the shared checks and their report (report.py), the
small check values and JSON-over-HTTP client they and each platform's checks use (checks.py)."""
