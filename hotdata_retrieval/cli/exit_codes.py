"""The exit codes of every ``hdq`` command."""

from __future__ import annotations

EXIT_OK = 0
"""The command did what was asked."""

EXIT_INVALID_PLAN = 1
"""The plan (or a value in it) is invalid, or cannot be compiled for the dialect: one line on
stderr names the bad value."""

EXIT_USAGE = 2
"""The command line itself is wrong (an unknown or missing option, a malformed option value,
options that cannot be combined): click's usage error."""

EXIT_INTERRUPTED = 130
"""The command was interrupted (Ctrl-C, SIGINT): 128 + the signal's number, as a shell reports
a command a signal ended; ``interrupted`` on stderr."""
