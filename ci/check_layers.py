#!/usr/bin/env python3
"""Fails on an #include between folders that LAYERS.md's table does not allow.

Usage: check_layers.py [--root DIR] [--list]
  --root DIR  the tree to check (default: this checkout); it must hold LAYERS.md
  --list      also print every include edge between layers with its count
Exit status: 0 when every edge is allowed, 1 when one is not (each is printed with the file and
line that makes it), 2 when the table cannot be read.
"""
import argparse
import collections
import os
import re
import sys

SOURCE_SUFFIXES = (".h", ".hpp", ".c", ".cc", ".cpp", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def read_table(root):
    """Returns (layers in table order, {folder: layer}, {layer: allowed set or None for any})."""
    path = os.path.join(root, "LAYERS.md")
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError as error:
        sys.exit(f"check_layers: cannot read {path}: {error}")
    folders, allowed, order = {}, {}, []
    in_table = False
    for line in lines:
        if line.startswith("## Table"):
            in_table = True
            continue
        if not in_table or not line.startswith("|"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("layer", "") or set(cells[0]) <= {"-"}:
            continue
        layer, layer_folders, may = cells
        order.append(layer)
        for folder in layer_folders.split():
            folders[folder.rstrip("/")] = layer
        allowed[layer] = None if may == "*" else set(may.split())
    if not folders:
        print(f"check_layers: no table under '## Table' in {path}", file=sys.stderr)
        sys.exit(2)
    for layer, may in allowed.items():
        for other in may or ():
            if other not in allowed:
                print(f"check_layers: {layer} may include '{other}', which is no layer",
                      file=sys.stderr)
                sys.exit(2)
    return order, folders, allowed


def layer_of(relative_path, folders):
    """The layer of the longest folder that holds relative_path, or None."""
    best, best_length = None, -1
    for folder, layer in folders.items():
        if (relative_path == folder or relative_path.startswith(folder + "/")) and \
                len(folder) > best_length:
            best, best_length = layer, len(folder)
    return best


def resolve(root, including_file, included):
    """The included file's path relative to root, or None for a file outside the tree."""
    here = os.path.dirname(including_file)
    for base in (here, root, os.path.join(root, "include")):
        candidate = os.path.normpath(os.path.join(base, included))
        if os.path.isfile(candidate):
            return os.path.relpath(candidate, root)
    return None


def source_files(root, folders):
    for folder in sorted(folders):
        top = os.path.join(root, folder)
        for directory, subdirectories, files in os.walk(top):
            subdirectories[:] = sorted(d for d in subdirectories if not d.startswith("."))
            for name in sorted(files):
                if name.endswith(SOURCE_SUFFIXES):
                    yield os.path.join(directory, name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--list", action="store_true")
    options = parser.parse_args()
    root = os.path.abspath(options.root)
    order, folders, allowed = read_table(root)

    edges = collections.Counter()
    violations = []
    checked = 0
    for path in source_files(root, folders):
        relative = os.path.relpath(path, root)
        source_layer = layer_of(relative, folders)
        checked += 1
        with open(path, encoding="utf-8", errors="replace") as text:
            for number, line in enumerate(text, 1):
                match = INCLUDE.match(line)
                if not match:
                    continue
                target = resolve(root, path, match.group(1))
                target_layer = layer_of(target, folders) if target else None
                if target_layer is None or target_layer == source_layer:
                    continue
                edges[(source_layer, target_layer)] += 1
                may = allowed[source_layer]
                if may is not None and target_layer not in may:
                    violations.append(f"{relative}:{number}: {source_layer} includes "
                                      f"{target_layer} ({match.group(1)})")

    if options.list:
        rank = {layer: index for index, layer in enumerate(order)}
        for (source, target), count in sorted(edges.items(),
                                              key=lambda e: (rank[e[0][0]], rank[e[0][1]])):
            print(f"  {source} -> {target}: {count}")
    if violations:
        print(f"check_layers: {len(violations)} include(s) that LAYERS.md does not allow:",
              file=sys.stderr)
        for violation in violations:
            print("  " + violation, file=sys.stderr)
        return 1
    print(f"check_layers: {checked} files, {sum(edges.values())} includes between layers, "
          f"all allowed by LAYERS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
