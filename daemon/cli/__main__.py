"""``python -m edge_agentd.cli``: the same as the ``edge-agent`` command."""

import sys

from edge_agentd.cli.main import main

sys.exit(main())
