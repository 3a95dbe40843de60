// Package version holds the Parley version that the node, its peers'
// user agent and MCP clients are told.
package version

// Version is this build's Parley version.
const Version = "0.2.0"
