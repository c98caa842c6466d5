"""The one exception type that means bad input (exit status 2)."""


class InputError(Exception):
    """A problem with what the user asked for; the message names the option
    or file and the expected form, and is printed as one line."""
