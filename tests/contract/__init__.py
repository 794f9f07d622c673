"""Contract checks against what Discord and Slack publish: Discord's OpenAPI document
(tests/vendor/discord-openapi.json) and Slack's Block Kit models in slack_sdk. The fakes run
them on every request; a violation lands in `ledger` and fails the test that caused it."""
