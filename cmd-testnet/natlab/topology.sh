#!/bin/bash
# Needs root, iproute2 and nftables (apt-get install nftables). Usage: topology.sh [cone|symmetric]; then run.sh.
# NAT topology: inet (bridge, 5.0.0.0/24) with R at 5.0.0.10; routers ra/rb (wan 5.0.0.1/.2) masquerading lan 192.168.1.0/24 (A) and 192.168.2.0/24 (B)
set -e
P=pn
MODE=${1:-cone}   # cone, symmetric, or down (delete the namespaces)
cleanup() { for n in inet r ra rb a b; do ip netns del $P-$n 2>/dev/null || true; done; }
cleanup
[ "$MODE" = down ] && exit 0
for n in inet r ra rb a b; do ip netns add $P-$n; ip -n $P-$n link set lo up; done
ip -n $P-inet link add br0 type bridge; ip -n $P-inet link set br0 up
link() { # ns1 if1 ns2 if2
  ip -n $P-$1 link add $2 type veth peer name $4 netns $P-$3
  ip -n $P-$1 link set $2 up; ip -n $P-$3 link set $4 up; }
link inet vr r eth0; ip -n $P-inet link set vr master br0
link inet va ra wan; ip -n $P-inet link set va master br0
link inet vb rb wan; ip -n $P-inet link set vb master br0
ip -n $P-r addr add 5.0.0.10/24 dev eth0
ip -n $P-ra addr add 5.0.0.1/24 dev wan
ip -n $P-rb addr add 5.0.0.2/24 dev wan
link ra lan a eth0; link rb lan b eth0
ip -n $P-ra addr add 192.168.1.1/24 dev lan; ip -n $P-a addr add 192.168.1.2/24 dev eth0; ip -n $P-a route add default via 192.168.1.1
ip -n $P-rb addr add 192.168.2.1/24 dev lan; ip -n $P-b addr add 192.168.2.2/24 dev eth0; ip -n $P-b route add default via 192.168.2.1
for r in ra rb; do
  ip netns exec $P-$r sysctl -qw net.ipv4.ip_forward=1
  if [ "$MODE" = symmetric ]; then M="masquerade random"; else M="masquerade"; fi
  ip netns exec $P-$r nft -f - <<NFT
table ip nat {
  chain post {
    type nat hook postrouting priority 100;
    oifname "wan" $M
  }
}
table ip filter {
  chain lanfwd {
    type filter hook forward priority 0; policy drop;
    ct state established,related accept
    iifname "lan" accept
  }
  chain incoming {
    type filter hook input priority 0; policy drop;
    ct state established,related accept
    iifname "lan" accept
    iifname "lo" accept
  }
}
NFT
done
echo topology up
