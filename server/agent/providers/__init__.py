"""Model providers: `anthropic` (SDK), `claude-cli` (an installed `claude`)."""
