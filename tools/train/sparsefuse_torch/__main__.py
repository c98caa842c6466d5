import sys

from sparsefuse_torch.cli import main

sys.exit(main(sys.argv[1:]))
