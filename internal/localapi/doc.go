// Package localapi is the node's local API: HTTP and JSON over a unix socket
// (HOME/parley.sock, mode 0600), served by the node and used by the CLI and by
// `parley mcp`.
//
// Every response is JSON. Errors are {"error": "...", "code": "..."} with a
// 4xx or 5xx status; the client turns them into *Error values.
//
//	GET  /v1/id        Info
//	GET  /v1/status    Status
//	GET  /v1/peers     []Peer
//	POST /v1/connect   {"addr"} → Peer
//	POST /v1/down      asks the node to shut down
//	GET  /metrics      Prometheus text
package localapi
