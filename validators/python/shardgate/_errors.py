"""The exception every shardgate call raises for bad input or an internal error."""


class Error(RuntimeError):
    """A shardgate error. The message names the file and the place (byte offset,
    model.mil:line:col, JSON path); ``exit_code`` is what the CLIs would exit with for it
    (2 bad input or usage, 3 internal error)."""

    def __init__(self, message, exit_code=2):
        super().__init__(message)
        self.exit_code = exit_code
