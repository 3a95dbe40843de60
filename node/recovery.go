package node

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/parley-mesh/parley/consent"
	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/atomicfile"
	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/store"
	"github.com/parley-mesh/parley/internal/store/schema"
)

// RecoveryFileName is the home's recovery file: a copy of the room list
// (i/ keys), the contact records (c/), the peers' last addresses (p/), the
// moderation rules (k/) and the organisation records (o/) of the database,
// kept in step with it (checked every recoverySaveInterval and when the node stops).
// Config.Recover restores it into a new database, so a node whose
// database was lost still knows its rooms, its contacts and where to dial
// them, and fetches the rooms' events from their members. Its presence also tells that this
// home ran a node, so a database that disappears is noticed.
const RecoveryFileName = "recovery.json"

// recoverySaveInterval is how often the recovery file is brought up to date.
const recoverySaveInterval = 5 * time.Second

// recoveryFile is the JSON of the recovery file.
type recoveryFile struct {
	V       int             `json:"v"`
	Peer    string          `json:"peer"` // the node the entries belong to
	Saved   time.Time       `json:"saved"`
	Entries []recoveryEntry `json:"entries"`
}

type recoveryEntry struct {
	Key []byte `json:"k"`
	Val []byte `json:"v"`
}

// recoveryPrefixes are the database keys copied to the recovery file.
// With the rooms (whose records keep when the node opened each) go the
// time from which node invites are told, the user's record of the node
// invites told already (the "i" cursors, by the admission's depth, the
// same on every node) and the invitations the user has not read yet (of
// the user's notes, only those: recoveryKeeps): a room the user was not
// told of yet is still told after a recovery, one told and not read yet
// is still in the inbox, and one read (dismissed, taken) is not told
// again.
func recoveryPrefixes() [][]byte {
	return [][]byte{schema.RoomIndexPrefix(), schema.ContactPrefix(), schema.PeerAddrsPrefix(), schema.ModerationPrefix(),
		schema.OrgRecordPrefix(), schema.OrgContactPrefix(), schema.OrgOfferPrefix(), schema.KeyInvitesTold(),
		schema.AgentCursorPrefix(string(identity.HumanAgent), "i"), humanNotes}
}

// humanNotes is the prefix of the user's notes (the inbox's "n" items).
var humanNotes = schema.AgentCursorPrefix(string(identity.HumanAgent), "n")

// recoveryKeeps reports whether the recovery file keeps the entry k, v of
// one of recoveryPrefixes: every one but the user's notes other than
// invitations (a reply or a notice names events and asks the file does
// not keep).
func recoveryKeeps(k, v []byte) bool {
	if !bytes.HasPrefix(k, humanNotes) {
		return true
	}
	var it localapi.Item
	return json.Unmarshal(v, &it) == nil && it.Kind == "invitation"
}

func (n *Node) recoveryPath() string { return filepath.Join(n.cfg.Home, RecoveryFileName) }

// readRecovery reads a recovery file; there is false if it does not exist.
func readRecovery(path string) (rf *recoveryFile, there bool, err error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, fmt.Errorf("node: read %s: %w", path, err)
	}
	rf = new(recoveryFile)
	if err := json.Unmarshal(raw, rf); err != nil || rf.V != 1 {
		return nil, true, fmt.Errorf("node: %s is damaged (%v)", path, err)
	}
	return rf, true, nil
}

// openStore opens the database, refusing to start on a silent reset: a
// database gone from a home that ran a node, a damaged database, or one
// made for another identity stop the node with one line that says what to
// do, unless Config.Recover asks to start anew (what is set aside is kept,
// never deleted). A new database gets the room list and contacts of the
// recovery file.
func (n *Node) openStore() error {
	dir := filepath.Join(n.cfg.Home, DataDirName)
	recPath := n.recoveryPath()
	rec, recThere, recErr := readRecovery(recPath)
	contents, err := store.Inspect(dir)
	if err != nil {
		return err
	}
	fresh := false // the database is new: restore the recovery file into it
	if contents.Empty() && recThere {
		if !n.cfg.Recover {
			return fmt.Errorf("%w: %s is gone, though this home ran a node (%s is here): put it back from a backup, or start with --recover to begin a new database with this identity, the room list and contacts of %s, and rooms refetched from their members",
				ErrDataMissing, dir, RecoveryFileName, RecoveryFileName)
		}
		fresh = true
	}
	if rec != nil && rec.Peer != n.id.String() && !contents.Empty() && !n.cfg.Recover {
		// The recovery file names the database's node: refuse before
		// Badger opens (and writes) the folder.
		return n.mismatch(dir, rec.Peer)
	}
	db, err := n.openDB(dir)
	if errors.Is(err, store.ErrCorrupt) {
		if !n.cfg.Recover {
			return damagedError{err: err, advice: fmt.Sprintf("put it back from a backup, or start with --recover to keep it aside as %s… and begin a new database with the room list and contacts of %s, rooms refetched from their members",
				brokenPrefix, RecoveryFileName)}
		}
		dst, aerr := setAside(dir, brokenPrefix)
		if aerr != nil {
			return aerr
		}
		n.log.Warn("recover: the damaged database is kept aside", "path", dst, "damage", err.Error())
		fresh = true
		db, err = n.openDB(dir)
	}
	if err != nil {
		return err
	}
	owner, ok, err := db.Lookup(schema.KeyNode())
	if err != nil {
		db.Close()
		return fmt.Errorf("node: open database: %w", err)
	}
	if ok && !bytes.Equal(owner, []byte(n.id)) {
		other, _ := peer.IDFromBytes(owner)
		if !n.cfg.Recover {
			db.Close()
			return n.mismatch(dir, other.String())
		}
		if err := db.Close(); err != nil {
			n.log.Warn("close before setting aside", "err", err)
		}
		dst, err := setAside(dir, oldPrefix)
		if err != nil {
			return err
		}
		n.log.Warn("recover: the database of another identity is kept aside", "path", dst, "its_peer", other.String())
		fresh, ok = true, false
		if db, err = n.openDB(dir); err != nil {
			return err
		}
	}
	if !ok && !fresh && rec != nil && rec.Peer == n.id.String() && holdsNone(db, recoveryPrefixes()) {
		// A database never prepared (no m/node) beside this node's
		// recovery file: a start that made it (--recover, or the first
		// after a lost database) was cut short before it wrote the
		// file's entries. Its first save would write the file over with
		// nothing.
		n.log.Warn("recover: the database holds nothing yet; the recovery file's entries are restored into it")
		fresh = true
	}
	ops := []schema.Op{}
	if !ok {
		ops = append(ops, schema.Op{Key: schema.KeyNode(), Val: []byte(n.id)})
	}
	restored := 0
	if fresh && rec != nil && rec.Peer == n.id.String() {
		for _, e := range rec.Entries {
			if slices.ContainsFunc(recoveryPrefixes(), func(p []byte) bool { return bytes.HasPrefix(e.Key, p) }) && recoveryKeeps(e.Key, e.Val) {
				ops = append(ops, schema.Op{Key: e.Key, Val: e.Val})
				restored++
			}
		}
	}
	if len(ops) > 0 {
		if err := db.Apply(ops, true); err != nil {
			db.Close()
			return fmt.Errorf("node: prepare database: %w", err)
		}
	}
	switch {
	case fresh && rec != nil && rec.Peer == n.id.String():
		n.log.Warn("recover: new database; room list, contacts, peer addresses, moderation and organisation records restored, rooms are refetched from their members",
			"entries", restored, "saved", rec.Saved.Format(time.RFC3339))
	case fresh && recErr != nil:
		n.log.Warn("recover: new database; the recovery file could not be read, so rooms and contacts start empty", "err", recErr)
	case fresh:
		n.log.Warn("recover: new database; no recovery file of this identity, so rooms and contacts start empty")
	case n.cfg.Recover:
		n.log.Info("recover: the database is sound; nothing to recover")
	}
	n.db = db
	if fresh && recThere {
		// Keep the file the new database came from, until the next save
		// shows what was restored.
		if _, err := setAside(recPath, RecoveryFileName+".before-recover-"); err != nil {
			n.log.Warn("recovery file not kept aside", "err", err)
		}
	}
	n.saveRecovery()
	return nil
}

// holdsNone reports whether db holds no key under any of prefixes (false
// if it cannot tell).
func holdsNone(db *store.DB, prefixes [][]byte) bool {
	for _, p := range prefixes {
		found := false
		if err := db.Scan(p, func(_, _ []byte) bool { found = true; return false }); err != nil || found {
			return false
		}
	}
	return true
}

func (n *Node) mismatch(dir, other string) error {
	return fmt.Errorf("%w: %s is node %s, but %s holds the database of node %s: put that node's key back, or start with --recover to keep the database aside and begin a new one for %s",
		ErrIdentityMismatch, filepath.Join(n.cfg.Home, KeyFileName), n.id, dir, other, n.id)
}

func (n *Node) openDB(dir string) (*store.DB, error) {
	return store.OpenConfig(store.Config{Dir: dir, Logger: n.log, MinFree: n.cfg.MinFreeDisk, MemTableSize: n.cfg.StoreMemTableSize})
}

// damagedError is a damaged database and what to do about it, on one line.
// It wraps the store's error (store.ErrCorrupt) and is ErrStoreDamaged.
type damagedError struct {
	err    error
	advice string
}

func (e damagedError) Error() string        { return "node: " + e.err.Error() + "; " + e.advice }
func (e damagedError) Unwrap() error        { return e.err }
func (e damagedError) Is(target error) bool { return target == ErrStoreDamaged }

// saveRecovery writes the recovery file if what it copies changed. Only
// the recovery loop and Close (after the loop ended) call it.
func (n *Node) saveRecovery() {
	rf := recoveryFile{V: 1, Peer: n.id.String(), Saved: time.Now().UTC()}
	for _, p := range recoveryPrefixes() {
		err := n.db.Scan(p, func(k, v []byte) bool {
			if recoveryKeeps(k, v) {
				rf.Entries = append(rf.Entries, recoveryEntry{Key: bytes.Clone(k), Val: bytes.Clone(v)})
			}
			return true
		})
		if err != nil {
			n.log.Warn("recovery file not updated", "err", err)
			return
		}
	}
	raw, err := json.Marshal(rf.Entries)
	if err != nil {
		n.log.Warn("recovery file not updated", "err", err)
		return
	}
	sum := sha256.Sum256(raw)
	if _, err := os.Stat(n.recoveryPath()); err == nil && sum == n.recoverySum {
		return
	}
	raw, err = json.MarshalIndent(rf, "", " ")
	if err == nil {
		err = atomicfile.Replace(n.recoveryPath(), raw, 0o600)
	}
	if err != nil {
		n.log.Warn("recovery file not updated", "path", n.recoveryPath(), "err", err)
		return
	}
	n.recoverySum = sum
}

// startRecovery keeps the recovery file up to date and refetches rooms
// that hold no events (after --recover) from their members and contacts.
func (n *Node) startRecovery() {
	n.wg.Add(2)
	go func() {
		defer n.wg.Done()
		t := time.NewTicker(recoverySaveInterval)
		defer t.Stop()
		for {
			select {
			case <-n.ctx.Done():
				return
			case <-t.C:
				n.saveRecovery()
			}
		}
	}()
	go func() {
		defer n.wg.Done()
		n.refetchRooms(n.ctx)
	}()
}

// Refetch pacing: the first retry, the longest wait between rounds, and the
// bound on one peer's dial and sync.
const (
	refetchFirst   = 2 * time.Second
	refetchMaxWait = time.Minute
	refetchTimeout = 30 * time.Second
)

// refetchRooms catches up every room that holds no events (a room list
// restored by --recover) from whoever may have it: its members, creator and
// inviter, and the node's contacts. It retries with back-off until every
// such room has events. It relies on rooms for the rest: a room learns its
// members from the events it fetches, and this node's own seq in a room
// from its peers before it posts again.
func (n *Node) refetchRooms(ctx context.Context) {
	wait := refetchFirst
	for {
		var empty []identity.RoomID
		cands := make(map[identity.RoomID][]peer.ID)
		for _, in := range n.rooms.List() {
			if in.Events > 0 {
				continue
			}
			empty = append(empty, in.ID)
			ps := append(slices.Clone(in.Members), in.Creator, in.InvitedBy)
			cands[in.ID] = ps
		}
		if len(empty) == 0 {
			return
		}
		contacts := n.activeContacts()
		for _, id := range empty {
			for _, p := range dedupPeers(append(cands[id], contacts...), n.id) {
				if ctx.Err() != nil {
					return
				}
				if n.refetchFrom(ctx, id, p) {
					break
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, refetchMaxWait)
	}
}

// refetchFrom dials p if needed and syncs room id with it; it reports
// whether the room now holds events.
func (n *Node) refetchFrom(ctx context.Context, id identity.RoomID, p peer.ID) bool {
	ctx, cancel := context.WithTimeout(ctx, refetchTimeout)
	defer cancel()
	if n.host.Network().Connectedness(p) != network.Connected {
		ai := n.host.Peerstore().PeerInfo(p)
		if len(ai.Addrs) == 0 {
			found, err := n.findPeer(ctx, p)
			if err != nil {
				n.log.Debug("refetch: peer not found", "room", string(id), "remote", p.String(), "err", err)
				return false
			}
			ai = found
		}
		if err := n.host.Connect(ctx, ai); err != nil {
			n.log.Debug("refetch: dial failed", "room", string(id), "remote", p.String(), "err", err)
			return false
		}
	}
	if err := n.rooms.SyncNow(ctx, id, p); err != nil {
		n.log.Debug("refetch: sync failed", "room", string(id), "remote", p.String(), "err", err)
		return false
	}
	in, err := n.rooms.Get(id)
	if err != nil || in.Events == 0 {
		return false
	}
	n.log.Info("refetch: room caught up", "room", string(id), "remote", p.String(), "events", in.Events)
	return true
}

func (n *Node) activeContacts() []peer.ID {
	var out []peer.ID
	for _, c := range n.contacts.Book().List(time.Now()) {
		if c.State == consent.StateActive {
			out = append(out, c.Peer)
		}
	}
	return out
}

func dedupPeers(ps []peer.ID, self peer.ID) []peer.ID {
	seen := make(map[peer.ID]bool, len(ps))
	out := ps[:0:0]
	for _, p := range ps {
		if p == "" || p == self || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
	}
	return out
}
