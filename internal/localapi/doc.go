// Package localapi is the node's local API: HTTP and JSON over a unix socket
// (HOME/parley.sock, mode 0600), served by the node and used by the CLI, by
// `parley mcp` and by anything else that runs beside the node.
//
// The package is the API's one vocabulary: its request and response types
// (types.go) are plain structs that hold no domain type, so a client imports
// nothing of the node. The typed Client is the only way in. The server side
// takes small interfaces (Backend, Agents, Contacts, Rooms, Edge) written in
// the same types, which the node implements over its services.
//
// Every response is JSON. Errors are {"error": "...", "code": "..."} with a
// 4xx or 5xx status (codes: the Code constants); the client turns them into
// *Error values. A request body is one JSON object of at most MaxRequestBody
// bytes: unknown fields and trailing data are a 400, a larger body a 413.
// Blocking calls wait at most MaxWait.
//
// Endpoints: see NewServer, HandleAgents, HandleContacts, HandleRooms and
// HandleEdge.
package localapi
