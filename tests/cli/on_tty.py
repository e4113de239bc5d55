#!/usr/bin/env python3
"""Runs a command with its standard output on a pseudo-terminal (tests/test_cli.sh: `on_tty CMD...`).

Standard error stays the caller's. Prints the command's exit code and how many bytes reached the
terminal, so a case can show that binary output was (or was not) written to a terminal.
"""
import os
import pty
import select
import subprocess
import sys

master, slave = pty.openpty()
proc = subprocess.run(sys.argv[1:], stdout=slave, stdin=subprocess.DEVNULL)
os.close(slave)
got = 0
while select.select([master], [], [], 0.5)[0]:
    try:
        data = os.read(master, 65536)
    except OSError:   # EIO: the terminal closed
        break
    if not data:
        break
    got += len(data)
print("exit %d, %d bytes on the terminal" % (proc.returncode, got))
sys.exit(proc.returncode)
