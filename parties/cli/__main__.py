"""``python -m parties.cli ARGS`` = ``ppdm ARGS`` (for a source tree without the console script)."""

import sys

from parties.cli import main

sys.exit(main())
