package localapi

import (
	"errors"
	"fmt"
)

// ErrNoNode is returned when no node answers on the socket.
var ErrNoNode = errors.New("localapi: no node is running")

// Error is an error reported by the node.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code,omitempty"`
	Message string `json:"error"`
}

func (e *Error) Error() string { return e.Message }

// Errorf makes an *Error with an HTTP status and a code for the client.
func Errorf(status int, code, format string, a ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, a...)}
}
