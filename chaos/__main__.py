"""``python -m chaos`` is the ``kafka-chaos`` command."""

import sys

from chaos.cli import main

sys.exit(main())
