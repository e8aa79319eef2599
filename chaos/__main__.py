"""``python -m chaos`` is the ``kafka-chaos`` command."""

import sys

from runner.cli import main

sys.exit(main())
