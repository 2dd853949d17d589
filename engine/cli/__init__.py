"""Command-line subcommands, one module each; every module defines ``register(subparsers)``.

May import any engine layer (the command line sits on top, beside the views).
"""
