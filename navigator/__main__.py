import sys

from navigator.frontends.cli import main

sys.exit(main())
