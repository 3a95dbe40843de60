// Package node is Parley's composition root: it builds a node's libp2p host
// (TCP and QUIC, Noise and TLS, yamux, resource and connection managers), the
// Kad-DHT (protocol prefix /parley, server mode), GossipSub, the Badger store
// and the local API, and runs them until it is told to stop.
//
// A node lives in a home folder:
//
//	identity.key   the Ed25519 key; its peer ID names the node (mode 0600)
//	config         the config file (written by `parley up`, see internal/config)
//	data/          the Badger database (with parley.reserve, see internal/store)
//	recovery.json  the room list and contact records, for Config.Recover
//	parley.sock    the local API (mode 0600), while the node runs
//	node.lock      held (flock) by the running node; holds its pid
//
// New refuses a home another user owns or others may write to (CheckHome),
// and a home whose key is lost while its database remains (unless
// Config.NewIdentity); Start refuses a database that is gone, damaged or
// another identity's (unless Config.Recover). See recovery.go.
//
// Life cycle: New checks the config, loads the key and locks the home; it
// starts no goroutines. Start brings everything up and returns once the node
// listens; Run starts it if needed and blocks until its context ends or the
// local API asks it to stop; Close stops everything and is idempotent.
package node
