"use strict";
(function () {
  // The token. The address `parley ui` prints is /?c=CODE, a one-time code
  // (the node served the page only because it is outstanding): the page
  // changes it for the token at /ui/ticket, which uses it up, so the
  // address the browser's history records opens nothing. /?t=TOKEN, the
  // token itself, opens the page too. Either way the page keeps the token
  // in this tab's sessionStorage, where it stays for a reload of the tab,
  // and loads itself again at /ui/page in its place (location.replace: a
  // new entry of the tab's history instead of the one that had the
  // address, which history.replaceState would keep as the entry's original
  // address), so that the address bar and the tab's history hold no code
  // or token. A tab opened at /ui/page without the token in its
  // sessionStorage (a new tab, a bookmark of the address bar) shows how to
  // open the dashboard and sends nothing.
  var token = "", q = null;
  var how = document.getElementById("notoken");
  function keep(tok) {
    try {
      sessionStorage.setItem("parley-ui-token", tok);
      location.replace("/ui/page");
    } catch (e) {
      // No sessionStorage: the address with the token opens the page,
      // which keeps it as long as it lives.
      location.replace("/?t=" + encodeURIComponent(tok));
    }
  }
  var sp = location.pathname === "/" ? new URLSearchParams(location.search) : null;
  var code = sp && sp.get("c");
  if (code) {
    fetch("/ui/ticket", { method: "POST", cache: "no-store", credentials: "omit",
      headers: { "Content-Type": "application/json" }, body: JSON.stringify({ code: code }) })
      .then(function (r) {
        return r.ok ? r.json() : r.text().then(function (t) { throw new Error(t); });
      })
      .then(function (v) { keep(v.token); })
      .catch(function (e) {
        history.replaceState(null, "", "/ui/page");
        how.textContent = e.message || String(e);
        document.body.replaceChildren(how);
        how.hidden = false;
      });
    return;
  }
  try {
    q = sp && sp.get("t");
    if (q) {
      sessionStorage.setItem("parley-ui-token", q);
      location.replace("/ui/page");
      return;
    }
    token = sessionStorage.getItem("parley-ui-token") || "";
  } catch (e) {
    // No sessionStorage: the token lives as long as the page, and the
    // address, stripped of it, opens the page without it.
    token = q || "";
  }
  if (location.pathname + location.search + location.hash !== "/ui/page") history.replaceState(null, "", "/ui/page");
  if (!token) {
    document.body.replaceChildren(how);
    how.hidden = false;
    return;
  }
  var S = { node: "", handle: "", max: 200, rooms: [], events: {}, dropped: {}, unread: {}, sel: "", panels: {}, seen: {}, open: {},
    lat: [], latN: 0 };
  // For tests and the curious: S.seen[eventID] is when the page got an event
  // it holds (ms; an event a new stream sends again keeps its time); S.lat
  // the last 1000 delays from an event's time to the page (ms; of events new
  // to the page), S.latN how many were measured.
  window.parley = S;
  var $ = function (id) { return document.getElementById(id); };

  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) {
      if (k === "text") e.textContent = attrs[k];
      else if (k === "cls") e.className = attrs[k];
      else if (k.slice(0, 2) === "on") e.addEventListener(k.slice(2), attrs[k]);
      else e.setAttribute(k, attrs[k]);
    }
    (kids || []).forEach(function (c) { if (c) e.appendChild(typeof c === "string" ? document.createTextNode(c) : c); });
    return e;
  }
  function fill(node, kids) { node.replaceChildren.apply(node, kids); }
  // bdi holds a text another node wrote (a message, a note, a handle…): a
  // bidi-isolated element of its own, so that no control or right-to-left
  // character in it reorders the text drawn around it.
  function bdi(text, cls) { return el("bdi", cls ? { cls: cls, text: text } : { text: text }); }

  // A text another node wrote may be 64 KiB of one run with no space, which
  // a browser wraps in time that grows with the square of the run's length
  // (Chromium: 21 s for one 64 KiB run in a 570 px column, minutes in a
  // narrow one, and the page answers nothing meanwhile).
  // So a text is drawn in pieces: each ends after its last space, tab or
  // line break within cut characters, with a <wbr> between pieces (always a
  // break opportunity, where a space may not be one: U+2060 after it, a
  // combining mark…); a piece with no such character there is cut at cut
  // characters and may break anywhere. No run is then longer than cut, and
  // drawing takes time in proportion to the text. Text with spaces is drawn
  // as before: each <wbr> follows a space.
  var cut = 256;
  function pieces(node, t) {
    var gap = function (k) { var c = t.charCodeAt(k); return c === 32 || c === 9 || c === 10 || c === 13; };
    var inRun = false; // the piece before was cut in the middle of a run
    for (var i = 0, j; i < t.length; i = j) {
      j = Math.min(t.length, i + cut);
      var k = j - 1;
      while (k >= i && !gap(k)) k--;
      if (k >= i && j < t.length) j = k + 1;
      else if (k < i && j < t.length && j - 1 > i && (t.charCodeAt(j) & 0xFC00) === 0xDC00) j--; // a surrogate pair stays whole
      var part = t.slice(i, j), run = k < i && (inRun || j < t.length);
      if (i) node.appendChild(document.createElement("wbr"));
      node.appendChild(run ? el("span", { cls: "run", text: part }) : document.createTextNode(part));
      inRun = k < i && j < t.length;
    }
    return node;
  }
  // shown is a text another node wrote as the page draws it: a bdi of its
  // pieces, and for a text over clip.chars characters or clip.lines lines,
  // its start and a button that shows it all (and back). Drawing every
  // event of a room whole costs up to 200 times 64 KiB of layout. key names
  // the text: one shown all stays so when its list is drawn again.
  // whole, when given, says the text is the start of a longer one the node
  // clipped: whole.bytes its size, whole.get() a promise of it all, asked
  // for when the user first wants it shown all.
  var clip = { chars: 2000, lines: 40 };
  function shown(key, text, cls, whole) {
    var b = el("bdi", cls ? { cls: cls } : {}), end = Math.min(text.length, clip.chars);
    for (var i = -1, n = 0; (i = text.indexOf("\n", i + 1)) >= 0 && i < end;) if (++n === clip.lines) { end = i; break; }
    if (end === text.length && !whole) return [pieces(b, text)];
    if (end < text.length && (text.charCodeAt(end) & 0xFC00) === 0xDC00) end--;
    var size = whole ? whole.bytes : enc.encode(text).length, more = el("button", { type: "button", cls: "more" });
    var all = whole ? null : text, asking = false;
    var draw = function () {
      var open = !!S.open[key] && all !== null;
      b.replaceChildren();
      pieces(b, open ? all : text.slice(0, end));
      more.textContent = open ? "show less" : "… show all (" + (size < 1024 ? size + " bytes" : Math.round(size / 1024) + " KiB") + ")";
    };
    more.addEventListener("click", function () {
      S.open[key] = !(S.open[key] && all !== null); // what the button offered
      if (S.open[key] && all === null) {
        if (asking) return;
        asking = true; more.textContent = "… loading";
        whole.get().then(function (t) { all = t; }, function (err) { S.open[key] = false; showError(err.message); })
          .then(function () { asking = false; draw(); });
        return;
      }
      draw();
    });
    draw();
    return [b, " ", more];
  }
  function short(id) { return id && id.length > 14 ? id.slice(0, 6) + "…" + id.slice(-6) : id || ""; }
  // peer is a node as people read it: "here", the name the node gives it
  // (its handle; handle~SUFFIX when it reads like another known node's
  // handle, this node's, "here" or "you") when the node knows it, else a
  // short peer ID.
  function peer(id) {
    if (!id) return "";
    if (id === S.node) return "here";
    var n = (S.panels.names || {})[id];
    return n && fold(n) !== "here" ? n : short(id);
  }
  function addr(a) { // NAME@PEER → NAME@handle, peer:PEER → peer:handle
    if (!a) return "";
    var i = a.indexOf("@");
    if (i >= 0) return a.slice(0, i) + "@" + peer(a.slice(i + 1));
    return a.slice(0, 5) === "peer:" ? "peer:" + peer(a.slice(5)) : peer(a);
  }
  // roomOf is the room this node is in with that ID, if any.
  function roomOf(id) { return S.rooms.filter(function (x) { return x.room_id === id; })[0]; }
  // fold is a text as it is compared for look-alikes: NFKC, case-folded,
  // without format and other invisible characters (U+200B, U+2060, U+FEFF,
  // bidi controls…), whitespace collapsed.
  function fold(s) {
    var strip = function (t) { return t.normalize("NFKC").replace(/[\p{Cf}\p{Default_Ignorable_Code_Point}]/gu, ""); };
    return strip(strip(String(s || ""))).toUpperCase().toLowerCase().replace(/\s+/g, " ").trim();
  }
  // creatorName is another node as a room label reads it: its handle as
  // this node knows it, or a short peer ID when there is none or it reads
  // like this node ("you", "here", this node's handle: the node says which,
  // look-alike letters of other scripts included, in like_self).
  function creatorName(id) {
    var n = (S.panels.names || {})[id], k = fold(n);
    return !n || (S.panels.like_self || []).indexOf(id) >= 0 || k === "you" || k === "here" || k === fold(S.handle) ? short(id) : n;
  }
  // A room's label is its name; a room another node created (or one whose
  // creator the page does not know) also shows, in an element of its own
  // that no name can make, who created it; and the start of its ID when
  // another room's label would read the same once folded. A room this node
  // created shows no creator at all, so a name cannot pass for one.
  function labelParts(id, name, creator, known) {
    var by = creator === S.node ? "" : creator ? "by " + creatorName(creator) : known ? "by ?" : "not joined";
    return { id: id, name: name || short(id), by: by, creator: creator };
  }
  function labelKey(p) { return fold(p.name) + "\n" + fold(p.by); }
  var keys = { rooms: null, names: null, like: null, node: null, handle: null, n: {} };
  // shared reports whether two rooms here have labels that read the same.
  function shared(p) {
    if (keys.rooms !== S.rooms || keys.names !== S.panels.names || keys.like !== S.panels.like_self || keys.node !== S.node || keys.handle !== S.handle) {
      keys = { rooms: S.rooms, names: S.panels.names, like: S.panels.like_self, node: S.node, handle: S.handle, n: {} };
      S.rooms.forEach(function (x) { var k = labelKey(labelParts(x.room_id, x.name, x.creator, true)); keys.n[k] = (keys.n[k] || 0) + 1; });
    }
    return (keys.n[labelKey(p)] || 0) > 1;
  }
  function labelEl(p, withID) {
    var kids = [el("span", { cls: "rname", text: p.name })];
    if (p.by) kids.push(" ", el("span", { cls: "rby", text: p.by }));
    if (withID) kids.push(" ", el("span", { cls: "rid", text: p.id.slice(0, 8) }));
    return el("span", { cls: "rlabel",
      title: p.id + " · " + (p.creator === S.node ? "created by you" : p.creator ? "created by " + creatorName(p.creator) + " (" + p.creator + ")" : "creator unknown") }, kids);
  }
  // roomLabel is a room this node is in as people read it (an element).
  function roomLabel(r) {
    if (!r) return "";
    var p = labelParts(r.room_id, r.name, r.creator, true);
    return labelEl(p, shared(p));
  }
  // roomName labels a room by its ID (name and creator: what a list gave,
  // for a room this node is not in, whose label always has its ID).
  function roomName(id, name, creator) {
    var r = roomOf(id);
    return r ? roomLabel(r) : labelEl(labelParts(id, name, creator, false), true);
  }
  function until(t) {
    var d = new Date(t);
    if (isNaN(d)) return "";
    return d.toDateString() === new Date().toDateString() ? d.toLocaleTimeString() : d.toLocaleString();
  }
  function when(ms) { var d = new Date(ms); return d.toLocaleTimeString(); }
  function showError(msg) { $("error").textContent = msg || ""; }

  // The token goes only to a server that first proves it knows it: before
  // each request that carries it, the page sends a random nonce and checks
  // the answer, HMAC-SHA256(token, "parley-ui-proof\n" + port + "\n" +
  // nonce). While the node is down another program may take its port; it
  // cannot answer, so it gets neither the token nor the page's trust.
  var enc = new TextEncoder(), hmacKey = null;
  function Impostor(why) {
    this.impostor = true;
    this.message = "the program on " + location.host + " is not this node's dashboard (" + why +
      "): the page sends it nothing and shows nothing from it; run `parley ui` for the dashboard's address";
  }
  function prove() {
    if (!window.crypto || !crypto.subtle) return Promise.reject(new Impostor("this browser cannot check it here: no WebCrypto"));
    var n = new Uint8Array(32), nonce = "";
    crypto.getRandomValues(n);
    n.forEach(function (b) { nonce += (b < 16 ? "0" : "") + b.toString(16); });
    hmacKey = hmacKey || crypto.subtle.importKey("raw", enc.encode(token), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
    return fetch("/ui/proof?n=" + nonce, { cache: "no-store", credentials: "omit" }).then(function (r) {
      if (!r.ok) throw new Impostor("it answered HTTP " + r.status + " when asked to prove it knows the token");
      return r.text();
    }).then(function (t) {
      t = t.trim();
      if (!/^[0-9a-f]{64}$/.test(t)) throw new Impostor("its answer is not a proof");
      var sig = new Uint8Array(32);
      for (var i = 0; i < 32; i++) sig[i] = parseInt(t.slice(2 * i, 2 * i + 2), 16);
      return hmacKey.then(function (k) {
        return crypto.subtle.verify("HMAC", k, sig, enc.encode("parley-ui-proof\n" + (location.port || "80") + "\n" + nonce));
      });
    }).then(function (ok) { if (!ok) throw new Impostor("it does not know this page's token: another program, or the node since given a new token"); });
  }

  // pending holds when each request api sent (and not yet answered) was
  // sent: the status says when one waits long.
  var pending = {}, sent = 0;
  function api(method, path, body) {
    var n = ++sent;
    pending[n] = Date.now();
    return prove().then(function () { return fetch(path, {
      method: method,
      headers: { "Authorization": "Bearer " + token, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body)
    }); }).then(function (r) {
      return r.text().then(function (t) {
        var v = null;
        try { v = t ? JSON.parse(t) : null; } catch (e) { v = { error: t }; }
        if (!r.ok) throw new Error((v && v.error) || ("HTTP " + r.status));
        return v;
      });
    }).finally(function () { delete pending[n]; showStatus(); });
  }

  // Rendering is batched: at most once a frame, whatever the flood.
  var dirty = {};
  function mark(what) {
    if (!Object.keys(dirty).length) requestAnimationFrame(render);
    dirty[what] = true;
  }
  function render() {
    var d = dirty; dirty = {};
    if (d.rooms) renderRooms();
    if (d.events) renderEvents();
    for (var k in d) if (k.slice(0, 6) === "panel:") renderPanel(k.slice(6));
  }

  function renderRooms() {
    fill($("rooms"), S.rooms.map(function (r) {
      var n = S.unread[r.room_id] || 0;
      return el("li", { cls: r.room_id === S.sel ? "sel" : "", "data-room": r.room_id,
        onclick: function () { select(r.room_id); } },
        [roomLabel(r), n ? el("span", { cls: "badge", text: String(n) }) : null]);
    }));
  }

  function select(id) {
    S.sel = id; S.unread[id] = 0;
    // Opening a room the human is invited to is reading it: the
    // invitation is taken, and its row goes at the panel's next update.
    // Past the 50 rows shown (more), the node is asked whatever the rows hold.
    var inv = S.panels.invitations || {};
    if (inv.more || (inv.items || []).some(function (it) { return it.room === id; })) takeInvitation(id);
    $("reply_to").value = ""; $("replying").textContent = "";
    mark("rooms"); mark("events");
  }

  function eventNode(e) {
    var sys = e.kind !== "message" && e.kind !== "ask";
    var text = shown("event " + e.id, e.text, "text");
    if (e.kind === "create") text = ["created the room “"].concat(shown("event " + e.id, e.text), "”");
    else if (e.kind === "invite") text = ["invited ", bdi(e.to ? addr(e.to) : peer(e.target))];
    else if (e.kind === "join") text = ["joined"];
    else if (e.kind === "leave") text = e.target ? ["took ", bdi(peer(e.target)), " out"] : e.to ? ["took ", bdi(addr(e.to)), " out"] : ["left"];
    var kids = [el("span", { cls: "time", text: when(e.time) + " " }), bdi(addr(e.from), "from")];
    if (e.kind === "ask") kids.push(el("strong", {}, ["asks ", e.to ? bdi(addr(e.to)) : "the room", ": "]));
    if (e.reply_to) kids.push(el("span", { cls: "muted", text: "↪ " + short(e.reply_to) + " " }));
    kids.push(el("span", {}, text));
    if (!sys) kids.push(el("button", { text: "reply", onclick: function () { replyTo(e.id, e.room, e.from); } }));
    return el("li", { cls: sys ? "sys" : e.kind, "data-id": e.id }, kids);
  }

  function renderEvents() {
    var r = roomOf(S.sel);
    fill($("roomname"), [r ? roomLabel(r) : S.rooms.length ? "No room selected: pick one on the left" : "No room yet"]);
    $("roompurpose").textContent = r ? r.purpose || "" : "";
    renderMembers(r);
    var n = S.dropped[S.sel] || 0;
    $("dropped").textContent = n ? n + " earlier events not shown (this page keeps the last " + S.max + ")" : "";
    var list = $("events"), evs = S.events[S.sel] || [];
    // A room just opened shows its latest events; one already shown stays
    // at its end if it was there.
    var atBottom = shownRoom !== S.sel || list.scrollTop + list.clientHeight >= list.scrollHeight - 20;
    // Only what is new is drawn: the events after the last one shown are
    // appended, and the oldest dropped, as long as the room is the same.
    var lastShown = list.lastElementChild && list.lastElementChild.getAttribute("data-id");
    var from = -1;
    if (shownRoom === S.sel && lastShown) {
      for (var i = evs.length - 1; i >= 0; i--) if (evs[i].id === lastShown) { from = i + 1; break; }
    }
    if (from < 0) fill(list, evs.map(eventNode));
    else {
      var frag = document.createDocumentFragment();
      evs.slice(from).forEach(function (e) { frag.appendChild(eventNode(e)); });
      list.appendChild(frag);
      while (list.children.length > evs.length) list.removeChild(list.firstElementChild);
    }
    shownRoom = S.sel;
    if (atBottom) toBottom(list);
  }
  // toBottom scrolls the list to its end, and again at each next frame
  // until a frame finds it there with the same height (20 frames at most):
  // an entry is laid out only once it is near the screen (content-visibility
  // in app.css, so that opening a room of 200 long events lays out the few
  // in view), and takes its real height only then.
  function toBottom(list) {
    var frames = 0, h = -1;
    (function again() {
      var there = list.scrollTop + list.clientHeight >= list.scrollHeight - 1;
      if (there && list.scrollHeight === h || frames++ === 20) return;
      h = list.scrollHeight; list.scrollTop = h;
      requestAnimationFrame(again);
    })();
  }
  var shownRoom = "";

  // renderMembers shows the room's agents, and the nodes none of them is
  // of; the room's creator gets a button to take each of another node out
  // (an agent alone, or its whole node). A removal is undone by an invite.
  function renderMembers(r) {
    if (!r) { fill($("roommembers"), []); return; }
    var mine = r.creator === S.node, seen = {}, kids = [];
    var chip = function (member, label, button) {
      var c = el("span", { cls: "member", "data-member": member }, label);
      if (button) c.appendChild(btn(button, function () { return act("/v1/rooms/" + encodeURIComponent(r.room_id) + "/remove", { peer_id: member }); }));
      kids.push(c);
    };
    (r.agents || []).forEach(function (a) {
      var node = a.slice(a.lastIndexOf("@") + 1);
      seen[node] = true;
      chip(a, [bdi(addr(a))], mine && node !== S.node ? "remove" : "");
    });
    (r.members || []).forEach(function (n) {
      if (n === S.node) return;
      chip(n, ["node ", bdi(peer(n)), seen[n] ? "" : " (no agent)"], mine ? "remove node" : "");
    });
    fill($("roommembers"), kids);
  }

  function replyTo(id, room, from) {
    if (room !== S.sel) select(room);
    $("reply_to").value = id;
    fill($("replying"), ["replying to ", bdi(addr(from)), " (" + short(id) + ") "]);
    $("replying").appendChild(el("button", { type: "button", text: "cancel", onclick: function () {
      $("reply_to").value = ""; $("replying").textContent = "";
    } }));
    $("text").focus();
  }

  // A new stream (after a reconnect) sends each room's last events again.
  // At its hello, prior takes the events the page held (S.seen: ID → when
  // it got them) and stale the rooms it held events of: a stale room's
  // first events from the new stream replace its list, and only the events
  // the page did not hold are new (counted unread, measured). Before, the
  // hello zeroed the unread counts and every event sent again counted as
  // unread: after a node restart, a room the user had read showed its whole
  // history unread.
  var prior = {}, stale = {};
  function addEvents(m) {
    if (stale[m.room]) { delete stale[m.room]; S.events[m.room] = []; S.dropped[m.room] = 0; }
    var list = S.events[m.room] || (S.events[m.room] = []);
    var now = Date.now(), fresh = 0;
    m.events.forEach(function (e) {
      var had = prior[e.id] || S.seen[e.id];
      S.seen[e.id] = had || now; list.push(e);
      if (had) return;
      S.lat[S.latN++ % 1000] = now - e.time;
      if (e.kind === "message" || e.kind === "ask") fresh++;
    });
    S.dropped[m.room] = (S.dropped[m.room] || 0) + (m.skipped || 0);
    if (list.length > S.max) {
      S.dropped[m.room] += list.length - S.max;
      list.splice(0, list.length - S.max).forEach(function (e) { delete S.seen[e.id]; });
    }
    if (m.room !== S.sel) {
      S.unread[m.room] = (S.unread[m.room] || 0) + fresh;
      mark("rooms");
    } else mark("events");
    // No room is selected for the user: the post box writes to the room
    // they picked, never to one that arrived (perhaps a look-alike).
  }

  function row(cells) { return el("tr", {}, cells.map(function (c) { return typeof c === "object" && c ? el("td", {}, [c]) : el("td", { text: c === null || c === undefined ? "" : String(c) }); })); }
  // head is a table's first row; widths, when given, set its columns'
  // (the panels' tables lay out fixed, from this row: a long text wraps in
  // its column and never pushes the buttons out of view).
  function head(cells, widths) {
    return el("tr", {}, cells.map(function (c, i) {
      var th = el("th", { text: c });
      if (widths && widths[i]) th.style.width = widths[i];
      return th;
    }));
  }
  // remote is a text another node wrote, drawn in pieces in a bdi of its
  // own.
  function remote(t, cls) { return pieces(el("bdi", cls ? { cls: cls } : {}), String(t || "")); }
  // btn is a button that calls f; while the promise f returns (an action)
  // is under way, the button is disabled.
  function btn(label, f) {
    var b = el("button", { text: label });
    b.addEventListener("click", function () {
      var p = f();
      if (p && p.finally) { b.disabled = true; p.finally(function () { b.disabled = false; }); }
    });
    return b;
  }
  // act posts an action; its promise gives the node's answer, or undefined
  // when it failed (the error is shown). The same action (path and body)
  // asked again while it is under way is not sent again: it gets the
  // promise of the one under way. Before, a double click on a button, or
  // one on a button the panel drew again meanwhile, sent it twice.
  var acting = {}; // path + body → the promise of the action under way
  function act(path, body) {
    var key = path + "\n" + JSON.stringify(body);
    if (acting[key]) return acting[key];
    showError("");
    var p = acting[key] = api("POST", path, body).catch(function (err) { showError(err.message); });
    p.finally(function () { delete acting[key]; });
    return p;
  }
  // takeInvitation takes the human's invitations to room from its inbox.
  function takeInvitation(room) { return act("/v1/agents/human/invitations/take", { room: room }); }

  // The asks owed the human are drawn only when they change: an entry is
  // kept by its ask's ID and drawn again when its ask changed, or, its
  // sender and room label alone, when the labels did (labelGen counts the
  // changes of room labels and names). A room's new events change the room
  // list, never these. The node sends askShown of them in the order they
  // arrived, taken by turns of the asking nodes (each one's earliest before
  // any node's later ones, so one node asking often hides no other), their
  // texts clipped (text_bytes: the whole text's size, read from the node
  // when the user asks to see it all), and how many more it owes.
  var askShown = 50, labelGen = 0, owed = {}; // ask ID → { sig, gen, li, from, room }
  var owedNone = el("li", { cls: "muted", text: "nothing" }), owedMore = el("li", { cls: "muted", "data-more": "" });
  function askEntry(it, sig) {
    var whole = it.text_bytes ? { bytes: it.text_bytes, get: function () {
      return api("GET", "/v1/events/" + encodeURIComponent(it.id)).then(function (e) { return e.text; });
    } } : null;
    var o = { sig: sig, from: el("span", {}), room: el("span", {}) };
    askLabels(o, it);
    o.li = el("li", { "data-ask": it.id }, [o.from].concat(shown("ask " + it.id, it.text, "text", whole), " ",
      el("span", { cls: "muted" }, ["in ", o.room, " "]),
      btn("reply", function () { replyTo(it.id, it.room, it.from); })));
    return o;
  }
  function askLabels(o, it) {
    o.gen = labelGen;
    fill(o.from, [bdi(addr(it.from), "from")]);
    fill(o.room, [roomName(it.room, it.room_name, it.room_creator)]);
  }
  // roomsKey is what the room labels are drawn from in the room list.
  function roomsKey(rs) { return JSON.stringify(rs.map(function (r) { return [r.room_id, r.name, r.creator]; })); }
  var labelsOf = "";

  var panels = {
    health: function (h) {
      var p = (h || {}).store_problem || "";
      $("alert").hidden = !p;
      $("alert").textContent = p ? "Store refusing writes: " + p : "";
    },
    human: function (h) {
      h = h || {};
      panelError("human", h.error);
      var items = (h.asks || []).slice(0, askShown), more = (h.more || 0) + Math.max(0, (h.asks || []).length - askShown);
      var next = {}, kids = items.map(function (it) {
        var o = owed[it.id], sig = JSON.stringify(it);
        if (!o || o.sig !== sig) o = askEntry(it, sig);
        else if (o.gen !== labelGen) askLabels(o, it);
        next[it.id] = o;
        return o.li;
      });
      owed = next;
      if (!kids.length) kids.push(owedNone);
      if (more) {
        var t = "… and " + more + " more (shown: each asking node's earliest, in fair shares)";
        if (owedMore.textContent !== t) owedMore.textContent = t;
        kids.push(owedMore);
      }
      var list = $("human");
      if (list.children.length !== kids.length || kids.some(function (k, i) { return list.children[i] !== k; })) fill(list, kids);
    },
    agents: function (as) {
      var mod = S.panels.moderation; // present when the node has moderation
      var rule = function (address) { return (mod || []).filter(function (r) { return r.agent === address; })[0] || {}; };
      var cols = ["agent", "state", "working on", "owes", "waits on"].concat(mod ? [""] : []);
      fill($("agents"), [head(cols, [null, "52px", null, "40px", null, "124px"])].concat((as || []).map(function (a) {
        var cells = [remote(a.address ? addr(a.address) : a.agent), el("span", { cls: a.state, text: a.state }), remote(a.working_on),
          a.owed === null || a.owed === undefined ? "" : String(a.owed),
          el("span", {}, (a.waiting_on || []).reduce(function (l, w, i) { return l.concat(i ? ", " : "", remote(addr(w))); }, []))];
        if (mod) {
          var r = rule(a.address), acts = el("span", { cls: "nowrap" });
          acts.appendChild(r.muted ? btn("unmute", function () { return act("/v1/moderation/unmute", { agent: a.address }); })
            : btn("mute", function () { return act("/v1/moderation/mute", { agent: a.address }); }));
          if (a.local) acts.appendChild(r.killed ? btn("revive", function () { return act("/v1/moderation/revive", { agent: a.agent }); })
            : btn("kill", function () { return act("/v1/moderation/kill", { agent: a.agent }); }));
          cells.push(acts);
        }
        var tr = row(cells);
        tr.setAttribute("data-agent", a.address || a.agent);
        return tr;
      })));
      if (!(as || []).length) $("agents").appendChild(el("caption", { cls: "muted", text: "no agent is alive here or at your contacts" }));
    },
    contacts: function (cs) {
      fill($("contacts"), [head(["peer", "handle", "state", ""], ["96px", null, "76px", "124px"])].concat((cs || []).map(function (c) {
        var acts = el("span", { cls: "nowrap" });
        if (c.state === "pending-in") {
          acts.appendChild(btn("approve", function () { return act("/v1/contacts/approve", { id: c.id }); }));
          acts.appendChild(btn("deny", function () { return act("/v1/contacts/deny", { id: c.id }); }));
        } else if (c.state === "active" || c.state === "pending-out") {
          acts.appendChild(btn(c.state === "active" ? "revoke" : "cancel", function () { return act("/v1/contacts/revoke", { peer_id: c.peer_id }); }));
        }
        // The node's name for the peer: a stranger that asks under a
        // contact's handle shows with its peer ID's tail, not as the
        // contact. Never the handle as the node told it: it may hold
        // characters that show nothing ("bob\u3164" reads as "bob"), which
        // the name shows escaped.
        var name = c.name || (S.panels.names || {})[c.peer_id] || short(c.peer_id);
        var r = row([short(c.peer_id), el("span", {}, [remote(name)].concat(c.note ? [" — ", remote(c.note, "note")] : [])), c.state, acts]);
        r.setAttribute("data-peer", c.peer_id);
        return r;
      })));
    },
    names: function () { shownRoom = ""; mark("events"); mark("rooms"); renderPanel("human"); renderPanel("invitations"); renderPanel("invites"); renderPanel("agents"); renderPanel("audit"); renderPanel("board"); renderPanel("moderation"); },
    // The board: each claim (the paths a holder claimed at once, its note
    // sent once) a row per path, the holder, until when and the note
    // beside them all. The node sends at most 100 paths, this node's
    // agents' first, and counts the rest (board_more).
    board: function (cs) {
      $("board-panel").hidden = false;
      var rows = [head(["path", "holder", "until", "note"], [null, null, "76px", null])];
      (cs || []).forEach(function (c) {
        (c.paths || []).forEach(function (p, i) {
          var r = i ? row([remote(p)]) : row([remote(p), remote(addr(c.holder)), until(c.expires), remote(c.note)]);
          if (!i) for (var k = 1; k < 4; k++) r.cells[k].rowSpan = c.paths.length;
          r.setAttribute("data-path", p);
          rows.push(r);
        });
      });
      fill($("board"), rows);
      var more = S.panels.board_more || 0;
      if (more) $("board").appendChild(el("caption", { cls: "muted", text: "… and " + more.toLocaleString("en-US") + " more: parley board in a project's folder lists its claims" }));
      else if (!(cs || []).length) $("board").appendChild(el("caption", { cls: "muted", text: "nobody holds anything on the board" }));
    },
    board_more: function () { renderPanel("board"); },
    // The invitations in the human's inbox, as `parley inbox` lists them:
    // who invited, into which room (its purpose), when, and the commands
    // that read and leave it (the node is in the room already: reading it
    // is taking the invitation, as `parley room log` and opening the room
    // here do; "dismiss" takes it without opening the room). The oldest
    // come first.
    invitations: function (v) {
      v = v || {};
      var its = v.items || [];
      panelError("invitations", v.error);
      $("invitations-panel").hidden = !its.length && !v.error;
      fill($("invitations"), [head(["room", "from", "when", "read it / leave it", ""], [null, null, "64px", null, "124px"])].concat(its.map(function (it) {
        var room = el("span", {}, [roomName(it.room, it.room_name, it.room_creator)].concat(it.purpose ? [" — ", remote(it.purpose, "note")] : []));
        var cmds = el("span", {}, [el("code", { text: "parley room log " + it.room }), "; ", el("code", { text: "parley room leave " + it.room })]);
        var acts = el("span", { cls: "nowrap" }, [
          btn("open", function () { select(it.room); }),
          btn("dismiss", function () { return takeInvitation(it.room); })]);
        var r = row([room, remote(addr(it.from)), when(it.time), cmds, acts]);
        r.setAttribute("data-invitation", it.id);
        r.setAttribute("data-room", it.room);
        return r;
      })));
      if (v.more) $("invitations").appendChild(el("caption", { cls: "muted", text: "… and " + v.more + " more: parley inbox lists them" }));
    },
    invites: function (ws) {
      $("invites-panel").hidden = !(ws || []).length;
      fill($("invites"), [head(["room", "from", "until", ""], [null, null, "76px", "124px"])].concat((ws || []).map(function (w) {
        var acts = el("span", { cls: "nowrap" }, [
          btn("accept", function () { return act("/v1/invites/accept", { id: w.id }); }),
          btn("decline", function () { return act("/v1/invites/decline", { id: w.id }); })]);
        var r = row([roomName(w.id, w.room_name), remote(peer(w.inviter)), until(w.expires), acts]);
        r.setAttribute("data-invite", w.id);
        return r;
      })));
    },
    org_offers: function (os) {
      $("org-panel").hidden = !(os || []).length;
      fill($("org_offers"), [head(["organisation", "you as", "from", "trusts", "until", ""], [null, null, null, null, "76px", "124px"])].concat((os || []).map(function (o) {
        var acts = el("span", { cls: "nowrap" }, [
          btn("accept", function () { return act("/v1/org/accept", { org: o.org }); }),
          btn("decline", function () { return act("/v1/org/decline", { org: o.org }); })]);
        var r = row([el("span", {}, [remote(o.name), " " + short(o.org)]), remote(o.handle), remote(peer(o.from)), (o.trusts || []).map(short).join(", "), until(o.expires), acts]);
        r.setAttribute("data-org", o.org);
        return r;
      })));
    },
    // The audit panel is {entries, error}: error says why the log does not
    // read (a damaged log: run `parley audit verify`), shown in red, so an
    // empty table never stands for a log that does not read.
    audit: function (v) {
      var es = Array.isArray(v) ? v : (v || {}).entries;
      panelError("audit", (v || {}).error);
      fill($("audit"), [head(["#", "time", "actor", "action", "subject"], ["40px", "64px"])].concat((es || []).slice().reverse().map(function (e) {
        var room = e.action.slice(0, 5) === "room." && roomOf(e.subject);
        return row([e.n, e.time.slice(11, 19), addr(e.actor), e.action, room ? roomLabel(room) : addr(e.subject)]);
      })));
    },
    usage: function (u) {
      u = u || { agents: [], recent: [] };
      var rec = u.recent || [], max = Math.max.apply(null, [1].concat(rec)), w = 300, h = 40;
      var pts = rec.map(function (v, i) { return (i * w / Math.max(rec.length - 1, 1)).toFixed(1) + "," + (h - v * h / max).toFixed(1); }).join(" ");
      $("spark").replaceChildren();
      var svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
      svg.setAttribute("width", w); svg.setAttribute("height", h); svg.setAttribute("viewBox", "0 0 " + w + " " + h);
      var pl = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
      pl.setAttribute("points", pts); pl.setAttribute("fill", "none"); pl.setAttribute("stroke", "#5b8bd0");
      svg.appendChild(pl); $("spark").appendChild(svg);
      $("spark").appendChild(el("div", { cls: "muted", text: "messages per " + (u.interval_seconds || 10) + " s, last " + rec.length }));
      var top = Math.max.apply(null, [1].concat((u.agents || []).map(function (a) { return a.messages; })));
      var unk = function (v, f) { return v === null || v === undefined ? "unknown" : (f ? f(v) : String(v)); };
      var tokens = function (a) {
        if (a.tokens_in === null && a.tokens_out === null) return "unknown";
        var cached = a.cache_read_tokens === null && a.cache_write_tokens === null ? "" :
          " (cache " + unk(a.cache_read_tokens) + " read, " + unk(a.cache_write_tokens) + " written)";
        return unk(a.tokens_in) + cached + " / " + unk(a.tokens_out);
      };
      fill($("usage"), [head(["agent", "msgs", "bytes", "asks", "answered", "avg", "tokens in/out", "cost"])].concat((u.agents || []).map(function (a) {
        var bar = el("span", { cls: "bar" }); bar.style.width = Math.round(40 * a.messages / top) + "px";
        var r = row([a.name, el("span", { cls: "nowrap" }, [bar, " " + a.messages]), a.bytes, a.asks_made, a.asks_answered,
          a.asks_answered ? a.answer_seconds_avg.toFixed(1) + " s" : "", tokens(a), unk(a.cost_usd, function (v) { return "$" + v.toFixed(4); })]);
        r.setAttribute("data-agent", a.name);
        return r;
      })));
      $("usage").appendChild(el("caption", { cls: "muted", text: "tokens and cost as the agents' clients reported them; unknown: never reported" }));
    },
    limits: function (l) {
      $("limits").textContent = l && l.post_limit ? "each agent of this node may post " + l.post_limit + " messages and asks a minute (agent_post_limit)" : "no post limit";
    },
    moderation: function (rules) {
      $("moderation-panel").hidden = false;
      fill($("moderation"), [el("table", {}, [head(["agent", "", "by", "since"])].concat((rules || []).map(function (r) {
        var what = [r.muted ? "muted" + (r.muted_until ? " until " + new Date(r.muted_until).toLocaleTimeString() : "") : "", r.killed ? "killed" : ""]
          .filter(Boolean).join(", ");
        return row([addr(r.agent), what, addr(r.by), new Date(r.at).toLocaleTimeString()]);
      })))]);
      if (!(rules || []).length) $("moderation").appendChild(el("p", { cls: "muted", text: "no agent is muted or killed" }));
      renderPanel("agents");
    }
  };
  // panelError shows, in red above a panel, why its source does not read
  // (the node sends it in the panel's error), or hides the line.
  function panelError(name, msg) {
    var p = $(name + "-error");
    if (!p) return;
    p.hidden = !msg;
    if (p.textContent !== (msg || "")) p.textContent = msg || "";
  }
  function renderPanel(name) { if (panels[name]) panels[name](S.panels[name]); }

  function handle(ev, data) {
    var m = JSON.parse(data);
    if (ev === "hello") {
      // Another node on the token's port (not expected): what the page
      // held was not its.
      if (S.node && m.node !== S.node) { S.events = {}; S.dropped = {}; S.unread = {}; S.seen = {}; }
      S.node = m.node; S.handle = m.handle; S.max = m.max_events;
      // What the page holds, each with when it got it: a stream cut
      // before it sent a room's events again left them out of S.seen, not
      // out of the page.
      var held = {};
      for (var hr in S.events) (S.events[hr] || []).forEach(function (e) { var t = S.seen[e.id] || prior[e.id]; if (t) held[e.id] = t; });
      prior = held; S.seen = {}; stale = {};
      for (var r in S.events) stale[r] = true;
      labelGen++;
      $("who").textContent = m.handle + " · " + short(m.node);
      S.streams++;
    } else if (ev === "rooms") {
      // The list comes when what the page shows of a room changed (not
      // with each event: it carries no counts; unread counts are the
      // page's own, from `events`): the panels that show room labels are
      // drawn again only when a label may read otherwise.
      S.rooms = m; mark("rooms"); mark("events");
      var k = roomsKey(m);
      if (k !== labelsOf) { labelsOf = k; labelGen++; mark("panel:audit"); mark("panel:human"); mark("panel:invites"); mark("panel:invitations"); }
    } else if (ev === "events") {
      addEvents(m);
    } else if (ev === "panel") {
      if (m.name === "names" || m.name === "like_self") labelGen++;
      S.panels[m.name] = m.data; mark("panel:" + m.name);
    }
  }

  // The stream. A browser opens at most 6 connections to one host over
  // HTTP/1.1, and each page's stream holds one for as long as it is open:
  // before, six tabs of the dashboard took them all, and every other
  // request (a post, an approve, a seventh tab's stream) waited for ever
  // while the pages said "live". So a page whose tab is hidden (another
  // tab of its window shown, the window minimised) closes its stream after
  // grace ms, and opens a new one when it is shown again (which sends all
  // it shows again). A stream that brought nothing, not even the node's
  // keep-alive (every 15 s), for S.quiet ms is closed and opened again.
  // The status says "live" only while the stream is open and no request
  // the page sent has waited over slow ms for its answer; else what it
  // waits for. S.streams counts the streams that said hello.
  var conn = null; // the stream open or opening: { ctl: AbortController, live, since, last (ms) }
  var lastErr = null, retry = 0, pause = 0, grace = 5000, slow = 5000;
  S.quiet = 40000; S.streams = 0;
  var held = "the browser may be holding it: it opens at most 6 connections to the dashboard, and each dashboard tab shown holds one";
  function hidden() { return document.visibilityState === "hidden"; }
  function showStatus() {
    var now = Date.now(), t, oldest = now;
    for (var k in pending) oldest = Math.min(oldest, pending[k]);
    if (!conn) {
      t = hidden() ? "paused: this tab is not shown (it reconnects when it is)" :
        lastErr ? (lastErr.impostor ? "not connected: " : "offline: ") + lastErr.message + " (retrying)" : "connecting…";
    } else if (!conn.live) {
      t = "connecting…" + (now - conn.since > slow ? " (" + Math.round((now - conn.since) / 1000) + " s: " + held + ")" : "");
    } else if (now - oldest > slow) {
      t = "waiting: a request has had no answer for " + Math.round((now - oldest) / 1000) + " s (" + held + ")";
    } else t = "live";
    if ($("status").textContent !== t) $("status").textContent = t;
  }
  function connect() {
    clearTimeout(retry); retry = 0;
    if (conn || hidden()) { showStatus(); return; }
    var c = conn = { ctl: new AbortController(), live: false, since: Date.now(), last: 0 };
    showStatus();
    prove().then(function () {
      if (conn !== c) throw new Error("closed");
      return fetch("/ui/stream", { headers: { "Authorization": "Bearer " + token }, signal: c.ctl.signal });
    }).then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status + (r.status === 401 ? ": the token is wrong; run `parley ui` for the address" : ""));
      c.live = true; c.last = Date.now(); lastErr = null;
      showStatus();
      // The stream is read a line at a time, and each read is looked at
      // once: a block of 200 events of 64 KiB each (13 MB) may arrive in
      // hundreds of reads, and searching the whole block again at each
      // read took Chromium 1.3 s for reads of 64 KiB, 7 s for 16 KiB.
      var reader = r.body.getReader(), dec = new TextDecoder(), part = [], ev = "message", data = [];
      var line = function (l) {
        if (l === "") {
          if (data.length) handle(ev, data.join("\n"));
          ev = "message"; data = [];
        } else if (l.slice(0, 6) === "event:") ev = l.slice(6).trim();
        else if (l.slice(0, 5) === "data:") data.push(l.slice(l.charAt(5) === " " ? 6 : 5));
      };
      function pump() {
        return reader.read().then(function (x) {
          if (x.done) throw new Error("stream ended");
          if (conn !== c) throw new Error("closed");
          c.last = Date.now();
          var s = dec.decode(x.value, { stream: true }), from = 0, i;
          while ((i = s.indexOf("\n", from)) >= 0) {
            part.push(s.slice(from, i)); from = i + 1;
            var l = part.join(""); part = [];
            line(l);
          }
          if (from < s.length) part.push(s.slice(from));
          return pump();
        });
      }
      return pump();
    }).catch(function (err) {
      if (conn !== c) return; // closed on purpose
      conn = null; lastErr = err;
      c.ctl.abort();
      showStatus();
      retry = setTimeout(connect, 2000);
    });
  }
  document.addEventListener("visibilitychange", function () {
    clearTimeout(pause); pause = 0;
    if (!hidden()) { connect(); return; }
    pause = setTimeout(function () {
      pause = 0;
      if (!hidden() || !conn) return;
      var c = conn; conn = null;
      c.ctl.abort();
      showStatus();
    }, grace);
  });
  setInterval(function () {
    if (conn && conn.live && Date.now() - conn.last > S.quiet) conn.ctl.abort(new Error("nothing came from the node for " + Math.round(S.quiet / 1000) + " s"));
    showStatus();
  }, 1000);

  // busy runs a form's action: while it is under way the form's submit
  // button is disabled and its submits are ignored (before, a double click
  // on Post, or Enter pressed twice while the node answered, posted the
  // text twice).
  function busy(form, f) {
    if (form.busy) return;
    var p = f();
    if (!p) return;
    var b = form.querySelector("button[type=submit]");
    form.busy = true; b.disabled = true;
    p.finally(function () { form.busy = false; b.disabled = false; });
  }
  $("post").addEventListener("submit", function (e) {
    e.preventDefault();
    busy($("post"), function () {
      var text = $("text").value, rt = $("reply_to").value;
      if (!S.sel) { showError("pick a room on the left first"); return; }
      if (!text.trim()) return;
      var p = rt ? act("/v1/agents/human/reply", { message_id: rt, text: text }) : act("/v1/agents/human/say", { room: S.sel, text: text });
      return p.then(function (v) {
        if (!v) return;
        // What the user wrote meanwhile stays.
        if ($("text").value === text) $("text").value = "";
        if ($("reply_to").value === rt) { $("reply_to").value = ""; $("replying").textContent = ""; }
      });
    });
  });
  $("text").addEventListener("keydown", function (e) {
    // The Enter that ends an input method's composition (Japanese, Chinese,
    // Korean…) chooses the characters composed: it posts nothing (before,
    // it posted the half-written text).
    if (e.isComposing || e.keyCode === 229) return;
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); $("send").click(); }
  });
  $("invite").addEventListener("submit", function (e) {
    e.preventDefault();
    busy($("invite"), function () {
      var m = $("member").value.trim();
      if (!S.sel) { showError("pick a room on the left first"); return; }
      if (!m) return;
      return act("/v1/agents/human/invite", { room: S.sel, member: m }).then(function (v) { if (v && $("member").value.trim() === m) $("member").value = ""; });
    });
  });
  connect();
})();
