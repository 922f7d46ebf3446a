"""The one base of every error this package raises on purpose.

A command catches `EvalError` once and prints its message: the message already names the file,
the field and the fix, so no caller formats it again. Subclasses keep the built-in class they
always were (`ValueError`, `RuntimeError`, `OSError`) as a second base, so code that caught those
still does.
"""


class EvalError(Exception):
    """An error whose message is written for the user: what is wrong, where, and what to do."""
