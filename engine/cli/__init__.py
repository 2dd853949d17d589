"""Command-line subcommands, one module each; every module defines ``register(subparsers)``."""
