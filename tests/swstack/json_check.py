#!/usr/bin/env python3
"""json_check.py - check swstack --json output strictly, against its text.

    json_check.py JSON TEXT KIND NAME ARCH

JSON is `swstack --json` of a target and TEXT the text output of the same
target (taken separately, of a target that did not move in between).  The
JSON must parse strictly (no NaN or Infinity, no duplicate keys, nothing
after the document), have exactly the documented keys and types (see
swstack(1)), say target KIND, name NAME and arch ARCH, and give the same
threads (LWPs and names, in order) and frames (level, pc, function,
offset, module, trust, signal trampoline, inlined, file, line, column) as
the text.  Prints one summary line; exits 1
with the first difference otherwise.
"""
import json
import re
import sys


class Bad(Exception):
    pass


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise Bad("duplicate key in %r" % keys)
    return dict(pairs)


def no_constant(name):
    raise Bad("non-JSON constant " + name)


def want(cond, what):
    if not cond:
        raise Bad(what)


def keys(obj, required, optional=()):
    want(isinstance(obj, dict), "not an object: %r" % (obj,))
    missing = set(required) - set(obj)
    extra = set(obj) - set(required) - set(optional)
    want(not missing and not extra, "keys %s: missing %s, extra %s"
         % (sorted(obj), sorted(missing), sorted(extra)))


FRAME = re.compile(r"^#(\d+) +0x([0-9a-f]+) in (\?\?|(.+?)(?:\+0x([0-9a-f]+))?) \((.*?)\) \[(\w+)\]"
                   r"( inlined)?(?: at (.+?)(?::(\d+)(?::(\d+))?)?)?( <signal handler called>)?$")
THREAD = re.compile(r'^Thread (\d+) \(LWP (\d+)\):(?: "(.*)")?$')


def parse_text(path):
    """The text output as [(thread, lwp, [frame dict])], and its 'Backtrace stopped' flags."""
    threads = []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            m = THREAD.match(line)
            if m:
                threads.append({"thread": int(m.group(1)), "lwp": int(m.group(2)),
                                "name": m.group(3), "frames": [], "stopped": False})
                continue
            m = FRAME.match(line)
            if m:
                want(threads, "a frame before any thread: " + line)
                fr = {"level": int(m.group(1)), "pc": "0x%x" % int(m.group(2), 16),
                      "function": m.group(4), "module": None if m.group(6) == "??" else m.group(6),
                      "trust": m.group(7), "signal_trampoline": m.group(12) is not None,
                      "inlined": m.group(8) is not None, "file": m.group(9),
                      "line": int(m.group(10)) if m.group(10) else None,
                      "column": int(m.group(11)) if m.group(11) else None}
                if m.group(5) is not None:
                    fr["offset"] = int(m.group(5), 16)
                threads[-1]["frames"].append(fr)
            elif line.startswith("Backtrace stopped"):
                threads[-1]["stopped"] = True
            elif line:
                raise Bad("unexpected text line: " + line)
    return threads


def main():
    if len(sys.argv) != 6:
        sys.stderr.write(__doc__)
        return 2
    jpath, tpath, kind, name, arch = sys.argv[1:]
    try:
        with open(jpath) as f:
            doc = json.loads(f.read(), object_pairs_hook=no_duplicates,
                             parse_constant=no_constant)
        text = parse_text(tpath)
        keys(doc, ("target", "name", "arch", "threads"))
        want(doc["target"] == kind, "target %r, not %r" % (doc["target"], kind))
        want(doc["name"] == name, "name %r, not %r" % (doc["name"], name))
        want(doc["arch"] == arch, "arch %r, not %r" % (doc["arch"], arch))
        want(isinstance(doc["threads"], list), "threads is not a list")
        want(len(doc["threads"]) == len(text), "%d threads in JSON, %d in text"
             % (len(doc["threads"]), len(text)))
        nframes = 0
        for jt, tt in zip(doc["threads"], text):
            keys(jt, ("thread", "lwp", "name", "frames", "error"))
            for k in ("thread", "lwp"):
                want(type(jt[k]) is int and jt[k] == tt[k], "thread %s: %r, text %r"
                     % (k, jt[k], tt[k]))
            want(jt["name"] is None or isinstance(jt["name"], str), "thread name type")
            want(jt["name"] == tt["name"], "thread name %r, text %r" % (jt["name"], tt["name"]))
            want(isinstance(jt["frames"], list), "frames is not a list")
            want(len(jt["frames"]) == len(tt["frames"]), "LWP %d: %d frames in JSON, %d in text"
                 % (tt["lwp"], len(jt["frames"]), len(tt["frames"])))
            for level, (jf, tf) in enumerate(zip(jt["frames"], tt["frames"])):
                keys(jf, ("level", "pc", "function", "module", "trust", "signal_trampoline",
                          "inlined", "file", "line", "column"), ("offset",))
                want(type(jf["level"]) is int and jf["level"] == level, "level %r" % jf["level"])
                want(isinstance(jf["pc"], str) and re.match(r"^0x[0-9a-f]+$", jf["pc"]),
                     "pc %r" % jf["pc"])
                want(jf["function"] is None or isinstance(jf["function"], str), "function type")
                want("offset" not in jf or jf["function"] is not None, "offset without function")
                want("offset" not in jf or not jf["inlined"], "an inlined frame with an offset")
                want(type(jf.get("offset", 0)) is int and jf.get("offset", 0) >= 0, "offset type")
                want(type(jf["signal_trampoline"]) is bool, "signal_trampoline type")
                jf = dict(jf)
                jf["pc"] = "0x%x" % int(jf["pc"], 16)
                want(jf == tf, "LWP %d #%d: JSON %r, text %r" % (tt["lwp"], level, jf, tf))
                nframes += 1
            if tt["stopped"]:
                keys(jt["error"], ("code", "message", "depth", "ip", "sp"))
            else:
                want(jt["error"] is None, "LWP %d: an error the text does not show" % tt["lwp"])
    except (Bad, ValueError) as e:
        print("json_check: %s: %s" % (jpath, e))
        return 1
    print("json_check: %s: %d threads, %d frames, the same as the text"
          % (jpath, len(text), nframes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
