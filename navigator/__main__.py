import sys

from navigator.cli import main

sys.exit(main())
