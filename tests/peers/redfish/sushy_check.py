#!/usr/bin/python3
"""Conformance check with an independent Redfish client (OpenStack's python3-sushy, Debian's).

    sushy_check.py URL USERNAME PASSWORD_FILE SYSTEM_ID POWER TARGET ENABLED [MODE]

Reads, through sushy, the System SYSTEM_ID of the Redfish service at URL and checks that its
power state is POWER ("on"/"off") and its boot override is TARGET (e.g. "Pxe"), ENABLED
("Once"/"Continuous"/"Disabled") and, when given, MODE ("UEFI"/"Legacy"; "-" = not present).
The password is read from a file, never from argv. Prints what it saw; exit 0 when all match,
1 when something differs, 2 on a usage or connection error. Run with /usr/bin/python3.
"""
import sys


def main(argv):
    if len(argv) not in (8, 9):
        print(__doc__, file=sys.stderr)
        return 2
    url, user, pwfile, sysid, power, target, enabled = argv[1:8]
    mode = argv[8] if len(argv) == 9 else None
    import sushy  # Debian python3-sushy
    with open(pwfile, encoding="utf-8") as f:
        password = f.read().rstrip("\n")
    root = sushy.Sushy(url + "/redfish/v1", username=user, password=password, verify=False)
    system = root.get_system("/redfish/v1/Systems/" + sysid)
    seen = {
        "power": system.power_state,
        "target": system.boot.target,
        "enabled": system.boot.enabled,
        "mode": system.boot.mode,
    }
    # sushy's enums are strings in 4.x ("on", "Pxe", "Once", "UEFI"); compare by value
    def val(v):
        return getattr(v, "value", v)
    got = {k: (None if v is None else str(val(v))) for k, v in seen.items()}
    print("sushy saw power=%s target=%s enabled=%s mode=%s" %
          (got["power"], got["target"], got["enabled"], got["mode"]))
    ok = got["power"].lower() == power.lower() and got["target"] == target and \
        got["enabled"] == enabled
    if mode is not None:
        ok = ok and (got["mode"] == mode if mode != "-" else got["mode"] is None)
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except Exception as e:  # connection or protocol trouble: say what, never the password
        print("sushy_check: %s: %s" % (type(e).__name__, e), file=sys.stderr)
        sys.exit(2)
