#!/usr/bin/env python3
"""Writes phone_zones.tsv: libphonenumber's time-zone data (the number
prefix -> IANA zones map of its PhoneNumberToTimeZonesMapper), as the
maintained Python port `phonenumbers` ships it. Data, not code: the
campaigns area reads it (window.rs) to place a contact without a `timeZone`
field by its mobile number. Licence of the data: Apache-2.0 (libphonenumber).

    pip install phonenumbers==8.13.50
    python3 components/campaigns/data/phone_zones.py > components/campaigns/data/phone_zones.tsv
"""
import phonenumbers
from phonenumbers.tzdata import TIMEZONE_DATA

print(f"# libphonenumber {phonenumbers.__version__} time-zone data (Apache-2.0): prefix<TAB>zones, sorted by prefix")
for prefix in sorted(TIMEZONE_DATA):
    print(f"{prefix}\t{' '.join(TIMEZONE_DATA[prefix])}")
