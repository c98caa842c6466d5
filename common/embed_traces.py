"""Writes a C++ source that embeds trace JSON files (argv[2:]) into argv[1].

Each file becomes a byte array, which avoids raw-string length and delimiter
limits; the model name is the file name without ".json".
"""
import os
import sys


def main() -> None:
    out_path, inputs = sys.argv[1], sorted(sys.argv[2:], key=os.path.basename)
    lines = ['#include "common/builtin_traces.h"', "", "namespace sparsefuse {", "namespace {"]
    entries = []
    for index, path in enumerate(inputs):
        data = open(path, "rb").read()
        body = ",".join(str(b) for b in data)
        lines.append(f"const char kTrace{index}[] = {{{body}}};")
        name = os.path.basename(path)[: -len(".json")]
        entries.append(f'    {{"{name}", std::string_view(kTrace{index}, {len(data)})}},')
    lines += ["}  // namespace", "", "const std::vector<BuiltinTrace>& builtin_trace_table() {",
              "  static const std::vector<BuiltinTrace> table = {"]
    lines += entries
    lines += ["  };", "  return table;", "}", "", "}  // namespace sparsefuse", ""]
    with open(out_path, "w") as out:
        out.write("\n".join(lines))


if __name__ == "__main__":
    main()
