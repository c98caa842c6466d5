"""Validates JSON files against the schemas in docs/schema/ (python3-jsonschema, Debian).

usage: validate.py SCHEMA_DIR KIND=FILE... ; KIND is a schema's name without .schema.json.
Exits 1 listing every file that does not validate, with the JSON pointer of each error."""
import json
import os
import sys

import jsonschema


def main(argv):
    schema_dir, pairs = argv[0], argv[1:]
    failures = 0
    validators = {}
    for pair in pairs:
        kind, path = pair.split("=", 1)
        if kind not in validators:
            with open(os.path.join(schema_dir, f"{kind}.schema.json"), encoding="utf-8") as f:
                schema = json.load(f)
            jsonschema.Draft202012Validator.check_schema(schema)
            validators[kind] = jsonschema.Draft202012Validator(schema)
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
        for error in validators[kind].iter_errors(document):
            pointer = "/" + "/".join(str(p) for p in error.absolute_path)
            print(f"FAIL: {path} ({kind}) at {pointer}: {error.message[:300]}")
            failures += 1
    print(f"{len(pairs)} files checked, {failures} errors")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
