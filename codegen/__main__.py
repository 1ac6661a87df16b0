"""``python -m codegen`` runs the ``tfr-gen`` command."""

import sys

from codegen.cli import main

sys.exit(main())
