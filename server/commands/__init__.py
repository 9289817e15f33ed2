"""Command-line subcommands; each module offers `register(subparsers)`."""
