package localapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
)

// ErrNoNode is returned when no node answers on the socket.
var ErrNoNode = errors.New("localapi: no node is running")

// ErrNodeStopped is returned (inside a *Stopped) when the node's end of a
// request went away before the node answered it whole: the node stopped
// (or crashed) while the request was under way, so what was asked may or
// may not have been done.
var ErrNodeStopped = errors.New("localapi: the node stopped while the request was under way")

// ErrStopping is why the node ends the requests under way when it stops
// (long polls: a wait for the inbox, for an ask's reply): it answers them
// at once with CodeStopping, and the client returns a *Stopped.
var ErrStopping = errors.New("the node is stopping")

// ErrStreamStopped is the Err of a *Stopped for a stream (a room's tail)
// the node ended because it stops: it said so before it closed the stream.
var ErrStreamStopped = errors.New("the node is stopping: it ended the stream")

// ErrStreamCut is the Err of a *Stopped for a stream that ended without the
// node saying it stops: the node crashed or was killed.
var ErrStreamCut = errors.New("the stream ended without a word from the node: it crashed or was killed")

// Stopped is a request cut off by the node stopping: Method and Path name
// it, Err is what the connection said. Stream is set for a stream the node
// had answered and followed until it stopped (Err is then ErrStreamStopped,
// ErrStreamCut, or what the connection said). Explain, when set (the CLI
// sets it), is the text a person reads in its place, wherever the error is
// wrapped.
type Stopped struct {
	Method, Path string
	Err          error
	Stream       bool
	Explain      string
}

func (e *Stopped) Error() string {
	if e.Explain != "" {
		return e.Explain
	}
	return fmt.Sprintf("%v (%s %s: %v)", ErrNodeStopped, e.Method, e.Path, e.Err)
}

func (e *Stopped) Unwrap() []error { return []error{ErrNodeStopped, e.Err} }

// Write reports whether the request could have changed something (it was
// not a GET).
func (e *Stopped) Write() bool { return e.Method != http.MethodGet }

// Error is an error reported by the node: an HTTP status, a code a program
// can test, and a message for a person.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code,omitempty"`
	Message string `json:"error"`
	// Seq, with CodeStale, is the Seq of the organisation record the node
	// holds: a record signed again must have a greater one.
	Seq uint64 `json:"seq,omitempty"`
	// Expires, with CodeClaimed, is when the claim in the way ends unless
	// its holder renews it (Unix milliseconds).
	Expires int64 `json:"expires,omitempty"`
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
	CodeStopping     = "stopping"      // 503: the node stops, ending the request (a long poll) under way
	CodeLearning     = "learning"      // 503: the node is learning its own events from peers; retry in a moment
	CodeNotStored    = "not_stored"    // 507: the post went out to the room but is not safely stored on this node yet; do not post it again
	CodeInternal     = "internal"      // 500
	CodeNotFound     = "not_found"     // 404: an endpoint, a contact, a request
	CodePeerRefused  = "peer_refused"  // 502: the other node said no
	CodeCorrupt      = "corrupt"       // 500: a stored event is damaged; the node fetches it again
	CodeStale        = "stale"         // 409: a newer organisation record is held (Error.Seq)
)

// A Mapping is the status and code the local API reports for an error that
// is (errors.Is) one of Errs.
type Mapping struct {
	Status int
	Code   string
	Errs   []error
}

// An ErrorTable gives the errors of one service an HTTP status and a code
// for the local API, keeping their message. Each service has one; the rows
// are tried in order.
type ErrorTable struct {
	Rows []Mapping
	// Message, when set, makes the message a person reads from the error
	// (for example without the service's prefix); otherwise err.Error().
	Message func(error) string
}

// Wrap returns nil for nil; an *Error found in err's chain as it is; an
// *Error with the status and code of the first row err matches; a timeout
// (504) for a context's deadline or cancellation; and any other error as it
// is (the API answers it with a 500).
func (t ErrorTable) Wrap(err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	status, code := 0, ""
	for _, m := range t.Rows {
		for _, target := range m.Errs {
			if errors.Is(err, target) {
				status, code = m.Status, m.Code
				break
			}
		}
		if code != "" {
			break
		}
	}
	if code == "" {
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			return err
		}
		status, code = http.StatusGatewayTimeout, CodeTimeout
	}
	msg := err.Error()
	if t.Message != nil {
		msg = t.Message(err)
	}
	return &Error{Status: status, Code: code, Message: msg}
}

// IsCode reports whether err is an *Error with code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// BadRequest is a 400 *Error.
func BadRequest(format string, a ...any) *Error {
	return Errorf(http.StatusBadRequest, CodeBadRequest, format, a...)
}
