import sys

from drarena.cli import main

sys.exit(main())
