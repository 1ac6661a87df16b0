"""Exit codes shared by every subcommand."""

EXIT_OK = 0
EXIT_FOUND = 1  # generated files stale, schema changes that break the mode, invalid data found
EXIT_ERROR = 2  # bad arguments, invalid schemas, unreadable files
EXIT_INTERRUPTED = 130
