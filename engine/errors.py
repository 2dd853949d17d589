"""User-facing errors: one clear sentence each, shown without a traceback by the CLI and the app."""


class LensError(Exception):
    """A mistake in the user's input or request that they can fix (bad file, unknown dataset, ...)."""
