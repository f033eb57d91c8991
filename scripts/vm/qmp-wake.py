#!/usr/bin/env python3
"""Wake a QEMU guest each time it suspends to RAM (S3).

Usage: qmp-wake.py SOCKET [DELAY_S]

Connects to QEMU's QMP socket (``-qmp unix:SOCKET,server=on,wait=off``),
waits for the guest's SUSPEND events and answers each, DELAY_S seconds
(default 2) later, with ``system_wakeup``: a guest of scripts/vm/vm-run.sh
--s3 that writes "mem" to /sys/power/state comes back as from a real
sleep.  The RTC alarm (rtcwake) would be the guest's own way, but
QEMU's guests were not woken by it here.  Exits when QEMU closes the
socket; prints one line on stderr per suspend it answers.
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


def send(f, cmd):
    f.write(json.dumps({"execute": cmd}) + "\n")
    f.flush()


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    delay = float(sys.argv[2]) if len(sys.argv) == 3 else 2.0
    f = connect(sys.argv[1]).makefile("rw")
    f.readline()  # the greeting
    send(f, "qmp_capabilities")
    for line in f:
        msg = json.loads(line)
        if msg.get("event") != "SUSPEND":
            continue
        print("qmp-wake: the guest suspended; waking it in "
              f"{delay:g} s", file=sys.stderr, flush=True)
        time.sleep(delay)
        send(f, "system_wakeup")


if __name__ == "__main__":
    try:
        main()
    except (BrokenPipeError, ConnectionResetError):
        pass
