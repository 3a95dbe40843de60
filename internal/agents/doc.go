// Package agents is the node's agent service: the registry of the agent
// sessions attached to this node, their public cards in the DHT, their
// presence to contacts, and lookups of other nodes' agents.
//
// # Local agents
//
// An agent session (MCP, the CLI) registers under a name
// (identity.AgentName) with a role, capabilities, a client, a session ID,
// what it works on and a TTL (Config.DefaultTTL, 60 s, if it gives none;
// at most MaxTTL). It keeps its registration alive with heartbeats, which
// may also set its state (idle, busy) and what it works on. A registration
// not renewed within its TTL is swept at its expiry, and is treated as gone
// from that instant even before the sweep runs. Registering a name held by
// another live session fails with ErrNameTaken; the same session (or an
// expired holder) updates it. The name "human" (identity.HumanAgent) is the
// node's user and no agent's: registering it fails with ErrReservedName
// (a registration or session bound to it by an older node is dropped or
// given its fallback name). A node holds at most discovery.MaxAgents
// agents. Registrations are kept in the store under schema.LocalAgent, so
// they outlive a node restart until their TTL.
//
// # Sessions
//
// A client's session (an MCP session key, a thread ID) is bound to an agent
// by Session: the node keeps, under schema.Session, the session's agent name
// and card (role, capabilities, what it works on, client), and registers the
// agent with them. A session that reconnects gets its name and card back; a
// session that renames its agent unregisters the old name. A new session
// takes its fallback name, with "-2", "-3", … added while another live
// session holds it.
//
// # Cards in the DHT
//
// Each local agent has a card (discovery.Card) signed by the node: peer,
// the node's handle, agent, role, capabilities, client, seq (unix ms at
// sealing, strictly increasing per node) and expires (now + Config.CardTTL,
// 1 h by default). It is put in the DHT under /parley-agent/<peer>/<agent>
// (namespace discovery.Namespace, checked by discovery.Validator on every
// node) and the node announces itself as a provider of the card's provider
// keys (handle:<handle>, agent:<name>, cap:<capability>). It is re-published
// when its public fields change, at half its lifetime, and again with
// back-off after a failure.
//
// A card is withdrawn (unregister, sweep) by publishing a tombstone: a card
// of the same agent with a higher seq, no role, capabilities or client, and
// a lifetime (expires − seq) of WithdrawTTL. Cards whose lifetime is at
// most WithdrawTTL are withdrawals: lookups skip them, and they expire from
// the DHT by themselves. Provider records cannot be withdrawn; they lead to
// nothing once the card is gone.
//
// # Lookups: /parley/cards/1
//
// Find turns a query into provider lookups (discovery.ParseQuery) and asks
// the DHT for providers of each. For an agent-name query it then gets the
// card of that name of each provider from the DHT. A provider record of a
// handle or capability does not say which of the provider's agents it is
// for, so for those (and when the DHT has no card yet) the searcher asks
// the provider for its cards on a /parley/cards/1 stream: the searcher
// opens the stream and closes its side; the provider writes each of its
// live cards as one frame (discovery.WriteFrame: uvarint length, then the
// card's wire form, at most discovery.MaxAgents frames) and closes. Every
// card, from the DHT or from a provider, is checked with discovery.Validator
// under the key of the peer it came from, so a card signed by anyone else,
// expired, or too long-lived is dropped. Cards are public: anyone may ask.
// A peer may open at most CardsRateLimit streams a minute.
//
// Anyone may announce any provider key, so a query meets strangers that
// have no card under it, answer nothing or hold the stream open. A query
// takes up to 200 providers and asks them as the DHT brings them, 16 at
// once, each within 2 s (dial, exchange and, for an agent name, the DHT
// lookup), contacts first and providers that gave no valid card in the
// last 10 minutes last (at most 4,096 remembered), all within
// Config.FindTimeout.
//
// # Presence: /parley/presence/1
//
// The node sends a signed discovery.Presence of all its agents (state,
// working on, last seen, role, capabilities) to each peer with an active
// contact, and to no one else: when a contact becomes active or connects,
// when what its agents show changes (at most once per Config.MinInterval),
// and as a heartbeat every Config.Heartbeat. Each message goes on a new
// stream that the sender opens, writes one frame on and closes; a contact
// with no known address is looked up in the DHT first. A send that fails is
// tried again when the contact connects or starts serving the protocol (it
// connected while its agent service was starting), or at the next
// heartbeat; one made at once for a contact that connected is also tried
// again while the contact stays connected, after a wait that doubles from
// Config.MinInterval up to Config.Heartbeat.
//
// The receiver takes a message only from a peer that is an active contact
// and passes Allowed, signed by the stream's remote peer, with a seq above
// the last one it took from that peer, and at most PresenceRateLimit a
// minute. It shows a contact's agents (Who) until it has heard nothing for
// three of its own heartbeats, or until the connection to the contact
// drops and the contact cannot be dialled again: then its agents are
// offline and Who leaves them out. Anyone else sees only public cards
// (Find), never what an agent works on.
package agents
