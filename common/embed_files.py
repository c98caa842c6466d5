"""Writes a C++ source that compiles files into the binary.

usage: embed_files.py OUT.cc HEADER NAMESPACE FUNCTION TYPE NAMING FILE...

Defines `const std::vector<TYPE>& NAMESPACE::FUNCTION()` (declared in HEADER)
returning one {name, contents} entry per file, as std::string_views over byte
arrays (no raw-string length or delimiter limits, any bytes). NAMING is
"stem" (file name without extension, e.g. traces/bert-large.json ->
bert-large) or "prefix:DIR" (DIR/<file name>).
"""
import os
import sys


def entry_name(path: str, naming: str) -> str:
    base = os.path.basename(path)
    if naming == "stem":
        return os.path.splitext(base)[0]
    if naming.startswith("prefix:"):
        return naming[len("prefix:"):] + "/" + base
    raise SystemExit(f"embed_files.py: unknown naming {naming!r}")


def main() -> None:
    out_path, header, namespace, function, type_name, naming = sys.argv[1:7]
    inputs = sorted(sys.argv[7:], key=os.path.basename)
    lines = [f'#include "{header}"', "", f"namespace {namespace} {{", "namespace {"]
    entries = []
    for index, path in enumerate(inputs):
        data = open(path, "rb").read()
        body = ",".join(str(b - 256 if b > 127 else b) for b in data)  # char may be signed
        lines.append(f"const char kFile{index}[] = {{{body}}};")
        entries.append(f'    {{"{entry_name(path, naming)}", std::string_view(kFile{index}, {len(data)})}},')
    lines += ["}  // namespace", "", f"const std::vector<{type_name}>& {function}() {{",
              f"  static const std::vector<{type_name}> table = {{"]
    lines += entries
    lines += ["  };", "  return table;", "}", "", f"}}  // namespace {namespace}", ""]
    with open(out_path, "w") as out:
        out.write("\n".join(lines))


if __name__ == "__main__":
    main()
