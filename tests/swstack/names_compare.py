#!/usr/bin/env python3
"""names_compare.py - swstack's names against an outside authority's.

    names_compare.py eu-stack SWSTACK_TEXT EU_STACK_TEXT
    names_compare.py gdb-libc SWSTACK_TEXT GDB_TEXT
    names_compare.py same SWSTACK_TEXT SWSTACK_TEXT2
    names_compare.py swdeadlock SWDEADLOCK_ALL_TEXT EU_STACK_TEXT
    names_compare.py gdb SWSTACK_TEXT GDB_TEXT
    names_compare.py llvm SWSTACK_TEXT MAPS PROGRAM

eu-stack: EU_STACK_TEXT is `eu-stack -i -s -p PID` of the process
swstack printed: every thread, frame by frame, must have the same PC,
function name and source file:line[:column]; an inlined frame is one
eu-stack lists at the PC of the frame after it.  eu-stack names an
assembler function by its symbol (__clone3) where a DWARF subprogram
names it (clone3, as gdb and llvm-symbolizer do, and swstack): names
are compared without leading underscores.

gdb-libc: GDB_TEXT is gdb's `thread apply all bt` of that process.  Its
frames are grouped by PC (an inlined frame carries the PC of the frame
it is inlined in); every group at a PC where swstack shows libc must
give the same names, innermost first.  gdb names an assembler function by
its symbol where eu-stack and swstack take the DWARF name (clone3 for
__clone3): names are compared without leading underscores and glibc's
__GI_ prefix.  Groups of PCs swstack does not have (gdb's tail-call
frames, synthesized from DW_TAG_call_site) are counted and listed, not
failed.

same: two swstack texts of the same program (another process: PCs and
module paths differ) name every frame alike, function and source.

gdb: as gdb-libc, for every module, and the lines too: gdb prints a C++
function without its parameter list ("outer", not "outer(long)"), so
swstack's loses it before comparing; a frame gdb gives a line
("at FILE:LINE") must have that file's name and line.

swdeadlock: the same as eu-stack, for `swdeadlock --all` (its threads'
list, each with its stack).

llvm: every frame swstack shows in PROGRAM (its mappings in MAPS, a copy
of /proc/PID/maps), asked of LLVM's llvm-symbolizer at the same address
(the return address less one for a caller): the same chain of inlined
calls and function, innermost first, names demangled by binutils'
c++filt without Rust's hashes and disambiguators, and each frame's
file's name, line and column.  For Rust, where eu-stack (libdw's
dwarf_getscopes) does not look inside namespaces, rustc's home of every
function, and so misses inlined calls that gdb and LLVM show.

Prints a summary line; exits 1 with the differences otherwise.
"""
import re
import subprocess
import sys

SW_THREAD = re.compile(r"^Thread \d+ \(LWP (\d+)\):")
# The module is the last parenthesis: a name may hold some ("FnOnce<(), Output = ()>").
SW_FRAME = re.compile(r"^#(\d+) +0x([0-9a-f]+) in (\?\?|(.+?)(?:\+0x[0-9a-f]+)?) \(([^()]*)\) \[\w+\]"
                      r"( inlined)?(?: at (.+?))?( <signal handler called>)?$")
DL_THREAD = re.compile(r"^  (\d+) [a-z-]+")
DL_FRAME = re.compile(r"^    #(\d+) +0x([0-9a-f]+) in (\?\?|(.+?)(?:\+0x[0-9a-f]+)?) \(([^()]*)\)"
                      r"( inlined)?(?: at (.+?))?$")
EU_THREAD = re.compile(r"^TID (\d+):$")
EU_FRAME = re.compile(r"^#(\d+) +0x([0-9a-f]+)(?: (.*))?$")
GDB_THREAD = re.compile(r"^Thread \d+ .*\(LWP (\d+)\)")
GDB_FRAME = re.compile(r"^#(\d+) +(?:0x([0-9a-f]+) in )?(\S+) \(.*?\)(?: at (\S+):(\d+))?")


def our_frames(path, thread_re, frame_re, after=None):
    """{lwp: [(pc, name, source, module, inlined)]} of swstack's text, or of
    swdeadlock's from the line `after` on."""
    threads, lwp, reading = {}, None, after is None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line == after:
                reading = True
                continue
            m = thread_re.match(line)
            if reading and m:
                lwp = int(m.group(1))
                threads[lwp] = []
                continue
            m = frame_re.match(line)
            if reading and m and lwp is not None:
                threads[lwp].append((int(m.group(2), 16), m.group(4), m.group(7), m.group(5),
                                     m.group(6) is not None))
    return threads


def swstack(path):
    return our_frames(path, SW_THREAD, SW_FRAME)


def swdeadlock(path):
    """swdeadlock --all's threads list, each with its stack."""
    return our_frames(path, DL_THREAD, DL_FRAME, after="threads:")


def eu_stack(path):
    threads, lwp = {}, None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            m = EU_THREAD.match(line)
            if m:
                lwp = int(m.group(1))
                threads[lwp] = []
                continue
            m = EU_FRAME.match(line)
            if m and lwp is not None:
                threads[lwp].append([int(m.group(2), 16), m.group(3), None])
            elif line.startswith("    ") and lwp is not None and threads[lwp]:
                threads[lwp][-1][2] = line.strip()
    return threads


def gdb(path):
    """{lwp: [(pc or None, name)]}"""
    threads, lwp = {}, None
    with open(path) as f:
        for line in f:
            m = GDB_THREAD.match(line)
            if m:
                lwp = int(m.group(1))
                threads[lwp] = []
                continue
            m = GDB_FRAME.match(line)
            if m and lwp is not None:
                where = "%s:%s" % (m.group(4).rsplit("/", 1)[-1], m.group(5)) if m.group(4) else None
                threads[lwp].append((int(m.group(2), 16) if m.group(2) else None, (m.group(3), where)))
    return threads


RUST_NOISE = re.compile(r"::h[0-9a-f]{16}$|\[[0-9a-f]{1,16}\]")


def llvm_symbolizer(program, addresses):
    """[[(name, FILE:LINE:COLUMN) innermost first] per address], from llvm-symbolizer."""
    query = "".join("0x%x\n" % a for a in addresses)
    raw = subprocess.run(["llvm-symbolizer", "--obj=" + program, "--no-demangle"], input=query,
                         capture_output=True, text=True, check=True).stdout
    names = subprocess.run(["c++filt"], input=raw, capture_output=True, text=True,
                           check=True).stdout.split("\n")
    out, block = [], []
    for i in range(0, len(names) - 1):
        line = names[i]
        if not line:
            out.append(block)
            block = []
        elif len(block) == 0 or isinstance(block[-1], tuple):
            block.append(RUST_NOISE.sub("", line))
        else:
            block[-1] = (block[-1], line)
    return out


def short_place(source):
    """FILE:LINE:COLUMN with the file's name alone; None where the file is unknown."""
    if not source or source.startswith("??"):
        return None
    return source.rsplit("/", 1)[-1]


def compare_llvm(sw, maps_path, program):
    bias = None
    with open(maps_path) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and parts[5] == program:
                start, offset = int(parts[0].split("-")[0], 16), int(parts[2], 16)
                if bias is None or offset < bias[1]:
                    bias = (start - offset, offset)
    if bias is None:
        return ["%s: not in %s" % (program, maps_path)], 0
    asked = []      # (lwp, pc, [(name, source)] innermost first)
    for lwp in sorted(sw):
        chain = []
        for i, (pc, name, source, module, inlined) in enumerate(sw[lwp]):
            chain.append((name, source))
            if inlined:
                continue
            if module == program:
                asked.append((lwp, pc, i == len(chain) - 1, chain))
            chain = []
    answers = llvm_symbolizer(program, [pc - bias[0] - (0 if first else 1)
                                        for _, pc, first, _ in asked])
    bad, n = [], 0
    for (lwp, pc, _, mine), theirs in zip(asked, answers):
        got = [(nm, short_place(src)) for nm, src in mine]
        want = [(nm, short_place(src)) for nm, src in theirs]
        if got != want:
            bad.append("LWP %d 0x%x: swstack %s, llvm-symbolizer %s" % (lwp, pc, got, want))
        n += len(mine)
    return bad, n


def compare_eu(sw, eu):
    bad, n = [], 0
    if sorted(sw) != sorted(eu):
        return ["threads: swstack %s, eu-stack %s" % (sorted(sw), sorted(eu))], 0
    for lwp in sorted(sw):
        a, b = sw[lwp], eu[lwp]
        if len(a) != len(b):
            bad.append("LWP %d: %d frames, eu-stack %d" % (lwp, len(a), len(b)))
        for i, (x, y) in enumerate(zip(a, b)):
            mine = (x[0], plain(x[1] or ""), x[2])
            theirs = (y[0], plain(y[1] or ""), y[2])
            if mine != theirs:
                bad.append("LWP %d #%d: swstack %r, eu-stack %r" % (lwp, i, mine, theirs))
            n += 1
    return bad, n


def plain(name):
    if name.startswith("__GI_"):
        name = name[len("__GI_"):]
    return name.lstrip("_")


def groups(frames, first_pc):
    """[(pc, [names innermost first])] for frames of (pc or None, name)."""
    out, pc = [], first_pc
    for fpc, name in frames:
        if fpc is not None and (not out or fpc != pc or not out[-1][1]):
            pc = fpc
            out.append((pc, [name]))
        elif not out:
            out.append((pc, [name]))
        else:
            out[-1][1].append(name)
    return out


def without_parameters(name):
    """A C++ name without its parameter list and qualifiers, as gdb prints it."""
    if not name or not name.endswith((")", ") const")):
        return name
    depth, i = 0, len(name.rstrip(" const")) - 1
    while i >= 0:
        depth += {")": 1, "(": -1}.get(name[i], 0)
        if depth == 0:
            return name[:i]
        i -= 1
    return name


def short_source(source):
    """FILE:LINE of swstack's FILE:LINE[:COLUMN], the file's name alone."""
    if not source:
        return None
    parts = source.rsplit("/", 1)[-1].split(":")
    return ":".join(parts[:2])


def compare_gdb_libc(sw, gd, every_module=False):
    bad, gdb_only, n = [], [], 0
    for lwp in sorted(sw):
        if lwp not in gd or not sw[lwp]:
            bad.append("LWP %d: not in gdb's output" % lwp)
            continue
        mine = {}
        for pc, name, source, module, _ in sw[lwp]:
            mine.setdefault(pc, []).append((name, module, source))
        for pc, frames in groups(gd[lwp], sw[lwp][0][0]):
            names = [nm for nm, _ in frames]
            if pc not in mine:
                gdb_only.append("LWP %d 0x%x %s" % (lwp, pc, " ".join(names)))
                continue
            if not every_module and not any(m and "/libc.so" in m for _, m, _ in mine[pc]):
                continue
            got = [without_parameters(nm) if every_module else nm for nm, _, _ in mine[pc]]
            if [plain(x or "??") for x in got] != [plain(x) for x in names]:
                bad.append("LWP %d 0x%x: swstack %s, gdb %s" % (lwp, pc, got, names))
            if every_module:
                for (_, _, source), (name, where) in zip(mine[pc], frames):
                    if where and short_source(source) != where:
                        bad.append("LWP %d 0x%x %s: swstack at %s, gdb at %s"
                                   % (lwp, pc, name, source, where))
            n += len(names)
    return bad, n, gdb_only


def compare_same(a, b):
    bad, n = [], 0
    la = [[(f[1], f[2], f[4]) for f in a[k]] for k in sorted(a)]
    lb = [[(f[1], f[2], f[4]) for f in b[k]] for k in sorted(b)]
    if len(la) != len(lb):
        return ["%d threads, %d" % (len(la), len(lb))], 0
    for i, (x, y) in enumerate(zip(la, lb)):
        if x != y:
            bad.append("thread %d: %r\n   versus %r" % (i + 1, x, y))
        n += len(x)
    return bad, n


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "llvm":
        mode = "llvm"
        bad, n = compare_llvm(swstack(sys.argv[2]), sys.argv[3], sys.argv[4])
        return report(mode, bad, n, [])
    if len(sys.argv) != 4:
        sys.stderr.write(__doc__)
        return 2
    mode, a, b = sys.argv[1:]
    gdb_only = []
    if mode == "eu-stack":
        bad, n = compare_eu(swstack(a), eu_stack(b))
    elif mode == "gdb-libc":
        bad, n, gdb_only = compare_gdb_libc(swstack(a), gdb(b))
    elif mode == "gdb":
        bad, n, gdb_only = compare_gdb_libc(swstack(a), gdb(b), every_module=True)
    elif mode == "swdeadlock":
        bad, n = compare_eu(swdeadlock(a), eu_stack(b))
    elif mode == "same":
        bad, n = compare_same(swstack(a), swstack(b))
    else:
        sys.stderr.write(__doc__)
        return 2
    return report(mode, bad, n, gdb_only)


def report(mode, bad, n, gdb_only):
    for g in gdb_only:
        print("names_compare: only gdb has (a tail call): %s" % g)
    if not bad and n == 0:
        bad = ["no frames compared"]
    for x in bad:
        print("names_compare: %s: %s" % (mode, x))
    if bad:
        return 1
    print("names_compare: %s: %d frames named alike" % (mode, n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
