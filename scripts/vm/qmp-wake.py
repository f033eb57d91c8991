#!/usr/bin/env python3
"""Wake a QEMU guest each time it suspends to RAM (S3).

Usage: qmp-wake.py SOCKET [DELAY_S [RESUME_S]]

Connects to QEMU's QMP socket (``-qmp unix:SOCKET,server=on,wait=off``),
waits for the guest's SUSPEND events and answers each, DELAY_S seconds
(default 2) later, with ``system_wakeup``: a guest of scripts/vm/vm-run.sh
--s3 that writes "mem" to /sys/power/state comes back as from a real
sleep.  The RTC alarm (rtcwake) would be the guest's own way, but
QEMU's guests were not woken by it here.  Exits when QEMU closes the
socket; prints one line on stderr per suspend it answers.

It also watches each resume: a guest whose first CPU is not back in
64-bit mode within RESUME_S seconds (default 120; 0: no watch) of the
wakeup never came back (a 7.x guest under QEMU 7.2 stays in real mode at
address 0), and the waker ends it with QMP's quit rather than let it hang
until the VM's timeout.  The CPU's mode, not the console, tells: a guest
that resumed may well log nothing at the console's loglevel.  (With
SeaBIOS, as here; a guest stuck in 64-bit firmware (OVMF), or one that
hangs later in its resume, is not caught and runs into the timeout.)
"""
import json
import socket
import sys
import time


def connect(path, tries=600):
    """The QMP socket, once QEMU has made it (0.1 s between tries)."""
    for _ in range(tries):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            return s
        except OSError:
            s.close()
            time.sleep(0.1)
    sys.exit(f"qmp-wake: no QMP socket at {path}")


def command(f, pending, cmd, **args):
    """Run a QMP command; its return value.  Events read meanwhile are
    kept in pending, in order."""
    msg = {"execute": cmd}
    if args:
        msg["arguments"] = args
    f.write(json.dumps(msg) + "\n")
    f.flush()
    for line in f:
        reply = json.loads(line)
        if "event" in reply:
            pending.append(reply)
        elif "return" in reply or "error" in reply:
            return reply.get("return")
    raise ConnectionResetError("QEMU closed the socket")


def in_long_mode(f, pending):
    """Whether the guest's first CPU runs 64-bit code (HMP's register
    dump marks a 64-bit code segment CS64; real mode has no segment
    types); None if QEMU does not say."""
    regs = command(f, pending, "human-monitor-command",
                   **{"command-line": "info registers"})
    return "CS64" in regs if isinstance(regs, str) else None


def watch_resume(f, pending, timeout):
    """Quit QEMU if the guest is not back in 64-bit mode in time."""
    waited = 0.0
    while waited < timeout:
        time.sleep(2)
        waited += 2
        mode = in_long_mode(f, pending)
        if mode is None:
            print("qmp-wake: QEMU gives no registers; not watching",
                  file=sys.stderr, flush=True)
            return
        if mode:
            return
    print(f"qmp-wake: the guest did not resume within {timeout:g} s (its "
          "first CPU is not in 64-bit mode); ending it (QMP quit)",
          file=sys.stderr, flush=True)
    command(f, pending, "quit")


def main():
    if len(sys.argv) not in range(2, 5):
        sys.exit(__doc__)
    delay = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
    resume_s = float(sys.argv[3]) if len(sys.argv) > 3 else 120.0
    f = connect(sys.argv[1]).makefile("rw")
    f.readline()  # the greeting
    pending = []
    command(f, pending, "qmp_capabilities")
    while True:
        if pending:
            msg = pending.pop(0)
        else:
            line = f.readline()
            if not line:
                return
            msg = json.loads(line)
        if msg.get("event") != "SUSPEND":
            continue
        print("qmp-wake: the guest suspended; waking it in "
              f"{delay:g} s", file=sys.stderr, flush=True)
        time.sleep(delay)
        command(f, pending, "system_wakeup")
        if resume_s > 0:
            watch_resume(f, pending, resume_s)


if __name__ == "__main__":
    try:
        main()
    except (BrokenPipeError, ConnectionResetError):
        pass
