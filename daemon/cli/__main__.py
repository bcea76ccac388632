"""``python -m edge_agent.cli``: the same as the ``edge-agent`` command."""

import sys

from edge_agent.cli.main import main

sys.exit(main())
