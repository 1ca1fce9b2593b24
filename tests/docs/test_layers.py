"""docs/architecture.md's table of rooms against the code: every import from one room of pysrc/onnxtrain into
another (at module level or inside a function) is allowed by the importing room's row, every allowed import is
used, every room has a row, and the allowed imports form no cycle."""
import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pysrc" / "onnxtrain"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
TABLE = "docs/architecture.md's table of rooms"


def room_table(text: str) -> dict[str, list[str]]:
    """room -> the rooms its row allows it to import, in the table's order, from the lines between the markers."""
    body = text.split("<!-- rooms -->\n")[1].split("<!-- /rooms -->")[0]
    table = {}
    for line in body.strip().splitlines()[2:]:  # after the header and its rule
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        assert len(cells) == 3, f"{TABLE}: a row needs three cells (room, job, may import): {line!r}"
        room = cells[0].strip("`")
        assert room not in table, f"{TABLE}: room {room!r} has two rows"
        table[room] = re.findall(r"`([^`]+)`", cells[2])
    return table


def room_of(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


def rooms() -> set[str]:
    return {room_of(p) for p in PACKAGE.rglob("*.py")}


def imported_modules(path: Path) -> list[tuple[str, int]]:
    """The absolute names of the onnxtrain modules (or names in them) that ``path`` imports, with their lines."""
    package = ["onnxtrain", *path.relative_to(PACKAGE).parts[:-1]]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            # `from . import x` / `from onnxtrain import x`: x may be a room of its own
            found += [(f"{module}.{alias.name}", node.lineno) for alias in node.names]
    return [(name, line) for name, line in found if name.startswith("onnxtrain.")]


def actual_imports() -> dict[str, dict[str, list[str]]]:
    """room -> imported room -> the places (file:line) that import it."""
    known = rooms()
    edges = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        source = room_of(path)
        for name, line in imported_modules(path):
            target = name.split(".")[1]
            if target in known and target != source:
                places = edges.setdefault(source, {}).setdefault(target, [])
                place = f"{path.relative_to(ROOT)}:{line}"
                if place not in places:
                    places.append(place)
    return edges


def layer_problems(table: dict[str, list[str]], actual: dict[str, dict[str, list[str]]], known: set[str]) -> list:
    """What is wrong between the table and the code, each naming the row to change."""
    problems = [f"room {room!r} has no row: add one" for room in sorted(known - set(table))]
    problems += [f"row {room!r} names no room of pysrc/onnxtrain: remove it" for room in sorted(set(table) - known)]
    for room, allowed in table.items():
        problems += [f"row {room!r} allows {target!r}, which is no room" for target in allowed if target not in known]
        used = actual.get(room, {})
        for target, places in sorted(used.items()):
            if target not in allowed:
                problems.append(f"row {room!r}: add {target!r} to 'may import' (imported at {', '.join(places)}), "
                                f"or remove those imports")
        for target in allowed:
            if target in known and target not in used:
                problems.append(f"row {room!r}: remove {target!r} from 'may import' (no file of {room!r} imports it)")
    cycle = find_cycle(table)
    if cycle:
        problems.append(f"the rows allow a cycle: {' -> '.join(cycle)}; remove one of those imports")
    return problems


def find_cycle(table: dict[str, list[str]]) -> list[str]:
    """One cycle of the graph room -> allowed rooms (the rooms in order, the first repeated last), or []."""
    state, stack = {}, []

    def visit(room):
        state[room] = "open"
        stack.append(room)
        for target in table.get(room, []):
            if state.get(target) == "open":
                return stack[stack.index(target):] + [target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        state[room] = "done"
        stack.pop()
        return []

    for room in table:
        if room not in state:
            cycle = visit(room)
            if cycle:
                return cycle
    return []


def test_the_room_table_is_the_code():
    problems = layer_problems(room_table(ARCHITECTURE.read_text()), actual_imports(), rooms())
    assert not problems, f"{TABLE} and the imports of pysrc/onnxtrain differ:\n" + "\n".join(problems)


def test_rows_are_in_import_order():
    """A room imports only rooms listed above it, so the table reads from the ground up."""
    table = room_table(ARCHITECTURE.read_text())
    order = list(table)
    late = [f"row {room!r} allows {target!r}, which is listed below it: move {room!r} below {target!r}"
            for room, allowed in table.items() for target in allowed
            if target in table and order.index(target) > order.index(room)]
    assert not late, "\n".join(late)


def test_the_check_finds_each_kind_of_drift():
    """The comparison itself, on a made-up table: it must name a missing import, an unused one, a missing row,
    an unknown row and a cycle."""
    known = {"a", "b", "c"}
    actual = {"b": {"a": ["pysrc/onnxtrain/b.py:3"]}, "c": {"a": ["pysrc/onnxtrain/c/x.py:7"]}}
    assert layer_problems({"a": [], "b": ["a"], "c": ["a"]}, actual, known) == []
    problems = layer_problems({"a": ["c"], "b": [], "c": ["a", "b"], "d": []}, actual, known)
    assert problems == [
        "row 'd' names no room of pysrc/onnxtrain: remove it",
        "row 'a': remove 'c' from 'may import' (no file of 'a' imports it)",
        "row 'b': add 'a' to 'may import' (imported at pysrc/onnxtrain/b.py:3), or remove those imports",
        "row 'c': remove 'b' from 'may import' (no file of 'c' imports it)",
        "the rows allow a cycle: a -> c -> a; remove one of those imports",
    ]
    assert layer_problems({"a": []}, {}, known)[:2] == ["room 'b' has no row: add one", "room 'c' has no row: add one"]


def test_imports_inside_functions_and_relative_imports_are_seen():
    names = [name for name, _ in imported_modules(PACKAGE / "providers.py")]
    # `from .webgpu.provider import open_provider as open_webgpu`, inside a function
    assert "onnxtrain.webgpu.provider.open_provider" in names
