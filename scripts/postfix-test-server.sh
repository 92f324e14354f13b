#!/usr/bin/env bash
# Starts Postfix (and postgrey) on a loopback port for test/integration/postfix.test.ts, and
# writes where it listens to $MAILVERDICT_POSTFIX_STATE (default /tmp/mailverdict-postfix.json).
# Debian, as root: installs the packages when missing. It rewrites /etc/postfix: run it on a
# CI or throwaway machine, never on a mail server. `scripts/postfix-test-server.sh stop` stops it.
#
# Mailboxes (domains are ours only inside this Postfix; nothing leaves the machine):
#   example.org   ann@ exists; bob@ (anyone else) is unknown: 550 5.1.1
#                 full@ answers 452 4.2.2, gone@ answers 550 5.2.1 (recipient access rules)
#   catch-all.org accepts every local part
#   greylist.org  ann@ exists, behind postgrey (a first attempt gets 450, a retry passes)
#   policy.org    ann@ exists, but check_recipient_access REJECTs the domain: Postfix's
#                 554 5.7.1 "Recipient address rejected: Access denied" (policy, not the mailbox)
#   sender-check.org  ann@ exists, behind reject_unverified_sender: a sender Postfix cannot
#                 verify gets 550 5.1.7 "Sender address rejected: undeliverable address" at RCPT
set -euo pipefail

STATE=${MAILVERDICT_POSTFIX_STATE:-/tmp/mailverdict-postfix.json}

stop() {
  postfix stop >/dev/null 2>&1 || true
  if [ -f /run/mailverdict-postgrey.pid ]; then
    kill "$(cat /run/mailverdict-postgrey.pid)" 2>/dev/null || true
    rm -f /run/mailverdict-postgrey.pid
  fi
  rm -f "$STATE"
}

if [ "${1:-start}" = stop ]; then
  stop
  exit 0
fi

if ! command -v postconf >/dev/null || ! command -v postgrey >/dev/null; then
  echo "postfix main_mailer_type select No configuration" | debconf-set-selections
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q postfix postgrey >/dev/null
fi

stop

free_port() {
  node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"
}
PORT=$(free_port)
GREY_PORT=$(free_port)

install -d -m 755 /etc/postfix
cat >/etc/postfix/main.cf <<CONF
compatibility_level = 3.6
myhostname = mx.mailverdict.test
mydestination =
alias_maps =
alias_database =
inet_interfaces = loopback-only
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
maillog_file = /var/log/postfix-mailverdict.log
smtputf8_enable = yes
smtpd_banner = \$myhostname ESMTP mailverdict test server
virtual_mailbox_domains = example.org, catch-all.org, greylist.org, policy.org, sender-check.org
virtual_mailbox_maps = hash:/etc/postfix/vmailbox
virtual_mailbox_base = /var/mail/vhosts
virtual_uid_maps = static:65534
virtual_gid_maps = static:65534
smtpd_restriction_classes = greylisting, verify_sender
greylisting = check_policy_service inet:127.0.0.1:${GREY_PORT}
verify_sender = reject_unverified_sender
unverified_sender_reject_code = 550
address_verify_poll_count = 5
smtpd_relay_restrictions = permit_mynetworks, reject_unauth_destination
smtpd_recipient_restrictions = check_recipient_access hash:/etc/postfix/recipient_access, permit
CONF

# master.cf: the default one, with smtpd moved from port 25 to our loopback port.
cat >/etc/postfix/master.cf <<CONF
127.0.0.1:${PORT} inet n - y - - smtpd
pickup    unix  n       -       y       60      1       pickup
cleanup   unix  n       -       y       -       0       cleanup
qmgr      unix  n       -       n       300     1       qmgr
tlsmgr    unix  -       -       y       1000?   1       tlsmgr
rewrite   unix  -       -       y       -       -       trivial-rewrite
bounce    unix  -       -       y       -       0       bounce
defer     unix  -       -       y       -       0       bounce
trace     unix  -       -       y       -       0       bounce
verify    unix  -       -       y       -       1       verify
flush     unix  n       -       y       1000?   0       flush
proxymap  unix  -       -       n       -       -       proxymap
proxywrite unix -       -       n       -       1       proxymap
smtp      unix  -       -       y       -       -       smtp
relay     unix  -       -       y       -       -       smtp
showq     unix  n       -       y       -       -       showq
error     unix  -       -       y       -       -       error
retry     unix  -       -       y       -       -       error
discard   unix  -       -       y       -       -       discard
local     unix  -       n       n       -       -       local
virtual   unix  -       n       n       -       -       virtual
lmtp      unix  -       -       y       -       -       lmtp
anvil     unix  -       -       y       -       1       anvil
scache    unix  -       -       y       -       1       scache
postlog   unix-dgram n  -       n       -       1       postlogd
CONF

cat >/etc/postfix/vmailbox <<'CONF'
ann@example.org      example.org/ann/
full@example.org     example.org/full/
gone@example.org     example.org/gone/
@catch-all.org       catch-all.org/any/
ann@greylist.org     greylist.org/ann/
ann@policy.org       policy.org/ann/
ann@sender-check.org sender-check.org/ann/
CONF

cat >/etc/postfix/recipient_access <<'CONF'
full@example.org     452 4.2.2 Mailbox full: quota exceeded
gone@example.org     550 5.2.1 Mailbox disabled, not accepting messages
greylist.org         greylisting
policy.org           REJECT Access denied
sender-check.org     verify_sender
CONF

postmap /etc/postfix/vmailbox /etc/postfix/recipient_access
install -d -m 755 /var/mail/vhosts

# A database of its own, fresh at each start, and no client auto-whitelisting: postgrey lets
# a client through without greylisting after 5 retries that passed (its default), and the
# system database kept that count across runs, so that from the third run on this machine
# ann@greylist.org was accepted at the first attempt.
GREY_DB=/var/lib/mailverdict-postgrey
rm -rf "$GREY_DB"
install -d -o postgrey -g postgrey -m 700 "$GREY_DB"
postgrey --inet="127.0.0.1:${GREY_PORT}" --delay=1 --auto-whitelist-clients=0 --daemonize \
  --pidfile=/run/mailverdict-postgrey.pid --dbdir="$GREY_DB" >/dev/null
postfix check
postfix start >/dev/null

for _ in $(seq 1 50); do
  if node -e "require('net').connect(${PORT},'127.0.0.1').on('connect',()=>process.exit(0)).on('error',()=>process.exit(1))"; then
    printf '{"host":"127.0.0.1","port":%s}\n' "$PORT" >"$STATE"
    echo "postfix listening on 127.0.0.1:${PORT} (state in ${STATE})"
    exit 0
  fi
  sleep 0.2
done
echo "postfix did not start; see /var/log/postfix-mailverdict.log" >&2
exit 1
