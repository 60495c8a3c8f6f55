#!/usr/bin/env python3
"""Fails when the code reads an environment variable that README's Environment table lacks.

Usage: check_env_docs.py [--root DIR] [--list]
  --root DIR  the tree to check (default: this checkout); it must hold README.md
  --list      print every variable found, with the first file that reads it
A variable counts as read when its name appears as a string literal (upper case, with at least
one '_', or one of the bare names in BARE) in a source file that calls getenv: the files that
read the environment name their variables as literals, also in tables (launcher_detection.cpp).
Every MEMLOOM_* variable but the test suite's must also be in memloom-info's table
(src/base/settings_table.cpp). Exit status: 0 when the tables name them all, 1 when one is missing (each printed with its
file), 2 when the table cannot be read.
"""
import argparse
import os
import re
import sys

SCANNED = ("src", "hw", "sim", "tools", "bench", "examples", "tests/support")
SOURCE_SUFFIXES = (".h", ".hpp", ".c", ".cc", ".cpp", ".cu", ".cuh")
BARE = {"RANK", "PATH"}
# Read, but not memloom's to document: the launcher looks PROGRAM up on PATH as a shell does.
NOT_OURS = {"PATH"}
LITERAL = re.compile(r'"([A-Z][A-Z0-9]*(?:_[A-Za-z0-9]+)+|' + "|".join(sorted(BARE)) + r')"')
CODE_NAME = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)`")


def documented(root):
    path = os.path.join(root, "README.md")
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError as error:
        sys.exit(f"check_env_docs: cannot read {path}: {error}")
    names, in_section = set(), False
    for line in lines:
        if line.startswith("## "):
            in_section = line.strip() == "## Environment"
            continue
        if in_section and line.startswith("|"):
            first_cell = line.split("|")[1]
            names.update(CODE_NAME.findall(first_cell))
    if not names:
        print(f"check_env_docs: {path} has no '## Environment' table", file=sys.stderr)
        sys.exit(2)
    return names


def read_in_code(root):
    found = {}
    for top in SCANNED:
        for folder, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(folder, name)
                text = open(path, encoding="utf-8", errors="replace").read()
                if "getenv" not in text:
                    continue
                for variable in LITERAL.findall(text):
                    found.setdefault(variable, os.path.relpath(path, root))
    return found


def missing_from_settings(root, code):
    """MEMLOOM_* variables of the library and tools that memloom-info's table does not list."""
    path = os.path.join(root, "src", "base", "settings_table.cpp")
    listed = set(LITERAL.findall(open(path, encoding="utf-8").read()))
    return {v: p for v, p in code.items()
            if v.startswith("MEMLOOM_") and not v.startswith("MEMLOOM_TEST_") and v not in listed}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    table = documented(args.root)
    code = read_in_code(args.root)
    if args.list:
        for variable, path in sorted(code.items()):
            print(f"{variable:36} {path}")
    missing = {v: p for v, p in code.items() if v not in table and v not in NOT_OURS}
    for variable, path in sorted(missing.items()):
        print(f"check_env_docs: {variable} is read in {path} but missing from README's "
              "Environment table", file=sys.stderr)
    unlisted = missing_from_settings(args.root, code)
    for variable, path in sorted(unlisted.items()):
        print(f"check_env_docs: {variable} is read in {path} but missing from memloom-info's "
              "table (src/base/settings_table.cpp)", file=sys.stderr)
    if missing or unlisted:
        return 1
    print(f"check_env_docs: all {len(code)} variables read in code are in README's table")
    return 0


if __name__ == "__main__":
    sys.exit(main())
