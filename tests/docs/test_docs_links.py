"""Every relative link of the docs (README.md, docs/*.md, web/lib/README.md) reaches a file or folder of the
repository, and every #anchor a heading of the page it names, as GitHub makes heading ids."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: web/lib/README.md ships inside the site's library folder, beside the API reference that build.py makes there
#: with TypeDoc (tests/browser/test_types.py checks that page); the source tree has no such file
SITE_ONLY = {("web/lib/README.md", "../onnxtrain-api/index.html")}

FENCE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[ \t]*$", re.M | re.S)
CODE = re.compile(r"(`+).+?\1", re.S)
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^[ \t]{0,3}\[[^\]]+\]:[ \t]*<?(\S+?)>?(?:[ \t]+\"[^\"]*\")?[ \t]*$", re.M)
HEADING = re.compile(r"^[ \t]{0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$", re.M)


def docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "web" / "lib" / "README.md"]


def prose(text: str) -> str:
    """``text`` without fenced code blocks and inline code, whose brackets are not links."""
    return CODE.sub("", FENCE.sub("", text))


def links(text: str) -> list[str]:
    body = prose(text)
    return INLINE.findall(body) + REFERENCE.findall(body)


def slug(heading: str) -> str:
    """GitHub's id for a heading: its text without markup, lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)   # a link's text
    text = re.sub(r"<[^>]+>", "", text.replace("`", ""))
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The ids of ``path``'s headings; a repeated heading gets -1, -2, ... as on GitHub."""
    seen, ids = {}, set()
    for _, heading in HEADING.findall(FENCE.sub("", path.read_text())):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        ids.add(base if count == 0 else f"{base}-{count}")
    return ids


def broken_links(doc: Path) -> list[str]:
    problems = []
    name = doc.relative_to(ROOT).as_posix()
    for link in links(doc.read_text()):
        if re.match(r"[a-z][a-z0-9+.-]*:", link, re.I) or (name, link) in SITE_ONLY:
            continue   # http:, https:, mailto:, ...: not a file of this repository
        target, _, anchor = link.partition("#")
        path = (doc.parent / target).resolve() if target else doc
        if not path.exists():
            problems.append(f"{name}: link {link!r}: {target} does not exist")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            problems.append(f"{name}: link {link!r}: {path.relative_to(ROOT).as_posix()} has no heading "
                            f"whose id is {anchor!r}")
    return problems


def test_every_relative_link_and_anchor_of_the_docs_resolves():
    problems = [problem for doc in docs() for problem in broken_links(doc)]
    assert not problems, "\n".join(problems)


def test_the_docs_have_links_to_check():
    found = {doc.relative_to(ROOT).as_posix(): len(links(doc.read_text())) for doc in docs()}
    assert found["README.md"] >= 15 and found["docs/architecture.md"] >= 10, found


def test_broken_links_and_anchors_are_found(tmp_path, monkeypatch):
    """The checker on a page of its own: a missing file, a missing heading in another page and in the page itself
    fail; a good file, folder, heading, repeated heading, image and web link pass; code is not read as links."""
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "other.md").write_text("# Other\n\n## The `train()` loop: step 1\n\n## Again\n\n## Again\n")
    (tmp_path / "docs" / "shot.png").write_bytes(b"")
    page = tmp_path / "docs" / "page.md"
    page.write_text(
        "# Page\n\n## Here\n\n"
        "[ok](other.md) [folder](../docs/) [heading](other.md#the-train-loop-step-1) [repeat](other.md#again-1)\n"
        "![image](shot.png) [web](https://example.invalid/x) [self](#here) [titled](other.md \"Other\")\n"
        "`[not a link](missing.md)`\n\n```md\n[nor this](missing.md)\n```\n\n"
        "[gone](gone.md) [no heading](other.md#nowhere) [no self](#there) [deep](../docs/missing/)\n"
        "[ref]: other.md#again-2\n")
    assert broken_links(page) == [
        "docs/page.md: link 'gone.md': gone.md does not exist",
        "docs/page.md: link 'other.md#nowhere': docs/other.md has no heading whose id is 'nowhere'",
        "docs/page.md: link '#there': docs/page.md has no heading whose id is 'there'",
        "docs/page.md: link '../docs/missing/': ../docs/missing/ does not exist",
        "docs/page.md: link 'other.md#again-2': docs/other.md has no heading whose id is 'again-2'",
    ]
