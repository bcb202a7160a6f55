"""Print one of the README's commands, read from the README itself, so that CI runs exactly what a reader runs
(never a second copy of it): `python3 .ci/readme_commands.py NAME`, NAME one of

- `book`: the first command of "Two commands" (installs everything, executes the paper profile, builds the book);
- `test`: the second command of "Two commands" (the test suite);
- `second-dispatch`: the command of "What reproduces on another machine" (the regression tests again under
  another CPU dispatch).

Standard library only: it runs before anything is installed.
"""

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
SECTIONS = {
    "book": ("Two commands", 0),
    "test": ("Two commands", 1),
    "second-dispatch": ("What reproduces on another machine", 0),
}
FENCE = re.compile(r"^```bash\n(.*?)^```", re.S | re.M)


def section(text: str, title: str) -> str:
    """The text of the README's `## title` section, up to the next `## ` heading."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    if match is None:
        raise SystemExit(f"README.md has no section '## {title}'")
    return match.group(1)


def command(name: str, text: str | None = None) -> str:
    """The README's command `name` (see the module docstring): the bash block of its section, one line."""
    if name not in SECTIONS:
        raise SystemExit(f"name must be one of {sorted(SECTIONS)}, got {name!r}")
    title, index = SECTIONS[name]
    blocks = FENCE.findall(section(README.read_text() if text is None else text, title))
    if len(blocks) <= index:
        raise SystemExit(f"README.md's section '{title}' has fewer than {index + 1} bash blocks")
    lines = [line for line in blocks[index].splitlines() if line.strip()]
    if len(lines) != 1:
        raise SystemExit(f"README.md's command {name!r} must be one line, found {len(lines)}")
    return lines[0].strip()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    print(command(sys.argv[1]))
