"""Every C++ block of README.md and docs/*.md compiles against the INSTALLED SDK
(`cmake --install` into a private prefix, then find_package(mdcast)).

A fenced block whose info string is `cpp` (or c++, cxx) is a complete program:
it must have main() and is compiled and linked. `cpp fragment` marks a
fragment: statements compiled as the body of a function, after every public
mdcast header and <iostream>, so it must declare what it uses. Nothing else
is accepted: an unknown info string after `cpp` fails the test, so no block is
skipped by accident. Errors point into the Markdown file (#line).

The programs that docs/sdk.md and the README open with must be, verbatim,
client-sdk/examples/consumer.cpp and publisher.cpp, which test_sdk_install.py
builds from the installed copy and runs against a real stack."""
import glob
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
import installed_sdk  # noqa: E402
from harness import check  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "../.."))
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)
CPP_NAMES = ("cpp", "c++", "cxx", "cc")
HEADERS = [h for h in installed_sdk.HEADERS if h != "export.h"]


def documents():
    return [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))


def cpp_blocks(path):
    """(line of the block's first code line, kind, code) for each C++ block."""
    text = open(path).read()
    blocks = []
    for match in FENCE.finditer(text):
        words = match.group(1).strip().lower().split()
        if not words or words[0] not in CPP_NAMES:
            continue
        line = text.count("\n", 0, match.start(2)) + 1
        where = f"{os.path.relpath(path, ROOT)}:{line}"
        kind = " ".join(words[1:]) or "program"
        check(kind in ("program", "fragment"), f"{where}: unknown C++ block kind '{kind}'")
        has_main = re.search(r"\bint\s+main\s*\(", match.group(2)) is not None
        check(has_main or kind == "fragment",
              f"{where}: a `cpp` block is a whole program with main(); mark a part `cpp fragment`")
        check(not has_main or kind == "program", f"{where}: a program with main() is a `cpp` block, not a fragment")
        blocks.append((line, kind, match.group(2)))
    return blocks


def source_for(path, line, kind, code):
    directive = f'#line {line} "{path}"\n'
    if kind == "program":
        return directive + code
    includes = "".join(f"#include <mdcast/{h}>\n" for h in HEADERS)
    return (includes + "#include <iostream>\n\n[[maybe_unused]] static void fragment() {\n" +
            directive + code + "}\n")


def write_project(work, blocks):
    """A CMake project with one target per block: an executable for a program,
    an object library for a fragment (compiled, not linked)."""
    src = os.path.join(work, "src")
    os.makedirs(src)
    lines = ["cmake_minimum_required(VERSION 3.16)", "project(doc_snippets LANGUAGES CXX)",
             "find_package(mdcast 0.1 REQUIRED)"]
    for index, (path, line, kind, code) in enumerate(blocks):
        name = re.sub(r"[^A-Za-z0-9]+", "_", f"{os.path.relpath(path, ROOT)}_{line}")
        with open(os.path.join(src, name + ".cpp"), "w") as f:
            f.write(source_for(path, line, kind, code))
        if kind == "program":
            lines.append(f"add_executable({name} src/{name}.cpp)")
        else:
            lines.append(f"add_library({name} OBJECT src/{name}.cpp)")
            # A fragment may name a variable only to show it.
            lines.append(f"target_compile_options({name} PRIVATE -Wno-unused-variable "
                         "-Wno-unused-but-set-variable)")
        lines.append(f"target_link_libraries({name} PRIVATE mdcast::mdcast)")
    with open(os.path.join(work, "CMakeLists.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def test_first_programs_are_the_examples():
    examples = os.path.join(ROOT, "client-sdk/examples")
    consumer = open(os.path.join(examples, "consumer.cpp")).read()
    publisher = open(os.path.join(examples, "publisher.cpp")).read()
    sdk = [code for _, kind, code in cpp_blocks(os.path.join(ROOT, "docs/sdk.md")) if kind == "program"]
    check(sdk[:2] == [consumer, publisher],
          "docs/sdk.md must open with client-sdk/examples/consumer.cpp and publisher.cpp, verbatim")
    readme = [code for _, kind, code in cpp_blocks(os.path.join(ROOT, "README.md"))]
    check(readme[:1] == [consumer], "the README's first C++ block must be client-sdk/examples/consumer.cpp")


def test_every_cpp_block_compiles_against_the_installed_sdk():
    blocks = [(path, *block) for path in documents() for block in cpp_blocks(path)]
    check(len(blocks) >= 4, f"only {len(blocks)} C++ blocks found")
    work = tempfile.mkdtemp(prefix="mdcast-doc-snippets-")
    try:
        prefix = os.path.join(work, "prefix")
        installed_sdk.install(prefix)
        project = os.path.join(work, "project")
        write_project(project, blocks)
        installed_sdk.cmake_build(project, os.path.join(work, "build"), prefix)
        print(f"{len(blocks)} blocks compiled: " +
              ", ".join(f"{os.path.relpath(p, ROOT)}:{line} ({kind})" for p, line, kind, _ in blocks))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    harness.run([test_first_programs_are_the_examples,
                 test_every_cpp_block_compiles_against_the_installed_sdk])
