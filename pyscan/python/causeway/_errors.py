"""The one exception class both engines raise for a capture they cannot read."""


class CaptureError(Exception):
    """A capture (or one ring of it) could not be read.

    ``str(e)`` is the scanner's one-line message, ``"<path>: <problem>"``, the same text
    ``causeway report`` prints after ``causeway: error:``. ``path`` names the file (or directory) at
    fault and ``problem`` says what is wrong with it.
    """

    def __init__(self, message, path=None, problem=None):
        super().__init__(message)
        self.message = message
        self.path = path
        self.problem = problem

    def __str__(self):
        return self.message
