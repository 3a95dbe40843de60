package localapi

import (
	"errors"
	"fmt"
	"net/http"
)

// ErrNoNode is returned when no node answers on the socket.
var ErrNoNode = errors.New("localapi: no node is running")

// Error is an error reported by the node: an HTTP status, a code a program
// can test, and a message for a person.
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

// The codes of errors the node reports (Error.Code).
const (
	CodeBadRequest   = "bad_request"   // 400: a field is missing or malformed
	CodeTooLarge     = "too_large"     // 413: a body or text over its limit
	CodeUnknownRoom  = "unknown_room"  // 404
	CodeUnknownAgent = "unknown_agent" // 404
	CodeUnknownEvent = "unknown_event" // 404: an event, an ask
	CodeNotMember    = "not_member"    // 403
	CodeLeft         = "left"          // 403: the agent left the room
	CodeNotCreator   = "not_creator"   // 403
	CodeAmbiguous    = "ambiguous"     // 409: a name that names several rooms
	CodeConflict     = "conflict"      // 409
	CodeNameTaken    = "name_taken"    // 409
	CodeRefused      = "refused"       // 403: an invite or consent refusal
	CodeUnreachable  = "unreachable"   // 502
	CodeTimeout      = "timeout"       // 504
	CodeTooMany      = "too_many"      // 429
	CodeClosed       = "closed"        // 503
	CodeLearning     = "learning"      // 503: the node is learning its own events from peers; retry in a moment
	CodeInternal     = "internal"      // 500
	CodeCorrupt      = "corrupt"       // 500: a stored event is damaged; the node fetches it again
)

// IsCode reports whether err is an *Error with code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// BadRequest is a 400 *Error.
func BadRequest(format string, a ...any) *Error {
	return Errorf(http.StatusBadRequest, CodeBadRequest, format, a...)
}
