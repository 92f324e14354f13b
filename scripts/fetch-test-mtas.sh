#!/usr/bin/env bash
# Unpacks Debian's Exim and OpenSMTPD for test/integration/exim.test.ts and opensmtpd.test.ts
# into $MAILVERDICT_MTA_ROOT (default /tmp/mailverdict-mtas), where the tests find them and start
# each with a config, spool, log and ports of its own. `apt-get download` + `dpkg -x`: nothing is
# installed, so the system's MTA (Postfix, for test/integration/postfix.test.ts) stays as it is.
# Debian 12 or later, after an `apt-get update`. As root, it also creates the system users their
# packages would have (Debian-exim, which Debian's Exim looks up at every start; opensmtpd and
# opensmtpq, OpenSMTPD's privilege-separated processes); the tests run both servers as root.
set -euo pipefail

ROOT=${MAILVERDICT_MTA_ROOT:-/tmp/mailverdict-mtas}
MARKER=.mailverdict-mtas
# libidn12 is Exim's one library that bookworm does not install by default.
PACKAGES=(exim4-daemon-light libidn12 opensmtpd)

if ! command -v apt-get >/dev/null || ! command -v dpkg >/dev/null; then
  echo "fetch-test-mtas: needs Debian's apt-get and dpkg" >&2
  exit 1
fi
# Never empty a directory this script did not fill.
if [ -e "$ROOT" ] && [ ! -e "$ROOT/$MARKER" ] && [ -n "$(ls -A "$ROOT")" ]; then
  echo "fetch-test-mtas: $ROOT exists and was not made by this script; set MAILVERDICT_MTA_ROOT" >&2
  exit 1
fi

DEBS=$(mktemp -d)
trap 'rm -rf "$DEBS"' EXIT
# As root, apt downloads as the _apt user: it must be able to write there.
if [ "$(id -u)" = 0 ]; then chown _apt "$DEBS" 2>/dev/null || true; fi
(cd "$DEBS" && apt-get download -q "${PACKAGES[@]}")

rm -rf "$ROOT"
mkdir -p "$ROOT"
for deb in "$DEBS"/*.deb; do dpkg -x "$deb" "$ROOT"; done
touch "$ROOT/$MARKER"

LIBS=$(printf '%s:' "$ROOT"/usr/lib/*-linux-gnu)
MISSING=$(LD_LIBRARY_PATH="${LIBS}${LD_LIBRARY_PATH:-}" ldd "$ROOT/usr/sbin/exim4" "$ROOT/usr/sbin/smtpd" | grep 'not found' || true)
if [ -n "$MISSING" ]; then
  echo "fetch-test-mtas: libraries missing (add their packages to PACKAGES):" >&2
  echo "$MISSING" >&2
  exit 1
fi

if [ "$(id -u)" != 0 ]; then
  echo "fetch-test-mtas: unpacked in $ROOT; the Exim and OpenSMTPD tests run as root only (they skip otherwise)"
  exit 0
fi
system_user() {
  id "$1" >/dev/null 2>&1 ||
    useradd --system --user-group --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin "$1"
}
system_user Debian-exim
system_user opensmtpd
system_user opensmtpq

if ! OUT=$(LD_LIBRARY_PATH="$LIBS" "$ROOT/usr/sbin/exim4" -C /dev/null -bV 2>&1); then
  echo "fetch-test-mtas: the unpacked Exim does not run: $OUT" >&2
  exit 1
fi
echo "fetch-test-mtas: $(grep -m1 '^Exim version' <<<"$OUT"), in $ROOT"
# smtpd -h prints its version and usage, and exits 1.
OUT=$("$ROOT/usr/sbin/smtpd" -h 2>&1 || true)
if ! grep -q '^version: OpenSMTPD' <<<"$OUT"; then
  echo "fetch-test-mtas: the unpacked OpenSMTPD does not run: $OUT" >&2
  exit 1
fi
echo "fetch-test-mtas: $(grep -m1 '^version' <<<"$OUT" | sed 's/^version: //'), in $ROOT"
