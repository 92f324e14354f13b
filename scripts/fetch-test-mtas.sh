#!/usr/bin/env bash
# Unpacks Debian's Exim for test/integration/exim.test.ts into $MAILVERDICT_MTA_ROOT (default
# /tmp/mailverdict-mtas), where the tests find it and start it with a config, spool, log and
# ports of their own. `apt-get download` + `dpkg -x`: nothing is installed, so the system's MTA
# (Postfix, for test/integration/postfix.test.ts) stays as it is. Debian or Ubuntu, after an
# `apt-get update`. As root, it also creates the Debian-exim system user that Debian's Exim
# looks up at every start (its package would have); the tests run Exim as root.
set -euo pipefail

ROOT=${MAILVERDICT_MTA_ROOT:-/tmp/mailverdict-mtas}
MARKER=.mailverdict-mtas
# libidn12 is Exim's one library that bookworm does not install by default.
PACKAGES=(exim4-daemon-light libidn12)

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

if [ "$(id -u)" != 0 ]; then
  echo "fetch-test-mtas: unpacked in $ROOT; the Exim tests run as root only (they skip otherwise)"
  exit 0
fi
if ! id Debian-exim >/dev/null 2>&1; then
  useradd --system --user-group --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin Debian-exim
fi

LIBS=$(printf '%s:' "$ROOT"/usr/lib/*-linux-gnu)
if ! OUT=$(LD_LIBRARY_PATH="${LIBS}${LD_LIBRARY_PATH:-}" "$ROOT/usr/sbin/exim4" -C /dev/null -bV 2>&1); then
  echo "fetch-test-mtas: the unpacked Exim does not run: $OUT" >&2
  exit 1
fi
echo "fetch-test-mtas: $(grep -m1 '^Exim version' <<<"$OUT"), in $ROOT"
