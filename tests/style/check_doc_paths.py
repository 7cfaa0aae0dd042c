#!/usr/bin/env python3
"""The docs point at what exists: every path docs/architecture.md names exists, the README's
layout table names every top-level folder (and only those) with paths that exist and links every
page of docs/, and every relative link of README.md, CHANGELOG.md and docs/*.md (and every
docs/*.md a source comment cites) reaches an existing file and heading. Each stale path or link
is printed with its file and line, so a move of files says which lines to change."""
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARCHITECTURE = "docs/architecture.md"
# A backticked word is a path when its last part ends in one of these, or it has a slash
# (in architecture.md: and starts at a top-level entry of the tree).
PATH_ENDINGS = ("cpp", "h", "py", "proto", "md", "yaml", "sh", "cmake", "dict", "lua", "in", "txt")
PATH_WORD = re.compile(r"^[\w.*<>-]*[\w*<>-](/[\w.*<>-]+)*/?$")
FILE_WORD = re.compile(r"^[\w*<>-][\w.*<>-]*\.(%s)$" % "|".join(PATH_ENDINGS))
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def tracked_files():
    """The files git knows of, relative to ROOT: tracked, or new and not ignored (no build output)."""
    command = ["git", "-C", ROOT, "ls-files", "--cached", "--others", "--exclude-standard"]
    out = subprocess.run(command, capture_output=True, text=True)
    if out.returncode != 0:
        print("check_doc_paths: not a git checkout: " + out.stderr.strip(), file=sys.stderr)
        sys.exit(1)
    return [line for line in out.stdout.splitlines() if os.path.exists(os.path.join(ROOT, line))]


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def without_fences(text):
    """The text with fenced blocks blanked (line numbers kept): code is not prose."""
    return FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def is_path(word, roots=None):
    """A file name with a known ending, or a word with a slash (with `roots`: only one that
    starts at a top-level entry of the tree, so that `open/suspect` is not taken for a path)."""
    if word.startswith(("http:", "https:", "-", "/", "~", "$")) or " " in word:
        return False
    if FILE_WORD.match(word.split("/")[-1]) and PATH_WORD.match(word):
        return True
    if "/" not in word or not PATH_WORD.match(word):
        return False
    return roots is None or word.split("/")[0] in roots


def exists(rel):
    """A path, a folder (trailing slash), or a pattern (`*`, `<placeholder>`) that matches."""
    pattern = re.sub(r"<[^>]*>", "*", rel.rstrip("/"))
    full = os.path.join(ROOT, pattern)
    if "*" in pattern:
        return bool(glob.glob(full))
    return os.path.isdir(full) if rel.endswith("/") else os.path.exists(full)


def slug(heading):
    """GitHub's anchor for a heading."""
    text = re.sub(r"[`*]", "", heading.strip()).lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(rel):
    found, seen = set(), {}
    for m in re.finditer(r"^#{1,6}\s+(.*?)\s*#*$", without_fences(read(rel)), re.M):
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else "%s-%d" % (base, n))
    return found


def check_architecture(problems, files):
    """Every path docs/architecture.md names in backticks exists (its links: check_links)."""
    if not os.path.exists(os.path.join(ROOT, ARCHITECTURE)):
        problems.append("%s: missing" % ARCHITECTURE)
        return 0
    text = without_fences(read(ARCHITECTURE))
    roots = {f.split("/")[0] for f in files}
    named = 0
    for m in CODE_SPAN.finditer(text):
        word = m.group(1).strip()
        if not is_path(word, roots):
            continue
        named += 1
        if "/" not in word:
            problems.append("%s:%d: `%s`: name it from the repository root" %
                            (ARCHITECTURE, line_of(text, m.start()), word))
        elif not exists(word):
            problems.append("%s:%d: `%s` does not exist" % (ARCHITECTURE, line_of(text, m.start()), word))
    if named < 20:
        problems.append("%s: names only %d paths; is the path pattern still right?" % (ARCHITECTURE, named))
    return named


def layout_rows(readme):
    """(line, folder, description) of each row of the README's layout table."""
    section = re.search(r"^## Layout\n(.*?)(?=^## )", readme, re.M | re.S)
    if not section:
        return []
    rows = []
    for m in re.finditer(r"^\| `([^`]+)` \| (.*) \|$", section.group(1), re.M):
        rows.append((line_of(readme, section.start(1) + m.start()), m.group(1), m.group(2)))
    return rows


def check_layout(problems, files):
    """The layout table names each top-level folder once, paths in it exist, docs/ is complete."""
    readme = read("README.md")
    rows = layout_rows(readme)
    if not rows:
        problems.append("README.md: no layout table under '## Layout'")
        return
    folders = {f.split("/")[0] + "/" for f in files if "/" in f and not f.startswith(".")}
    listed = [folder for _, folder, _ in rows]
    for folder in sorted(folders - set(listed)):
        problems.append("README.md: the layout table has no row for `%s`" % folder)
    for line, folder, text in rows:
        if listed.count(folder) > 1:
            problems.append("README.md:%d: `%s` has more than one row" % (line, folder))
        if folder not in folders:
            problems.append("README.md:%d: `%s` is not a top-level folder of the tree" % (line, folder))
        for m in CODE_SPAN.finditer(text):
            word = m.group(1)
            # A path is named from the root or from its row's folder (`limits.h` in proto/).
            if is_path(word) and not exists(word) and not exists(folder + word):
                problems.append("README.md:%d: `%s` (row `%s`) does not exist" % (line, word, folder))
        if folder == "docs/":
            linked = {os.path.normpath(t) for t in re.findall(r"\]\(([^)#]+)", text)}
            for page in sorted(f for f in files if re.match(r"docs/[^/]+\.md$", f)):
                if page not in linked:
                    problems.append("README.md:%d: the docs/ row does not link %s" % (line, page))


ANCHORS = {}


def has_anchor(rel, anchor):
    if rel not in ANCHORS:
        ANCHORS[rel] = anchors(rel)
    return anchor in ANCHORS[rel]


def check_links(problems, files):
    """Every relative link of README.md, CHANGELOG.md and docs/*.md reaches a file and heading."""
    pages = ["README.md", "CHANGELOG.md"] + sorted(f for f in files if re.match(r"docs/[^/]+\.md$", f))
    for page in pages:
        text = without_fences(read(page))
        for m in LINK.finditer(text):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            rel = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            where = "%s:%d" % (page, line_of(text, m.start()))
            if not os.path.exists(os.path.join(ROOT, rel)):
                problems.append("%s: link to %s: no such file" % (where, target))
            elif anchor and rel.endswith(".md") and not has_anchor(rel, anchor):
                problems.append("%s: link to %s: %s has no such heading" % (where, target, rel))


def check_citations(problems, files):
    """Every docs/*.md (and #heading) that a source or build file cites exists."""
    cited = re.compile(r"docs/([\w-]+\.md)(#[\w-]+)?")
    sources = (".cpp", ".h", ".py", ".sh", ".cmake", ".proto", "CMakeLists.txt")
    for f in (f for f in files if f.endswith(sources)):
        text = read(f)
        for m in cited.finditer(text):
            rel = "docs/" + m.group(1)
            where = "%s:%d" % (f, line_of(text, m.start()))
            if not os.path.exists(os.path.join(ROOT, rel)):
                problems.append("%s: cites %s: no such file" % (where, rel))
            elif m.group(2) and not has_anchor(rel, m.group(2)[1:]):
                problems.append("%s: cites %s%s: no such heading" % (where, rel, m.group(2)))


def main():
    files = tracked_files()
    problems = []
    named = check_architecture(problems, files)
    check_layout(problems, files)
    check_links(problems, files)
    check_citations(problems, files)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print("check_doc_paths: %d stale path(s) or link(s)" % len(problems), file=sys.stderr)
        return 1
    print("check_doc_paths: %s names %d paths, all present; layout table and links match the tree" %
          (ARCHITECTURE, named))
    return 0


if __name__ == "__main__":
    sys.exit(main())
