// Package ui serves the dashboard: one web page for the node's user, served
// by the node on loopback only (127.0.0.1, and [::1] at the same port where
// the host has it: see Listen), live through server-sent events.
//
// # Access
//
// Every request but /ui/proof, /ui/ticket and /ui/page needs the home's
// token (HOME/ui.token, random, made once), or for the page itself a
// one-time code: the page as /?c=CODE (the URL `parley ui` prints, see
// Server.TicketURL) or /?t=TOKEN, everything else with the header
// "Authorization: Bearer TOKEN", which the page adds to each of its
// requests. A request
// without the token, or with a wrong one, is answered 401 with a short text
// saying how to open the dashboard (Unauthorized; an empty body when its
// Host is not the dashboard's) and its connection closed, its body unread.
// The token never travels in a cookie, so another site cannot make the
// browser use it (no CSRF); on top of that a request with an Origin other
// than the page's, a cross-site Sec-Fetch-Site, or a Host that is not the
// loopback address it is served on is refused (403), and actions must be
// JSON. The one cross-site request taken is the browser opening the page
// itself as a top-level document (Sec-Fetch-Mode navigate, Sec-Fetch-Dest
// document, GET /?c=CODE, /?t=TOKEN or GET /ui/page): that is how it arrives from the
// file: page of `parley ui --open` or from a bookmark, and /ui/page may be
// reached so by going back to it from another site. The
// page is one document with its script and style inline, allowed by a
// Content-Security-Policy that names their hashes (computed by New from the
// embedded assets) and lets the page connect to its own origin only; it
// loads nothing from the network, so it works offline. The server holds at
// most MaxConns connections, with read, write and idle deadlines.
//
// # The token out of the address
//
// The address `parley ui` prints, /?c=CODE, carries a random one-time code
// (outstanding for TicketTTL, at most MaxTickets at once, kept in memory
// only): the page it opens posts the code to /ui/ticket, which answers the
// token once and forgets the code. So the address the browser's global
// history records, a bookmark of it, or a copy in a shared terminal's
// scrollback opens nothing: opened again it is answered 401 and
// TicketSpent.
//
// The page, having the token (from /ui/ticket, or opened at /?t=TOKEN),
// keeps it in its tab's sessionStorage
// and loads itself again at /ui/page (PagePath) with location.replace, so
// that the address bar, and the tab's history, hold the address without the
// token: a shared screen does not show it. (history.replaceState would
// change the address shown but leave the entry's original address, token
// and all, in the tab's history.) /ui/page is the same document, served
// without the token with the page's headers: it holds no data, since all
// the page shows comes through requests that carry the token, and it is
// refused to another Host or origin and cannot be framed. A reload of the
// tab loads it, and the page finds the token in the tab's sessionStorage.
// A tab that has none (/ui/page opened in a new tab, a bookmark of the
// address bar) shows Unauthorized and sends no request, not even for a
// proof. / itself still needs the token: served without it, the bare
// address would answer the page (200) where it answers 401 and how to open
// the dashboard, which the node's tests of an address without the token,
// with a browser and without, hold it to; a new route keeps / as it was
// and holds to it only the page's own tab, which knows the token.
//
// What is left: the tab's sessionStorage
// can be read by any page of the origin loaded in that tab: a program that
// holds the port while the node is down, when the tab is reloaded or
// restored then, serves its own page at /ui/page, which reads it, as a
// reload of /?t=TOKEN sent it the token before. An address of /?t=TOKEN,
// made by hand from HOME/ui.token, still opens the page, and the browser's
// history records it.
//
// The page sends the token only to a server that has just shown it knows
// it: before the stream and before each action it asks /ui/proof with a
// random nonce and checks the answer (Proof) with WebCrypto. A program that
// took the port while the node was down cannot answer, and gets nothing.
//
// # Endpoints
//
//	GET  /?c=CODE             the page, which changes CODE for the token and moves to /ui/page
//	GET  /?t=TOKEN            the page, which moves to /ui/page
//	POST /ui/ticket           no token: {"code":CODE} answered {"token":TOKEN} once
//	GET  /ui/page             no token: the page, which finds the token in its tab
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
