"""The classes of a JavaScript module and of a TypeScript declaration file, read closely enough to compare their
members with a declaration: each member's name, whether it is static, its parameters (a name, or the keys of an
object it destructures or types) and, in a .d.ts, what it resolves to.  Strings, template literals and comments are
masked before brackets are matched, so that a brace inside one counts for nothing."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

OPEN, CLOSE = "([{", ")]}"


def mask(text: str) -> str:
    """``text`` with the insides of strings, template literals and comments replaced by spaces (same length)."""
    out, i, n = list(text), 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out[i:end] = " " * (end - i)
            i = end
        elif text.startswith("/*", i):
            end = text.index("*/", i) + 2
            out[i:end] = [ch if ch == "\n" else " " for ch in text[i:end]]
            i = end
        elif c in "\"'`":
            j = i + 1
            while text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out[i + 1:j] = [ch if ch == "\n" else " " for ch in text[i + 1:j]]
            i = j + 1
        else:
            i += 1
    return "".join(out)


def closing(masked: str, at: int) -> int:
    """The index of the bracket that closes the one at ``at``."""
    depth = 0
    for i in range(at, len(masked)):
        if masked[i] in OPEN:
            depth += 1
        elif masked[i] in CLOSE:
            depth -= 1
            if depth == 0:
                return i
    raise ValueError(f"no bracket closes the one at {at}")


def split_top(text: str, separators: str) -> list[str]:
    """``text`` split at the ``separators`` outside brackets (and TypeScript's <...>, but not an arrow's >)."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in OPEN or c == "<":
            depth += 1
        elif c in CLOSE or (c == ">" and text[i - 1] != "="):
            depth -= 1
        elif c in separators and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def normal(type_text: str) -> str:
    """A type's text with its whitespace runs as single spaces."""
    return " ".join(type_text.split())


@dataclass
class Param:
    name: str | None  # None: an object destructured in JavaScript
    optional: bool = False
    keys: tuple[str, ...] | None = None  # the keys of an options object
    type: str | None = None  # a .d.ts's type of it


@dataclass
class Member:
    name: str
    static: bool
    params: list[Param] | None  # None: a field
    result: str | None = None  # a .d.ts's return (or field) type
    body: str = ""  # a JavaScript method's body


@dataclass
class ClassInfo:
    name: str
    base: str | None
    base_args: str | None
    members: list[Member] = field(default_factory=list)

    def named(self, name: str) -> list[Member]:
        return [m for m in self.members if m.name == name]


CLASS = re.compile(r"^(?:export\s+)?(?:declare\s+)?class\s+(\w+)(?:<[^{]*?>)?(?:\s+extends\s+(\w+)(?:<(.+?)>)?)?\s*{",
                   re.M)
MEMBER = re.compile(r"\s*(static\s+)?(?:readonly\s+)?(async\s+)?([\w$]+)(\?)?\s*")


def classes(text: str, typescript: bool) -> dict[str, ClassInfo]:
    """The classes of a module (``typescript``: of a declaration file), by name."""
    masked = mask(text)
    found = {}
    for match in CLASS.finditer(masked):
        start = match.end() - 1
        end = closing(masked, start)
        info = ClassInfo(match[1], match[2], match[3] and normal(text[match.start(3):match.end(3)]))
        i = start + 1
        while True:
            member = MEMBER.match(masked, i)
            if member is None or member.end() >= end or not member[3]:
                break
            name, static, i = member[3], bool(member[1]), member.end()
            if masked[i] == "(":
                close = closing(masked, i)
                params = parameters(text[i + 1:close], masked[i + 1:close], typescript)
                i = close + 1
                if typescript:
                    semicolon = next_top(masked, i, ";")
                    result = text[i:semicolon].strip().removeprefix(":").strip()
                    info.members.append(Member(name, static, params, normal(result)))
                    i = semicolon + 1
                else:
                    brace = masked.index("{", i)
                    close = closing(masked, brace)
                    info.members.append(Member(name, static, params, body=text[brace:close + 1]))
                    i = close + 1
            else:  # a field: `name: type;` or `name = value;`
                semicolon = next_top(masked, i, ";")
                value = text[i:semicolon].strip()
                result = normal(value.removeprefix(":").strip()) if typescript else None
                info.members.append(Member(name, static, None, result))
                i = semicolon + 1
        found[info.name] = info
    return found


def next_top(masked: str, at: int, char: str) -> int:
    """The next ``char`` at ``at``'s bracket depth."""
    depth = 0
    for i in range(at, len(masked)):
        c = masked[i]
        if c in OPEN:
            depth += 1
        elif c in CLOSE:
            depth -= 1
        elif c == char and depth == 0:
            return i
    raise ValueError(f"no {char!r} after {at}")


def parameters(text: str, masked: str, typescript: bool) -> list[Param]:
    params = []
    offset = 0
    for part in split_top(masked, ","):
        at = masked.index(part, offset)
        offset = at + len(part)
        original = text[at:at + len(part)]
        if not typescript and part.startswith("{"):
            inner = original[1:closing(part, 0)]
            keys = tuple(re.match(r"\s*([\w$]+)", key)[1] for key in split_top(mask(inner), ","))
            params.append(Param(None, "=" in part[closing(part, 0):], keys))
            continue
        head = re.match(r"(?:\.\.\.)?([\w$]+)(\?)?", part)
        optional = bool(head[2]) or (not typescript and "=" in part)
        kind = normal(original[head.end():].strip().removeprefix(":").strip()) if typescript else None
        params.append(Param(head[1], optional, None, kind))
    return params


def interfaces(text: str) -> dict[str, str]:
    """A declaration file's interfaces: name -> the text of their body ``{...}``."""
    masked = mask(text)
    found = {}
    for match in re.finditer(r"^export\s+interface\s+(\w+)(?:<[^{]*>)?(?:\s+extends\s+[^{]+)?\s*{", masked, re.M):
        start = match.end() - 1
        found[match[1]] = text[start:closing(masked, start) + 1]
    return found


def type_keys(type_text: str, named: dict[str, str]) -> tuple[str, ...] | None:
    """The keys of an object type: inline ``{...}``, a named interface, or an intersection of them."""
    keys = []
    for part in split_top(mask(type_text), "&"):
        at = mask(type_text).index(part)
        part = type_text[at:at + len(part)].strip()
        body = named.get(part, part)
        if not body.startswith("{"):
            return None
        inner = body[1:closing(mask(body), 0)]
        keys += [re.match(r"\s*([\w$]+)", member)[1] for member in split_top(mask(inner), ";,")
                 if re.match(r"\s*[\w$]+\??\s*:", member)]
    return tuple(keys)
