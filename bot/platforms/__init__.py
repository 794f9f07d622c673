"""Platform adapters: each makes one engine call per event and renders the card that comes back."""
