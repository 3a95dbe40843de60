// Package testnet runs Parley experiments: N nodes, a set of scenarios that
// drive rooms and break the network, and the figures they produce.
//
// Run starts a fresh set of nodes for each scenario, drives it, checks the
// outcome (every message delivered to every node, the same display order on
// every node) and measures:
//
//   - fanout: one node says messages at a steady rate; each delivery's
//     latency runs from the Say call on the sender to the event being stored
//     and visible (rooms.Manager.Subscribe) on a receiver.
//   - burst: every node says its share of a burst as fast as it can; the
//     share of deliveries within 5 s and the time until all is everywhere.
//   - partition: the nodes split in two halves that both keep talking, then
//     heal; the time from the heal until every node shows the same log.
//   - restart: a node crashes and reopens (replay time); a node away while
//     others say CatchUp events catches up (catch-up time); a room of BigRoom
//     events is reopened after a restart and its last 50 events read.
//   - churn: nodes crash and come back while one node keeps talking.
//   - discovery: every node provides a key in the DHT and looks up the keys
//     of the others (lookup latency).
//
// With Baseline set, the fanout workload also runs on raw go-libp2p-pubsub
// hosts (with GossipSub's defaults, and again publishing through the mesh
// as Parley does) and on an embedded NATS server, and Parley's figures are
// given as ratios to them.
//
// Nodes run in one of three modes: in-process (real libp2p hosts on
// 127.0.0.1 through node/nodetest), processes (each node a `parley up`
// process with its own home, driven through its local API), or network
// namespaces (processes, each in its own namespace, joined by veth pairs to
// a bridge in a hub namespace, with optional netem delay and loss; needs
// root).
//
// Everything is bounded: every wait has a deadline derived from the
// configuration, and Run tears down every node, process and namespace it
// made before it returns.
package testnet
