"""Platform-neutral study engine: no discord, slack_bolt, apscheduler or torch here."""
