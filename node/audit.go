package node

import (
	"path/filepath"

	"github.com/parley-mesh/parley/identity"
	"github.com/parley-mesh/parley/internal/audit"
)

// Audit appends r to the home's audit log (HOME/audit.log). Every part of
// the node that decides who can reach whom calls it, through the Audit field
// of its Config, where the decision is made. A failed append is logged: the
// decision stands (it is already in the store), and `parley audit verify`
// shows the gap.
func (n *Node) Audit(r audit.Record) {
	if n.audit == nil {
		return
	}
	if _, err := n.audit.Append(r); err != nil {
		n.log.Error("audit log: append failed", "action", r.Action, "err", err)
		return
	}
	n.log.Debug("audit", "action", r.Action, "actor", r.Actor, "subject", r.Subject)
}

// AuditHome appends r to the audit log of a home whose node may or may not be
// running (the log takes a lock of its own), signed with the home's key: for
// decisions made outside the node, such as installs. A fresh home gets its
// key here, as `parley up` would make it; a home whose key is lost while its
// database remains is refused as `parley up` refuses it.
func AuditHome(home string, r audit.Record) error {
	if err := CheckHome(home); err != nil {
		return err
	}
	if err := MakeHome(home); err != nil {
		return err
	}
	if err := prepareIdentity(Config{Home: home}); err != nil {
		return err
	}
	priv, err := identity.LoadOrCreate(filepath.Join(home, KeyFileName))
	if err != nil {
		return err
	}
	l, err := audit.New(home, priv)
	if err != nil {
		return err
	}
	_, err = l.Append(r)
	return err
}
