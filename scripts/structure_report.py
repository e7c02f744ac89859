"""Prints the structural figures of kerasnmt/ against the targets of its layout.

    python scripts/structure_report.py [--classes 400] [--modules 600] [--cli 350]

The longest classes and modules (lines, docstrings and comments included), those over
their limit marked, and the lines of `kerasnmt/cli.py`. Exits 0 whatever it finds: the
figures are for reading, as the `bench/` scripts' are. `duplicates --repo kerasnmt`
counts the repeated code.
"""

import argparse
import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "kerasnmt"


def class_lengths(path):
    """`(name, lines)` of each class defined in the file at `path`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return [(node.name, node.end_lineno - node.lineno + 1)
            for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classes", type=int, default=400, help="lines a class may have")
    parser.add_argument("--modules", type=int, default=600, help="lines a module may have")
    parser.add_argument("--cli", type=int, default=350, help="lines kerasnmt/cli.py may have")
    parser.add_argument("--top", type=int, default=8, help="rows of each table")
    args = parser.parse_args()

    files = sorted(PACKAGE.rglob("*.py"))
    modules = sorted(((len(path.read_text(encoding="utf-8").splitlines()),
                       path.relative_to(PACKAGE.parent)) for path in files), reverse=True)
    classes = sorted(((lines, f"{path.relative_to(PACKAGE.parent)}:{name}")
                      for path in files for name, lines in class_lengths(path)), reverse=True)
    for title, rows, limit in (("modules", modules, args.modules),
                               ("classes", classes, args.classes)):
        over = sum(lines > limit for lines, _ in rows)
        print(f"{title}: {len(rows)}, {over} over {limit} lines")
        for lines, name in rows[: args.top]:
            print(f"  {lines:5d}  {name}{'  (over)' if lines > limit else ''}")
    cli_lines = len((PACKAGE / "cli.py").read_text(encoding="utf-8").splitlines())
    print(f"cli.py: {cli_lines} lines (target under {args.cli})")


if __name__ == "__main__":
    main()
