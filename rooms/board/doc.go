// Package board folds a project's board rooms into its board of advisory
// claims: which agent works on which files, why, and until when.
//
// A project (its key is the hash of the root commit of the repository, so
// clones on different machines share it) has a board: the rooms named
// "board:KEY" that the node is in. Agents put claims on it and take them
// off with room events of kinds claim and release, so claims are signed,
// stored, synced after a partition like any event, and the room log is the
// board's history.
//
// # Bodies
//
// A claim's body is a CBOR map in core deterministic encoding:
//
//	1 paths  [text]  1 to MaxPaths patterns (see CheckPattern), sorted, unique
//	2 note   text    the agent's own words, 1 to MaxNote bytes, one line
//	3 ttl    uint    milliseconds the claim lives from the event's time,
//	                 MinTTL to MaxTTL
//
// A release's body is {1: paths} (0 to MaxPaths patterns; none: all the
// agent's claims). DecodeClaim and DecodeRelease refuse anything else; a
// malformed body from another node is ignored by the fold, the same way on
// every node.
//
// # Patterns
//
// Paths are relative to the repository's root, with "/" between segments,
// without ".", ".." or empty segments. "*" stands for any run of characters
// but "/", "?" for one such character, "**" for any run of characters
// including "/" ("dir/**" is a whole directory, "**" the whole project);
// a "**" that is a whole segment before a "/" stands for zero or more
// whole segments ("**/*.go" matches main.go and a/b.go, "src/**/x.go"
// src/x.go), as in git's globs. Two patterns overlap when some path
// matches both (Overlap decides it exactly, on the product of the two
// patterns' automata), and a path with no glob also overlaps a pattern
// that names something inside the folder of that name ("pkg/new", a
// package not made yet, overlaps "pkg/new/a.go" and "pkg/new/**"; git
// holds a file or a folder at a path, never both). A glob that reaches
// into it only through a star ("**/*_test.go") does not: the path is more
// often a file.
//
// # The fold
//
// Every node folds the same events the same way: claims and releases of all
// the project's board rooms, ordered by (time, event ID). A claim holds its
// paths from its time until time + ttl, unless a release of the same agent
// takes them off earlier; a new claim of the same agent on the same path
// renews it. A claim that overlaps a live claim of another agent earlier in
// the order loses as a whole: it holds nothing, and its agent is told. A
// node refuses such a claim before posting it, but it checks only the
// claims it has stored: a claim made before the node had another node's
// on the same path (on two sides of a partition, or by two connected
// nodes within the time an event takes to reach the other) is posted on
// both, and once both are known the later one loses; every node reaches
// the same winner. A claim posted to a board other nodes share is
// answered only after Config.Settle (DefaultSettle, 500 ms), folded
// again: a connected node's claim made at the same moment has arrived by
// then, and the later one's agent is told it lost there, not "Claimed"
// (a claim that waits goes on waiting, for the winner's). Nodes apart
// both hear "Claimed", and the later is told it lost once they meet.
// There is no consensus: claims are advisory.
//
// # Removals
//
// The fold takes in each board room's create event (its creator), the
// joins of nodes (each signed and dated by the node that joins), and the
// room's invites and removals of nodes; a room's creator alone removes
// another node. A node's host is the creator of the first board room it
// created or joined, in fold order: the node itself if it made a board
// room before it joined any. A removal of node X from a board room by its
// creator R ends X's claims posted in the board rooms R created, and has
// X's claims there after it ignored; when R is X's host, it ends X's
// claims in every board room of the project, and X's later claims in any
// of them (a room X makes afterwards too) are ignored. Either lasts until
// a board room R created invites X again. So a member that makes a board
// room of its own and brings the others in can put a node out of its
// room, not off the board (it is not the host of a node that came to the
// board before it), and a node removed by its host does not come back
// through a room of its own. Every node derives it alike from the events
// it has (State.off). A board room this node left is folded out of its
// board. Paths overlap compared in lower case and in NFC. It refuses too a claim over one it holds back
// as dated ahead (see below) that the claim would still be live at: dated
// before it, the claim would take it (the entries held back are folded on
// top of the board in their order, with their expiry, up to the latest
// date the rooms may give the claim, rooms.MaxStepBack past the clock;
// only the first 32 of them, and 64 of their paths, are checked). Expiry needs no event: a claim past
// its expiry is gone, also when its node is dead.
//
// The fold is incremental. An event that comes late, dated before events
// already folded, takes the fold back to the last checkpoint before it,
// and the fold goes on from there only until it holds what it held before
// at the same place: what comes after stands (State).
//
// The fold keeps no body: each is decoded when taken in, and a refused one
// leaves only why. It keeps the entries dated within MaxTTL + MaxAhead +
// 1 h of its last one, and the held claims at a checkpoint before them
// (State.Trim); an entry dated further back has the board folded again
// from its rooms' events, and the history of a board whose fold let go of
// entries is folded from them for each read. An entry dated past MaxAhead
// of this node's clock is kept as where to find it in the store (room,
// arrival) until its date is near.
//
// What one node has the board keep is bounded (MaxNodeWeight): its claims
// and releases of the NodeWindow before one of them, whatever its agents'
// names, may weigh (Weight: paths, note, and about what the fold keeps for
// each event and path) at most 4 MiB with it; past that it is ignored on
// every node alike ("bad" in the history, naming the rule) and its body
// let go of. Ignored ones count too, so a late entry only adds weight and
// the fold stays the same in any order of arrival (State.weigh). Releases
// count apart, against MaxNodeReleaseWeight, so a node whose claims
// reached their weight can still release them.
package board
