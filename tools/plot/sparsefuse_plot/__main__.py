import sys

from sparsefuse_plot.cli import main

sys.exit(main(sys.argv[1:]))
