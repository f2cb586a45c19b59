# Writes 16 MiB to stdout in 1 MiB write(2) calls that ignore the count, as an unbuffered stream
# does (python -u's print); reports the calls that wrote less to stderr. 42: some wrote short
# (the rest of those calls is lost), 73: every call wrote all of it.
import os
import sys

chunk = b"W" * (1 << 20)
short = sum(1 for _ in range(16) if os.write(1, chunk) < len(chunk))
print(f"{short} of 16 writes short", file=sys.stderr)
sys.exit(42 if short else 73)
