#!/usr/bin/env python3
"""Writes phone_zones.tsv: libphonenumber's time-zone data (the number
prefix -> IANA zones map of its PhoneNumberToTimeZonesMapper), as the
maintained Python port `phonenumbers` ships it, at the pinned version
below. Data, not code: the campaigns area reads it (window.rs) to place a
contact without a `timeZone` field by its mobile number. Licence of the
data: Apache-2.0 (libphonenumber).

    python3 components/campaigns/data/phone_zones.py           # rewrite the table
    python3 components/campaigns/data/phone_zones.py --check   # ./dev test: is the committed table this output?

The pinned package is installed (once) into target/phone_zones/, never
into the system's Python; to move to a newer libphonenumber, change
PHONENUMBERS and rewrite the table.
"""
import difflib
import os
import subprocess
import sys

PHONENUMBERS = "8.13.50"
HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = os.path.join(HERE, "phone_zones.tsv")
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
PACKAGES = os.path.join(ROOT, "target", "phone_zones", f"phonenumbers-{PHONENUMBERS}")


def phonenumbers():
    """The pinned `phonenumbers`, installed into PACKAGES when missing."""
    if not os.path.isdir(os.path.join(PACKAGES, "phonenumbers")):
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", PACKAGES, f"phonenumbers=={PHONENUMBERS}"], check=True)
    sys.path.insert(0, PACKAGES)
    import phonenumbers as package

    assert package.__version__ == PHONENUMBERS, f"{package.__file__} is {package.__version__}, not {PHONENUMBERS}"
    return package


def table():
    package = phonenumbers()
    from phonenumbers.tzdata import TIMEZONE_DATA

    lines = [f"# libphonenumber {package.__version__} time-zone data (Apache-2.0): prefix<TAB>zones, sorted by prefix\n"]
    lines += [f"{prefix}\t{' '.join(TIMEZONE_DATA[prefix])}\n" for prefix in sorted(TIMEZONE_DATA)]
    return "".join(lines)


def main():
    generated = table()
    if sys.argv[1:] == ["--check"]:
        with open(TABLE, encoding="utf-8") as f:
            committed = f.read()
        if committed != generated:
            diff = difflib.unified_diff(committed.splitlines(True), generated.splitlines(True), "phone_zones.tsv (committed)", "phone_zones.py's output")
            sys.stdout.writelines(list(diff)[:40])
            sys.exit(f"{TABLE} is not what phone_zones.py writes: rerun it and commit the table")
        print(f"phone_zones.tsv is libphonenumber {PHONENUMBERS}'s time-zone data ({generated.count(chr(10)) - 1} prefixes)")
    elif not sys.argv[1:]:
        with open(TABLE, "w", encoding="utf-8") as f:
            f.write(generated)
    else:
        sys.exit("usage: phone_zones.py [--check]")


if __name__ == "__main__":
    main()
