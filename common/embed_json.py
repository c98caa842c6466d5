"""Writes a C++ source embedding JSON files into the binary.

usage: embed_json.py OUT.cc HEADER FUNCTION FILE...

Each file becomes a byte array (no raw-string length or delimiter limits);
its name without ".json" is the entry's name. FUNCTION returns the table of
(name, text) entries declared in HEADER.
"""
import os
import sys


def main() -> None:
    out_path, header, function = sys.argv[1:4]
    inputs = sorted(sys.argv[4:], key=os.path.basename)
    lines = [f'#include "{header}"', "", "namespace sparsefuse {", "namespace {"]
    entries = []
    for index, path in enumerate(inputs):
        data = open(path, "rb").read()
        body = ",".join(str(b) for b in data)
        lines.append(f"const char kEntry{index}[] = {{{body}}};")
        name = os.path.basename(path)[: -len(".json")]
        entries.append(f'    {{"{name}", std::string_view(kEntry{index}, {len(data)})}},')
    lines += ["}  // namespace", "", f"const std::vector<EmbeddedJson>& {function}() {{",
              "  static const std::vector<EmbeddedJson> table = {"]
    lines += entries
    lines += ["  };", "  return table;", "}", "", "}  // namespace sparsefuse", ""]
    with open(out_path, "w") as out:
        out.write("\n".join(lines))


if __name__ == "__main__":
    main()
