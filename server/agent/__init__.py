"""The embedded agent: the turn loop, its model providers, tools, permissions and memory."""
