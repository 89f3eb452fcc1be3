#!/usr/bin/env python3
"""Proves that the one-way dependency order of DESIGN.md holds and cannot rot.

    check_layering.py --source ROOT --build BUILD_DIR [--design DESIGN.md]

Three checks, each naming what is wrong:

1. The table. cmake/layers.cmake (what swiftlet_library() enforces when it
   links) says exactly what DESIGN.md's dependency lines say.
2. The sources. Every `#include "X/..."` in src/F/ names F itself or a
   folder on F's line.
3. The compiler. For every folder F that has a library, a probe file
   preprocessed with the flags of one of F's own sources (from
   compile_commands.json; a unity batch of them in a unity build):
   including a header of F itself must preprocess, and including a header
   of each folder F may not use must fail because that header is not found.
   (Preprocessing alone decides where includes resolve, at a third of the
   cost of compiling; the build itself compiles every header used.) So
   the build cannot start leaking include directories (a PUBLIC link, an
   include path added by hand) without this check failing.

Exit 0 when all hold, 1 with one line per problem otherwise.
"""

import argparse
import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile


def parse_layers_cmake(path):
    layers = {}
    for line in open(path, encoding="utf-8"):
        m = re.match(r"\s*set\(SWIFTLET_LAYER_(\w+)\s+(.*)\)\s*$", line)
        if m:
            deps = m.group(2).replace('""', "").split()
            layers[m.group(1)] = set(deps)
    return layers


def parse_design(path):
    """The dependency lines of DESIGN.md: `name → a, b, c   (comment)`."""
    text = open(path, encoding="utf-8").read()
    start = text.find("## Folders and the one-way dependency order")
    if start < 0:
        raise ValueError(f"{path}: no 'Folders and the one-way dependency order' section")
    block = text[start:]
    block = block[block.index("```") + 3:]
    block = block[: block.index("```")]
    layers = {}
    for line in block.splitlines():
        m = re.match(r"\s*(\w+)\s+→\s+(.*)$", line)
        if not m:
            continue
        rest = re.split(r"\s{2,}|\s\(", m.group(2).strip())[0]
        deps = set() if rest.startswith("(nothing)") else {d.strip() for d in rest.split(",") if d.strip()}
        layers[m.group(1)] = deps
    return layers


def check_table(layers, design, problems):
    for name in sorted(set(layers) | set(design)):
        if name not in design:
            problems.append(f"cmake/layers.cmake: folder '{name}' is not in DESIGN.md")
        elif name not in layers:
            problems.append(f"cmake/layers.cmake: DESIGN.md's folder '{name}' is missing")
        elif layers[name] != design[name]:
            problems.append(
                f"cmake/layers.cmake: {name} -> {', '.join(sorted(layers[name])) or '(nothing)'}; "
                f"DESIGN.md says {', '.join(sorted(design[name])) or '(nothing)'}")


INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"', re.M)


def check_sources(src, layers, problems):
    folders = {d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d))}
    for folder in sorted(folders):
        allowed = layers.get(folder)
        if allowed is None:
            problems.append(f"src/{folder}/: a folder DESIGN.md does not list")
            continue
        base = os.path.join(src, folder)
        for dirpath, _, files in os.walk(base):
            for f in sorted(files):
                if not f.endswith((".h", ".cc", ".inc")):
                    continue
                path = os.path.join(dirpath, f)
                text = open(path, encoding="utf-8", errors="replace").read()
                for m in INCLUDE.finditer(text):
                    used = m.group(1)
                    if used in folders and used != folder and used not in allowed:
                        line = text.count("\n", 0, m.start()) + 1
                        rel = os.path.relpath(path, os.path.dirname(src))
                        problems.append(f"{rel}:{line}: {folder} may not include {used}/ "
                                        f"(its line: {', '.join(sorted(allowed)) or 'nothing'})")


def first_header(src, folder):
    headers = sorted(f for f in os.listdir(os.path.join(src, folder)) if f.endswith(".h"))
    return f"{folder}/{headers[0]}" if headers else None


def probe_command(entry, probe):
    """The compile command of `entry` aimed at `probe`, syntax only, without
    its output, dependency-file and precompiled-header arguments (a probe
    includes only what it names)."""
    args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    out = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-o", "-c", "-MF", "-MT", "-MQ", "-include"):
            i += 2
            continue
        if a == "-Xclang" and i + 1 < len(args) and args[i + 1] in ("-include", "-include-pch"):
            i += 4  # -Xclang -include(-pch) -Xclang FILE
            continue
        if a in ("-MD", "-MMD", "-Winvalid-pch") or a == entry["file"]:
            i += 1
            continue
        out.append(a)
        i += 1
    return out + ["-E", "-o", os.devnull, probe], entry["directory"]


def run_probe(cmd, cwd):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    return r.returncode, r.stderr


def check_compiler(src, build, layers, problems):
    db_path = os.path.join(build, "compile_commands.json")
    db = json.load(open(db_path, encoding="utf-8"))
    src_abs = os.path.realpath(src)
    # A unity build compiles batches of a folder's sources, generated under
    # BUILD/src/F/: their commands carry F's flags all the same.
    unity_abs = os.path.join(os.path.realpath(build), "src")
    by_folder = {}
    for entry in db:
        f = os.path.realpath(os.path.join(entry["directory"], entry["file"]))
        rel = os.path.relpath(f, src_abs)
        if rel.startswith("..") or os.sep not in rel:
            rel = os.path.relpath(f, unity_abs)
            if rel.startswith("..") or os.sep not in rel or os.sep + "Unity" + os.sep not in rel:
                continue
        if rel.endswith(".cu"):
            continue  # nvcc's command (kernels/cuda): the probes are C++ files.
        by_folder.setdefault(rel.split(os.sep)[0], entry)
    folders = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    headers = {f: first_header(src, f) for f in folders}
    jobs = []
    with tempfile.TemporaryDirectory(prefix="layering.") as tmp:
        for folder in folders:
            entry = by_folder.get(folder)
            if entry is None:
                problems.append(f"src/{folder}/: no compile command in {db_path}")
                continue
            for other in folders:
                if headers[other] is None:
                    continue
                expect_ok = other == folder
                if not expect_ok and other in layers.get(folder, set()):
                    continue  # Allowed: the normal build compiles these.
                probe = os.path.join(tmp, f"{folder}__{other}.cc")
                with open(probe, "w", encoding="utf-8") as p:
                    p.write(f'// A file of {folder}/ including a header of {other}/.\n'
                            f'#include "{headers[other]}"\n')
                cmd, cwd = probe_command(entry, probe)
                jobs.append((folder, other, headers[other], expect_ok, cmd, cwd))
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            results = list(pool.map(lambda j: run_probe(j[4], j[5]), jobs))
    checked = 0
    for (folder, other, header, expect_ok, _, _), (rc, err) in zip(jobs, results):
        checked += 1
        if expect_ok and rc != 0:
            problems.append(f"probe: a file of {folder}/ cannot include its own {header}:\n{err[:2000]}")
        elif not expect_ok:
            # The probed header itself not found (GCC's words, then clang's),
            # not one it includes: a leaked include directory finds the
            # header and then fails on that header's own includes.
            missing = f"{header}: No such file" in err or f"'{header}' file not found" in err
            if rc == 0:
                problems.append(f"probe: a file of {folder}/ can include {header}, "
                                f"but {folder} may not use {other} (an include directory leaks)")
            elif not missing:
                problems.append(f"probe: a file of {folder}/ including {header} failed, "
                                f"but not for want of the header:\n{err[:2000]}")
    return checked


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", required=True, help="the repository root")
    ap.add_argument("--build", required=True, help="a configured build tree")
    ap.add_argument("--design", help="DESIGN.md (default: ROOT/../shared/DESIGN.md)")
    a = ap.parse_args()
    root = os.path.realpath(a.source)
    src = os.path.join(root, "src")
    design_path = a.design or os.path.join(root, "..", "shared", "DESIGN.md")
    problems = []
    layers = parse_layers_cmake(os.path.join(root, "cmake", "layers.cmake"))
    if not os.path.exists(design_path):
        problems.append(f"{design_path}: missing (the table is checked against it)")
    else:
        check_table(layers, parse_design(design_path), problems)
    check_sources(src, layers, problems)
    probes = check_compiler(src, a.build, layers, problems)
    for p in problems:
        print(f"layering: {p}", file=sys.stderr)
    if problems:
        print(f"layering: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"layering: the table matches DESIGN.md; every include points the right way; "
          f"{probes} probes preprocessed as the order says")
    return 0


if __name__ == "__main__":
    sys.exit(main())
