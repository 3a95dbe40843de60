// Package ui serves the dashboard: one web page for the node's user, served
// by the node on 127.0.0.1 only, live through server-sent events.
//
// # Access
//
// Every request but /ui/proof needs the home's token (HOME/ui.token,
// random, made once): the page itself as /?t=TOKEN (the URL `parley ui`
// prints), everything else with the header "Authorization: Bearer TOKEN",
// which the page adds to each of its requests. A request without the token,
// or with a wrong one, is answered 401 with a short text saying how to open
// the dashboard (Unauthorized; an empty body when its Host is not the
// dashboard's) and its connection closed, its body unread. The token never travels in a cookie,
// so another site cannot make the browser use it (no CSRF); on top of that a
// request with an Origin other than the page's, a cross-site Sec-Fetch-Site,
// or a Host that is not the loopback address it is served on is refused
// (403), and actions must be JSON. The one cross-site request taken is the
// browser opening the page itself as a top-level document (Sec-Fetch-Mode
// navigate, Sec-Fetch-Dest document, GET /?t=TOKEN): that is how it arrives
// from the file: page of `parley ui --open` or from a bookmark. The page is
// one document with its script and style inline, allowed by a
// Content-Security-Policy that names their hashes and lets the page connect
// to its own origin only; it loads nothing from the network, so it works
// offline. The server holds at most MaxConns connections, with read, write
// and idle deadlines.
//
// The page sends the token only to a server that has just shown it knows
// it: before the stream and before each action it asks /ui/proof with a
// random nonce and checks the answer (Proof) with WebCrypto. A program that
// took the port while the node was down cannot answer, and gets nothing.
//
// # Endpoints
//
//	GET  /?t=TOKEN            the page
//	GET  /ui/stream           server-sent events (below)
//	GET  /ui/state            the panels, as one JSON object
//	GET  /ui/proof?n=NONCE    no token: Proof of the token for NONCE
//	…                         the local API routes the node allows (Config.Actions)
//
// # Stream
//
// Each message of /ui/stream is an SSE event with a JSON data line:
//
//	event: hello   {"node":…,"handle":…,"max_events":N}
//	event: rooms   [RoomInfo]                       when the room list changes
//	event: events  {"room":…,"events":[Event],"skipped":K}
//	event: panel   {"name":…,"data":…}              when a panel changes
//
// events carries a room's new events in the order the node stored them; when
// more than N arrived at once (a flood), only the last N are sent and
// skipped counts the others. The page keeps the last N of each room and
// shows the count of those it dropped.
package ui
