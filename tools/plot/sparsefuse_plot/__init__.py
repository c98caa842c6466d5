"""Figures and a report from sparsefuse result.json files.

Run through the CLI (`sparsefuse plot DIR`, `sparsefuse report DIR`), which
embeds this package, or from a checkout:
  PYTHONPATH=tools/plot /usr/bin/python3 -m sparsefuse_plot plot DIR
Needs Debian's python3-matplotlib (tools/setup installs it). See README.md.
"""
