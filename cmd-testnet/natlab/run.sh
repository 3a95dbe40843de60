#!/bin/bash
# Needs the topology of topology.sh and a parley binary at $PB (default /tmp/parley: go build -o /tmp/parley ./cmd/parley).
# REACH=auto leaves reachability to AutoNAT; the default forces private on the NATed nodes.
# runs R, A, B in the netns topology; A asks B (peer ID only), B approves, A opens a room, invites B, says; measures
set -e
PB=${PB:-/tmp/parley}; D=/tmp/pnh; rm -rf $D; mkdir -m 700 $D
mk() { mkdir -m 700 $D/$1; cat > $D/$1/config <<CFG
handle = $1
mdns = false
port_map = false
$2
CFG
}
mk r "relay_service = open
reachability = public"
ip netns exec pn-r $PB --home $D/r up -d --listen /ip4/5.0.0.10/tcp/4190 --listen /ip4/5.0.0.10/udp/4190/quic-v1 >/dev/null 2>&1
R=$($PB --home $D/r id --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["peer_id"])')
RADDR=/ip4/5.0.0.10/tcp/4190/p2p/$R
for n in a b; do mk $n "bootstrap = $RADDR
relay = $RADDR
reachability = ${REACH:-private}"; done
t0=$(date +%s.%N)
ip netns exec pn-b $PB --home $D/b up -d --listen /ip4/0.0.0.0/tcp/4190 --listen /ip4/0.0.0.0/udp/4190/quic-v1 >/dev/null 2>&1
ip netns exec pn-a $PB --home $D/a up -d --listen /ip4/0.0.0.0/tcp/4190 --listen /ip4/0.0.0.0/udp/4190/quic-v1 >/dev/null 2>&1
B=$($PB --home $D/b id --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["peer_id"])')
A=$($PB --home $D/a id --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["peer_id"])')
# wait for B's relay address
for i in $(seq 1 100); do $PB --home $D/b id | grep -q p2p-circuit && break; sleep 0.1; done
echo "B relay addr after $(echo "$(date +%s.%N) - $t0" | bc) s"
for i in $(seq 1 50); do $PB --home $D/a contact request $B --note hi >/dev/null 2>&1 && break; sleep 0.2; done
for i in $(seq 1 50); do $PB --home $D/b contact approve $A >/dev/null 2>&1 && break; sleep 0.2; done
for i in $(seq 1 50); do $PB --home $D/a contact list | grep -q active && break; sleep 0.2; done
echo "contacts after $(echo "$(date +%s.%N) - $t0" | bc) s"
ROOM=$($PB --home $D/a room create plans --json | python3 -c "import json,sys; d=json.load(sys.stdin); print(d.get(\"room_id\") or d.get(\"id\"))")
$PB --home $D/a room invite $ROOM $B >/dev/null
$PB --home $D/a room say $ROOM "hello across NATs" >/dev/null
for i in $(seq 1 200); do $PB --home $D/b room log $ROOM 2>/dev/null | grep -q "hello across NATs" && break; sleep 0.05; done
echo "first message at B after $(echo "$(date +%s.%N) - $t0" | bc) s (from A's up)"
for i in $(seq 1 100); do $PB --home $D/a peers | grep $B | grep -q direct && break; sleep 0.1; done
$PB --home $D/a peers | grep "$B" | cut -c1-250
$PB --home $D/b status | sed -n '/reachability/,/addrs/p'
for n in a b r; do $PB --home $D/$n down >/dev/null 2>&1 || true; done
