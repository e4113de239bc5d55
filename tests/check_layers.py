#!/usr/bin/env python3
"""check_layers.py - the header's structure, checked from its text.

1. Every implementation section opens with a banner "   >>name  N. title" followed by an "Owns:"
   and a "May call:" line. Each section may use only its own names and those of the sections its
   "May call:" line lists (so layers call earlier layers only, and dataset read calls nothing in
   dataset write). A name belongs to the section where it first appears, comments and strings
   removed (C declares before use, so that is where it is defined or declared).
2. The sections after io (writer, codec, dataset layers, archive) make no system call: none of the
   POSIX calls below, no errno, no struct stat, no system header.
3. The table of contents at the top lists every anchor, in the order the sections appear.
4. No line is longer than 120 characters.

Exit status 1 with one line per problem; prints a summary otherwise. Usage: check_layers.py [--self-test] [HEADER]
(--self-test first plants one fault of each kind in a copy and fails unless each is found)
"""
import re
import sys

HEADER = "safetensors_spark.h"
SYSCALLS = ("open close read write pread pwrite writev readv fsync fdatasync fstat stat lstat unlink rename "
            "renameat2 link mkdir rmdir opendir readdir closedir mmap munmap madvise sysconf ftruncate "
            "posix_fadvise getpid time clock clock_gettime fcntl ioctl dup dup2 kill").split()
# the io layer is the only one allowed to touch the operating system; util may use the C library
NO_SYSCALL_AFTER = "io"


def strip(code):
    """Comments and string/char literals replaced by spaces (line breaks kept)."""
    out, i, n = [], 0, len(code)
    while i < n:
        c = code[i]
        if code.startswith("/*", i):
            j = code.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", code[i:j]))
            i = j
        elif code.startswith("//", i):
            j = code.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and code[j] != c:
                j += 2 if code[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def check(text):
    """The problems of a header's text (a list of lines) and a summary."""
    problems = []
    impl_at = text.find("#if defined(STS_IMPLEMENTATION)")
    if impl_at < 0:
        return ["no implementation block found"], ""
    banner_re = re.compile(r"^   >>(\w+)\s+(\d+[a-z]?)\.\s+(.*)$", re.M)
    banners = [m for m in banner_re.finditer(text) if m.start() > impl_at]
    if not banners:
        return ["no section banners found"], ""
    sections = []
    for k, m in enumerate(banners):
        end = banners[k + 1].start() if k + 1 < len(banners) else len(text)
        body = text[m.start():end]
        head = body[:body.find("=====", 10)] if body.find("=====", 10) > 0 else body[:2000]
        owns = re.search(r"Owns:", head)
        may = re.search(r"May call:\s*(.*?)\.?\s*$", head, re.M | re.S)
        if not owns:
            problems.append(f"section >>{m.group(1)}: its banner has no 'Owns:' line")
        if not may:
            problems.append(f"section >>{m.group(1)}: its banner has no 'May call:' line")
        allowed = set()
        if may:
            lst = re.sub(r"\([^)]*\)", "", may.group(1))
            lst = lst.split("\n   =")[0]
            lst = re.split(r"\.(\s|$)", lst)[0]  # the list ends with its sentence
            for part in re.split(r",|\band\b", lst):
                part = part.strip().strip(".").lower()
                if not part or part.startswith("the c library") or part == "nothing":
                    continue
                allowed.add(part.replace(" ", "_"))
        # the code of the section starts after the banner comment
        close = body.find("*/")
        sections.append({"name": m.group(1), "num": m.group(2), "start": m.start(), "end": end,
                         "code": strip(body[close + 2:]) if close >= 0 else "", "allowed": allowed})
    names = [s["name"] for s in sections]
    for s in sections:
        for a in s["allowed"]:
            if a not in names:
                problems.append(f"section >>{s['name']}: 'May call:' names '{a}', which is no section")
            elif names.index(a) >= names.index(s["name"]):
                problems.append(f"section >>{s['name']}: 'May call:' names '{a}', which is not an earlier section")

    ident_re = re.compile(r"\b(sts__\w+|STS__\w+|sts_\w+)\b")
    # names of the declarations (public types, enumerators, macros) belong to every section;
    # public functions belong to the section that defines them (below)
    public = set(ident_re.findall(strip(text[:impl_at])))
    owner = {}
    for s in sections:
        for m in ident_re.finditer(s["code"]):
            if m.group(1) not in public:
                owner.setdefault(m.group(1), s["name"])
    # public functions: owned where defined (STSDEF ... name(...) { in the implementation)
    for s in sections:
        for m in re.finditer(r"^STSDEF\b[^;{]*?\b(sts_\w+)\s*\([^;{]*\{", s["code"], re.M | re.S):
            owner[m.group(1)] = s["name"]
    for s in sections:
        seen = set()
        for m in ident_re.finditer(s["code"]):
            ident = m.group(1)
            o = owner.get(ident)
            if o is None or o == s["name"] or o in s["allowed"] or ident in seen:
                continue
            seen.add(ident)
            line = text.count("\n", 0, s["start"]) + s["code"].count("\n", 0, m.start()) + 1
            problems.append(f"{HEADER}:~{line}: section >>{s['name']} uses {ident} of >>{o}, "
                            f"which its 'May call:' line does not list")

    # 2. no system calls after io
    after = False
    sys_re = re.compile(r"\b(" + "|".join(SYSCALLS) + r")\s*\(")
    for s in sections:
        if after:
            code = s["code"]
            for m in sys_re.finditer(code):
                prev = code[max(0, m.start() - 2):m.start()]
                if prev.endswith(".") or prev.endswith(">"):
                    continue  # a member (x.read, x->write), not a call of the C library
                line = text.count("\n", 0, s["start"]) + code.count("\n", 0, m.start()) + 1
                problems.append(f"{HEADER}:~{line}: section >>{s['name']} calls {m.group(1)}(), a system call outside io")
            for pat, what in ((r"\berrno\b", "errno"), (r"\bstruct\s+stat\b", "struct stat"),
                              (r"#\s*include\s*<(?!\w*intrin\.h|arm_neon\.h|cpuid\.h)", "a system header"), (r"\bpthread_\w+\s*\(", "pthreads")):
                for m in re.finditer(pat, code):
                    line = text.count("\n", 0, s["start"]) + code.count("\n", 0, m.start()) + 1
                    problems.append(f"{HEADER}:~{line}: section >>{s['name']} uses {what} outside io")
        if s["name"] == NO_SYSCALL_AFTER:
            after = True

    # 3. the table of contents
    toc_end = text.find("*/")
    toc = text[:toc_end]
    anchors = re.findall(r">>(\w+)", text[impl_at:])
    anchors = list(dict.fromkeys(anchors))
    toc_anchors = re.findall(r">>(\w+)", toc)
    for a in anchors:
        if a not in toc_anchors:
            problems.append(f"anchor >>{a} is not in the table of contents")
    order = [a for a in toc_anchors if a in anchors]
    if order != [a for a in anchors if a in order]:
        problems.append("the table of contents lists the anchors in another order than the file: "
                        + " ".join(order))

    # 4. line length (the house style's 120 columns)
    for no, line in enumerate(text.split("\n"), 1):
        if len(line) > 120:
            problems.append(f"{HEADER}:{no}: {len(line)} characters (at most 120)")

    summary = (f"check_layers: {len(sections)} sections ({' '.join(s['name'] for s in sections)}), "
               f"{len(anchors)} anchors in the table of contents, no call outside 'May call:', "
               f"no system call after >>{NO_SYSCALL_AFTER}")
    return problems, summary


def self_test(text):
    """Each planted fault must be found: a system call, errno and a call up into dataset write
    from dataset read, a call to a later layer from io, an anchor missing from the contents."""
    def plant(after, code):  # into the section whose banner holds `after`, right after the banner
        at = text.index("\n", re.search(r"^   " + after + r"\s+\d", text, re.M).start()) + 1
        at = text.index("*/", at) + 3
        return text[:at] + code + "\n" + text[at:]
    mutants = {
        "close() in dataset read": plant(">>dataset_read", "static int sts__probe_a(void) { return close(0); }"),
        "errno in dataset read": plant(">>dataset_read", "static int sts__probe_b(void) { return errno; }"),
        "dataset read calls dataset write": plant(">>dataset_read", "static void sts__probe_c(void) { sts__wcfg_free(0); }"),
        "io calls dataset read": plant(">>io", "static void sts__probe_d(void) { sts_dataset_close(0); }"),
        "anchor missing from the contents": text.replace(">>dataset_read\n", ">>dataset_reed\n", 1),
        "a line of 121 characters": text.replace("\n#endif /* STS_NO_STDIO */\n", "\n" + "/" * 121 + "\n#endif /* STS_NO_STDIO */\n", 1),
    }
    bad = 0
    for what, mutant in mutants.items():
        problems, _ = check(mutant)
        if not problems:
            print(f"check_layers --self-test: the planted fault was not found: {what}")
            bad += 1
    if not bad:
        print(f"check_layers --self-test: all {len(mutants)} planted faults found")
    return bad


def main():
    args = [a for a in sys.argv[1:] if a != "--self-test"]
    text = open(args[0] if args else HEADER, encoding="utf-8").read()
    if "--self-test" in sys.argv[1:] and self_test(text):
        return 1
    problems, summary = check(text)
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} problem(s)")
        return 1
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
