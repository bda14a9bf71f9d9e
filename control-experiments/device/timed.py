#!/usr/bin/env python3
"""Runs a command once and prints one JSON line: wall, user and sys seconds, minor page faults and
peak RSS of the command, and how /proc/vmstat's huge-page and compaction counters moved meanwhile
(system-wide: the machine is otherwise idle). With --no-thp the command runs with transparent huge
pages disabled for it (prctl PR_SET_THP_DISABLE, inherited across exec), whatever it advises.

    timed.py [--no-thp] [--label L] -- COMMAND ARGS...
"""
import ctypes
import json
import os
import sys
import time

COUNTERS = ("thp_fault_alloc", "thp_fault_fallback", "compact_stall", "compact_fail", "pgfault")
PR_SET_THP_DISABLE = 41


def vmstat():
    out = {}
    try:
        with open("/proc/vmstat") as f:
            for line in f:
                k, v = line.split()
                if k in COUNTERS:
                    out[k] = int(v)
    except OSError:
        pass
    return out


def steal_ticks():
    """The steal field of /proc/stat's first line (all CPUs), in clock ticks (USER_HZ)."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        return int(fields[8])
    except (OSError, IndexError, ValueError):
        return 0


def main(argv):
    no_thp, label = False, None
    while argv and argv[0] != "--":
        a = argv.pop(0)
        if a == "--no-thp":
            no_thp = True
        elif a == "--label" and argv:
            label = argv.pop(0)
        else:
            sys.exit(f"timed.py: unknown argument {a!r} (usage: timed.py [--no-thp] [--label L] -- CMD...)")
    if len(argv) < 2:
        sys.exit("timed.py: no command after --")
    cmd = argv[1:]
    before, steal0, t0 = vmstat(), steal_ticks(), time.monotonic()
    pid = os.fork()
    if pid == 0:
        try:
            if no_thp:
                libc = ctypes.CDLL(None, use_errno=True)
                if libc.prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0:
                    os.write(2, b"timed.py: prctl(PR_SET_THP_DISABLE) failed\n")
                    os._exit(126)
            fd = os.open(os.devnull, os.O_WRONLY)
            os.dup2(fd, 1)
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    _, status, ru = os.wait4(pid, 0)
    wall = time.monotonic() - t0
    after, steal1 = vmstat(), steal_ticks()
    rec = {
        "label": label,
        "thp": not no_thp,
        "rc": os.waitstatus_to_exitcode(status),
        "wall_s": round(wall, 4),
        "user_s": round(ru.ru_utime, 4),
        "sys_s": round(ru.ru_stime, 4),
        "minflt": ru.ru_minflt,
        "maxrss_kb": ru.ru_maxrss,
    }
    rec.update({k: after.get(k, 0) - before.get(k, 0) for k in COUNTERS})
    # Time the hypervisor ran something else while a vCPU of this machine wanted to run.
    rec["steal_s"] = round((steal1 - steal0) / os.sysconf("SC_CLK_TCK"), 3)
    print(json.dumps(rec), flush=True)
    return 0 if rec["rc"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
