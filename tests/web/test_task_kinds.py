"""onnxtrain.web.task_kinds, the one declaration of the task kinds, against everything that repeats it: the
registry's factories and allow-lists (made from it), the flows' own methods, the library's classes
(web/lib/src/tasks.mjs), their types (web/lib/onnxtrain.d.ts), the guide's tasks table (web/lib/README.md), and
the error codes of web/errors.py, web/lib/src/errors.mjs, the types, the library's exports and the guide.

``PYTHONPATH=pysrc:tests .venv/bin/python tests/web/test_task_kinds.py`` writes the guide's tasks table from the
declaration."""
from __future__ import annotations

import ast
import importlib
import inspect
import re
import sys
from pathlib import Path

import js_surface as js
from onnxtrain.web import errors, task_kinds, task_sessions
from onnxtrain.web.task_kinds import COMMON, KINDS

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pysrc" / "onnxtrain"
TASKS_MJS = ROOT / "web" / "lib" / "src" / "tasks.mjs"
ERRORS_MJS = ROOT / "web" / "lib" / "src" / "errors.mjs"
ENTRY_MJS = ROOT / "web" / "lib" / "onnxtrain.mjs"
TYPES = ROOT / "web" / "lib" / "onnxtrain.d.ts"
GUIDE = ROOT / "web" / "lib" / "README.md"
#: the train loop's requests, which tasks.mjs's train() makes through session.mjs's trainLoop
TRAIN_LOOP = ("train_begin", "train_continue", "train_end")


def spec(arg: str) -> tuple[str, bool, tuple[str, ...] | None]:
    """A declared argument as (name, optional, the keys of its options object or None)."""
    name, optional, keys = re.fullmatch(r"([\w$]+)(\?)?(?:\{(.*)\})?", arg).groups()
    return name, bool(optional), None if keys is None else tuple(k.strip() for k in keys.split(","))


def calls_of(kind) -> list:
    """The declared members of a kind's class: its factories (as static calls), statics and calls."""
    return ([("static", f.name, f.args, kind.js, ()) for f in kind.factories]
            + [("static", c.name, c.args, c.result, c.python) for c in kind.statics]
            + [("call", c.name, c.args, c.result, c.python) for c in kind.calls])


# ---- the registry and the flows ---------------------------------------------------------------------------------

def test_the_registry_is_made_from_the_declaration_and_the_flows_have_each_method():
    assert len({kind.kind for kind in KINDS}) == len(KINDS) and len({kind.js for kind in KINDS}) == len(KINDS)
    for kind in KINDS:
        assert task_sessions.TASK_METHODS[kind.kind] == kind.python_methods()
        assert set(kind.shapes or {}) <= kind.python_methods(), kind.kind
        names = [call.name for call in (*kind.calls, *kind.statics)] + [f.name for f in kind.factories]
        assert len(names) == len(set(names)), f"{kind.js} declares a call twice: {names}"
        assert not {call.name for call in COMMON} & set(names), f"{kind.js} redeclares a call every task has"
        module = importlib.import_module(f"onnxtrain.{kind.module}")
        flow = None
        for factory in kind.factories:
            assert task_sessions.FACTORIES[factory.kind] == (kind.module, factory.python, factory.count)
            assert factory.kind.removesuffix("_snapshot") == kind.kind
            made = module
            for attribute in factory.python.split("."):
                made = getattr(made, attribute)
            assert callable(made), factory
            flow = flow or getattr(module, factory.python.split(".")[0])
        attributes = set(re.findall(r"self\.(\w+)\s*[:=]", inspect.getsource(flow)))  # set in its methods
        for method in kind.python_methods():
            assert hasattr(flow, method) or method in attributes, \
                f"{kind.js} calls {method!r}, which {flow.__name__} does not have"
    for call in COMMON:
        for method in call.python:
            assert method in TRAIN_LOOP or hasattr(task_sessions.TaskSession, method), method
    assert task_sessions.COMMON == {name for call in COMMON for name in call.python}


def test_one_export_rule():
    """exportModel (every task's, the base class's) gives the ONNX model; a bundle is exportZip's; nothing else
    is named export* but a deprecated name."""
    (model,) = [call for call in COMMON if call.name == "exportModel"]
    assert model.python == ("export_model",) and model.result == task_kinds.BYTES
    for kind in KINDS:
        for call in kind.calls:
            if call.name.startswith("export"):
                assert call.name == "exportZip" or call.deprecated, f"{kind.js}.{call.name}: name it exportZip"
                assert call.name != "exportZip" or call.python == ("export_zip",)
            if call.deprecated:
                assert call.deprecated in {c.name for c in (*COMMON, *kind.calls)}


# ---- the library's classes --------------------------------------------------------------------------------------

def check_js_params(where: str, params: list, args: tuple) -> None:
    assert len(params) == len(args), f"{where}: tasks.mjs takes {len(params)} arguments, the declaration {args}"
    for param, arg in zip(params, args):
        name, _, keys = spec(arg)
        if keys is None:
            assert param.name == name and param.keys is None, f"{where}: tasks.mjs's {param.name!r} is {arg!r}"
        else:
            assert param.keys == keys, f"{where}: tasks.mjs destructures {param.keys}, the declaration {arg!r}"


def engine_calls(body: str) -> set[str]:
    return set(re.findall(r"""\._call\(\s*["'](\w+)["']""", body))


def test_the_library_classes_are_the_declaration():
    classes = js.classes(TASKS_MJS.read_text(), typescript=False)
    base = classes.pop("Task")
    public = lambda info: [m for m in info.members if not m.name.startswith("_") and m.name != "constructor"]
    assert [m.name for m in public(base)] == [call.name for call in COMMON]
    for member, call in zip(public(base), COMMON):
        check_js_params(f"Task.{call.name}", member.params, call.args)
        found = engine_calls(member.body)
        assert found == set(call.python) or (call.python == TRAIN_LOOP and "trainLoop(" in member.body), call
    # the bases between Task and the kinds' classes (ClassesTask), which tasks.mjs does not export
    shared = {name: classes.pop(name) for name in [n for n, info in classes.items() if info.base == "Task"
                                                   and n not in {kind.js for kind in KINDS}]}
    assert all(f"export class {name} " not in TASKS_MJS.read_text() for name in shared), sorted(shared)
    assert sorted(classes) == sorted(kind.js for kind in KINDS), "tasks.mjs's task classes are not KINDS'"
    for kind in KINDS:
        info = classes[kind.js]
        assert info.base == "Task" or info.base in shared, kind.js
        inherited = public(shared[info.base]) if info.base in shared else []
        members = {m.name: m for m in [*inherited, *public(info)]}
        declared = calls_of(kind)
        assert sorted(members) == sorted(name for _, name, *_ in declared), \
            f"{kind.js}: tasks.mjs has {sorted(members)}"
        for what, name, args, _, python in declared:
            member = members[name]
            where = f"{kind.js}.{name}"
            assert member.static == (what == "static"), f"{where}: static in one, not in the other"
            if member.params is None:  # a static field
                assert not args, where
                continue
            check_js_params(where, member.params, args)
            assert engine_calls(member.body) == set(python), f"{where}: tasks.mjs calls {engine_calls(member.body)}"
        for factory in kind.factories:
            body = members[factory.name].body
            assert re.search(rf"""\._(?:make|load)\(\s*"{factory.kind}"\s*,""", body), \
                f"{kind.js}.{factory.name} must make the kind {factory.kind!r}"


# ---- the types --------------------------------------------------------------------------------------------------

def check_ts_signature(where: str, params: list, args: tuple, named: dict) -> None:
    assert [p.name for p in params] == [spec(a)[0] for a in args], \
        f"{where}: onnxtrain.d.ts takes {[p.name for p in params]}, the declaration {args}"
    for param, arg in zip(params, args):
        _, optional, keys = spec(arg)
        assert param.optional == optional, f"{where}: {param.name} optional in one, required in the other"
        if keys is not None:
            assert js.type_keys(param.type, named) == keys, \
                f"{where}: onnxtrain.d.ts's {param.name} has the keys {js.type_keys(param.type, named)}, not {keys}"


def signatures(members: list, named: dict, metrics: str | None) -> set:
    """The (argument names, result) of each overload, the results as the declaration writes them."""
    found = set()
    for m in members:
        result = m.result if m.params is None else m.result.removeprefix("Promise<").removesuffix(">")
        if metrics is not None:
            result = result.replace(f"TrainSummary<{metrics}>", "TrainSummary<M>")
        found.add((tuple(p.name for p in m.params or ()), result))
    return found


def test_the_types_are_the_declaration():
    text = TYPES.read_text()
    classes, named = js.classes(text, typescript=True), js.interfaces(text)
    base = classes["Task"]
    calls = [m for m in base.members if m.params is not None]
    assert [m.name for m in calls] == [call.name for call in COMMON]
    for member, call in zip(calls, COMMON):
        check_ts_signature(f"Task.{call.name}", member.params, call.args, named)
        assert member.result == f"Promise<{call.result}>", f"Task.{call.name}: onnxtrain.d.ts says {member.result}"
    union = re.search(r"export type TaskKind = ([^;]+);", text)[1]
    assert re.findall(r'"(\w+)"', union) == [kind.kind for kind in KINDS], "onnxtrain.d.ts's TaskKind"
    task_classes = sorted(name for name, info in classes.items() if info.base == "Task")
    assert task_classes == sorted(kind.js for kind in KINDS)
    for kind in KINDS:
        info = classes[kind.js]
        assert info.base_args == kind.metrics, f"{kind.js} extends Task<{info.base_args}>, not Task<{kind.metrics}>"
        names = {m.name for m in info.members}
        declared = calls_of(kind)
        assert sorted(names) == sorted(name for _, name, *_ in declared), f"{kind.js}: onnxtrain.d.ts has {names}"
        by_name = {c.name: c for c in (*kind.calls, *kind.statics)}
        for what, name, args, result, _ in declared:
            members = info.named(name)
            where = f"{kind.js}.{name} in onnxtrain.d.ts"
            assert all(m.static == (what == "static") for m in members), f"{where}: static in one only"
            overloads = by_name[name].signatures if name in by_name else ((args, result),)
            wanted = {(tuple(spec(a)[0] for a in a_), js.normal(r)) for a_, r in overloads}
            assert signatures(members, named, kind.metrics) == wanted, where
            by_names = {tuple(spec(a)[0] for a in a_): a_ for a_, _ in overloads}
            for member in members:
                if member.params is not None:
                    check_ts_signature(where, member.params, by_names[tuple(p.name for p in member.params)], named)
            deprecated = getattr(by_name.get(name), "deprecated", None)
            block = re.search(rf"/\*\*((?:(?!\*/).)*)\*/\s*{name}\(", text[text.index(f"class {kind.js} "):], re.S)
            assert bool(deprecated) == bool(block and "@deprecated" in block[1]), f"{where}: @deprecated"


# ---- the guide's table ------------------------------------------------------------------------------------------

def shown(call_name: str, args: tuple) -> str:
    parts = []
    for arg in args:
        name, optional, keys = spec(arg)
        parts.append(f"{{{', '.join(keys)}}}" if keys is not None else name + "?" * optional)
    return f"`{call_name}({', '.join(parts)})`"


def guide_table() -> str:
    rows = ["| class (`start`'s kind) | made by | calls | exports | errors |", "|---|---|---|---|---|"]
    every = [c for c in COMMON if not c.name.startswith("export")]
    rows.append("| every task | | " + ", ".join(shown(c.name, c.args) for c in every)
                + " | `exportModel()`: the ONNX model | the kind's, and Python's |")
    for kind in KINDS:
        made = ", ".join(shown(f.name, f.args) for f in kind.factories)
        own = [c for c in kind.calls if not c.name.startswith("export")]
        statics = [f"`{kind.js}.{c.name}`" if not c.args and c.name.isupper() else shown(c.name, c.args)
                   for c in kind.statics]
        exports = ["`exportModel()`"] + [
            shown(c.name, c.args) + (f" (deprecated: `{c.deprecated}()`)" if c.deprecated else ": the .zip")
            for c in kind.calls if c.name.startswith("export")]
        rows.append(f"| `{kind.js}` (`\"{kind.kind}\"`) | {made}{', ' if statics else ''}{', '.join(statics)} | "
                    + ", ".join(shown(c.name, c.args) for c in own) + f" | {', '.join(exports)} | "
                    + ", ".join(f"`{e}`" for e in kind.errors) + " |")
    return "\n".join(rows) + "\n"


def guide_with_table(text: str) -> str:
    head, rest = text.split("<!-- tasks -->\n")
    _, tail = rest.split("<!-- /tasks -->")
    return f"{head}<!-- tasks -->\n{guide_table()}<!-- /tasks -->{tail}"


def test_the_guide_table_is_the_declaration():
    text = GUIDE.read_text()
    assert text == guide_with_table(text), \
        "web/lib/README.md's tasks table is not the declaration's: python tests/web/test_task_kinds.py writes it"


# ---- the error codes --------------------------------------------------------------------------------------------

def onnxtrain_classes() -> dict[str, type]:
    """Every exception class defined in pysrc/onnxtrain whose name is in errors.OWN, by name."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        names = [n.name for n in tree.body if isinstance(n, ast.ClassDef) and n.name in errors.OWN]
        if names:
            module = ".".join(["onnxtrain", *path.relative_to(PACKAGE).with_suffix("").parts])
            module = importlib.import_module(module.removesuffix(".__init__"))
            found.update({name: getattr(module, name) for name in names})
    return found


def nearest_own_base(cls: type) -> str:
    return next((b.__name__ for b in cls.__mro__[1:] if b.__name__ in errors.OWN), "OnnxtrainError")


def test_the_error_tables_are_one():
    defined = onnxtrain_classes()
    assert sorted(defined) == sorted(errors.OWN), "errors.OWN names classes onnxtrain does not define"
    assert errors.CODES == {**errors.OWN, **errors.PYTHON} and not set(errors.OWN) & set(errors.PYTHON)
    assert len(set(errors.CODES.values())) == len(errors.CODES), "two classes share a code"
    mjs = ERRORS_MJS.read_text()
    library = {name: (code, base or "OnnxtrainError") for name, code, base in
               re.findall(r'export const (\w+) = errorClass\("\1", "(\w+)"(?:, (\w+))?\);', mjs)}
    assert library == {name: (code, nearest_own_base(defined[name])) for name, code in errors.OWN.items()}, \
        "errors.mjs's classes are not errors.OWN (with the bases the Python classes have)"
    listed = re.search(r"const ERROR_CLASSES = Object.fromEntries\(\[([^\]]*)\]", mjs)[1]
    assert sorted(re.findall(r"\w+", listed)) == sorted(errors.OWN), "errors.mjs's ERROR_CLASSES"
    entry = re.search(r'export \{([^}]*)\} from "./src/errors.mjs"', ENTRY_MJS.read_text())[1]
    assert sorted(re.findall(r"\w+", entry)) == sorted([*errors.OWN, "OnnxtrainError"]), "onnxtrain.mjs's exports"
    types = TYPES.read_text()
    declared = dict(re.findall(r"^export class (\w+Error) extends (\w+) \{\}$", types, re.M))
    assert declared == {name: nearest_own_base(defined[name]) for name in errors.OWN}, "onnxtrain.d.ts's classes"
    codes = re.findall(r'"(\w+)"', re.search(r"export type ErrorCode = ([^;]+);", types)[1])
    assert sorted(codes) == sorted([*errors.CODES.values(), errors.OTHER, "ENGINE"]), "onnxtrain.d.ts's ErrorCode"
    guide = GUIDE.read_text().split("## Errors")[1].split("## ")[0]
    in_guide = {}
    for line in guide.splitlines():
        if line.startswith("| `"):
            names, codes_ = (re.findall(r"`(\w+)`", cell) for cell in line.split("|")[1:3])
            in_guide.update(zip(names, codes_))
    assert in_guide == errors.OWN, "web/lib/README.md's error table"


def raised_classes(module) -> set[str]:
    """The onnxtrain error classes (errors.OWN's) that a module's code raises by name."""
    tree = ast.parse(Path(module.__file__).read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(target, ast.Name) and isinstance(getattr(module, target.id, None), type):
                cls = getattr(module, target.id)
                if issubclass(cls, Exception) and cls.__module__.startswith("onnxtrain."):
                    found.add(cls.__name__)
    return found


def is_module(name: str) -> bool:
    path = PACKAGE.joinpath(*name.split(".")[1:])
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def flow_modules(name: str) -> set[str]:
    """The modules of a kind's flow: its module and those of the tasks and text rooms it imports, transitively."""
    rooms = ("onnxtrain.tasks", "onnxtrain.text", "onnxtrain.web.personalize")
    seen, todo = set(), [name]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        module = importlib.import_module(current)
        tree = ast.parse(Path(module.__file__).read_text())
        package = current if module.__file__.endswith("__init__.py") else current.rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = package
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                target = (f"{base}.{node.module}" if node.module else base) if node.level else node.module
                for alias in node.names:
                    for candidate in (f"{target}.{alias.name}", target):
                        if candidate.startswith(rooms) and is_module(candidate):
                            todo.append(candidate)
                            break
    return seen


def test_every_error_a_flow_raises_is_declared_and_has_a_code():
    for kind in KINDS:
        assert set(kind.errors) <= set(errors.OWN), f"{kind.js}'s errors without a code: " \
                                                    f"{sorted(set(kind.errors) - set(errors.OWN))}"
        raised = set().union(*(raised_classes(importlib.import_module(m))
                               for m in flow_modules(f"onnxtrain.{kind.module}")))
        assert raised <= set(kind.errors), f"{kind.js}'s flow raises {sorted(raised - set(kind.errors))} too"
    for room in ("tasks", "text"):
        for path in (PACKAGE / room).glob("*.py"):
            module = importlib.import_module(f"onnxtrain.{room}.{path.stem}".removesuffix(".__init__"))
            assert raised_classes(module) <= set(errors.OWN), f"{path.name} raises an error without a code"


if __name__ == "__main__":
    GUIDE.write_text(guide_with_table(GUIDE.read_text()))
    sys.exit(0)
