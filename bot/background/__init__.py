"""What a running bot does beside answering events: the scheduler (schedule/), the deliverers
that send the outbox (delivery.py), the demo-job runner (demo_runner.py), the weekly FSRS fits
(fsrs_runs.py) and the bridge from the platforms' event loop into the engine's threads
(bridge.py). The composition root (bot/wiring.py) builds them; none imports a platform."""
