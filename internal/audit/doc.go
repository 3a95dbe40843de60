// Package audit keeps a node's audit log: every decision that changes who
// can reach whom or what happened (contact requests, approvals, denials and
// revocations; room creation, invitations, removals and leaves; organisation
// trust; mutes and kills; installs into agent clients) is appended to a local
// file, one entry a line, each entry signed by the node's key and chained to
// the one before it by hash. Editing, reordering or deleting an entry breaks
// a signature or the chain, and Verify names the first entry that is wrong.
//
// # File format
//
// HOME/audit.log holds one JSON object per line (no blank lines):
//
//	{"entry":{…},"sig":"<base64 Ed25519 signature>"}
//
// where the signature covers the exact bytes of the "entry" value under the
// signing domain identity.DomainAudit, by the node whose peer ID the entry
// names. The entry object is
//
//	{"n":1,"time":"2026-12-01T04:42:16.123Z","node":"12D3Koo…","actor":"human",
//	 "action":"contact.approve","subject":"12D3Koo…","detail":{"expires":"…"},"prev":"<hex>"}
//
// n counts from 1 without gaps; prev is the lower-case hex SHA-256 of the
// whole previous line (without its newline), empty for n = 1. A line is at
// most MaxLine bytes.
//
// HOME/audit.head holds one signed line of the same shape whose entry is
// {"n":N,"hash":"<hex of line N>","node":"…"}: the newest entry the node
// wrote. It is replaced atomically after each append, so a log cut short
// (entries deleted from the end) is found too; a head from an older copy of
// the home cannot be told from a real one — the log is a local record, not a
// shared ledger.
//
// Appends take an exclusive flock on the log, so the node and a command-line
// tool (an installer) may append to the same log; each append is fsynced
// before it returns. A line left incomplete by a crash is cut off by the next
// append (it was never acknowledged). A complete last line that does not
// read (damaged) does not stop the log: the next entry is numbered after it
// (its line number + 1), names the hash of its bytes as they are, and says
// why in its detail "after_damaged"; Verify still names the damaged line.
//
// # Reading
//
// Verify reads the whole log and checks everything: each line, each
// signature, the numbering, the chain and the head file. List with a limit
// (the dashboard's last entries) reads the log backwards from its end and
// checks only the entries it returns, each one's signature, and the log's
// last entry against the head file (a log cut short is refused); its cost
// follows the limit, not the log's length.
package audit
