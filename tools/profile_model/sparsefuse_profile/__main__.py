import sys

from sparsefuse_profile.cli import main

sys.exit(main(sys.argv[1:]))
