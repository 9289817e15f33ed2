"""Agent-side helpers: talking to a Messages-API model (including the scripted test model)."""
