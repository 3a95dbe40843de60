// Package usage counts what each of a node's agents does through it, per
// agent and per room: messages and their bytes, asks made and answered, the
// time from an ask to its answer, and the tokens and cost a client reports
// (never guessed: an agent whose client told nothing shows them as unknown).
//
// The counts are Prometheus series whose label values are bounded: the
// first MaxLabels agents (and rooms) seen get a label value of their own,
// every later one is counted under "other", so a flood of names cannot grow
// the registry. Snapshot gives the same counts, with a short history of
// messages per interval, for the dashboard.
package usage
