"""Child Python processes of the tests."""

from __future__ import annotations

import sys

PYTHON = (sys.executable, "-P")
"""This interpreter without the working directory on ``sys.path`` (``-P``): a child imports the
``codegen`` the tests import (the installed package), not the source tree it runs in."""
