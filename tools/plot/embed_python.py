"""Writes a C++ source embedding the sparsefuse_plot package (argv[2:]) into argv[1].

Each file becomes a byte array under the name sparsefuse_plot/<file name>;
the sparsefuse binary writes them to a temporary directory and runs them
with /usr/bin/python3, so `sparsefuse plot` works from any directory.
"""
import os
import sys


def main() -> None:
    out_path, inputs = sys.argv[1], sorted(sys.argv[2:], key=os.path.basename)
    lines = ['#include "tools/plot/python_runner.h"', "", "namespace sparsefuse::plot {", "namespace {"]
    entries = []
    for index, path in enumerate(inputs):
        data = open(path, "rb").read()
        lines.append(f"const char kFile{index}[] = {{{','.join(str(b - 256 if b > 127 else b) for b in data)}}};")
        name = "sparsefuse_plot/" + os.path.basename(path)
        entries.append(f'    {{"{name}", std::string_view(kFile{index}, {len(data)})}},')
    lines += ["}  // namespace", "", "const std::vector<EmbeddedFile>& embedded_python_files() {",
              "  static const std::vector<EmbeddedFile> files = {"]
    lines += entries
    lines += ["  };", "  return files;", "}", "", "}  // namespace sparsefuse::plot", ""]
    with open(out_path, "w") as out:
        out.write("\n".join(lines))


if __name__ == "__main__":
    main()
