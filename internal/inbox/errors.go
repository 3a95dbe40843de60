package inbox

import (
	"context"
	"errors"
	"net/http"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/rooms"
)

// ErrBadConfig is returned by New when the Config cannot be used.
var ErrBadConfig = errors.New("inbox: bad config")

// apiError gives an error of the rooms service an HTTP status and a code
// for the local API, keeping its message.
func apiError(err error) error {
	var e *localapi.Error
	code, status := "", 0
	switch {
	case err == nil:
		return nil
	case errors.As(err, &e):
		return e
	case errors.Is(err, rooms.ErrUnknownRoom):
		code, status = localapi.CodeUnknownRoom, http.StatusNotFound
	case errors.Is(err, rooms.ErrUnknownEvent):
		code, status = localapi.CodeUnknownEvent, http.StatusNotFound
	case errors.Is(err, rooms.ErrAgentLeft):
		code, status = localapi.CodeLeft, http.StatusForbidden
	case errors.Is(err, rooms.ErrNotCreator):
		code, status = localapi.CodeNotCreator, http.StatusForbidden
	case errors.Is(err, rooms.ErrNotMember):
		code, status = localapi.CodeNotMember, http.StatusForbidden
	case errors.Is(err, rooms.ErrTextTooLong), errors.Is(err, rooms.ErrTooLarge):
		code, status = localapi.CodeTooLarge, http.StatusRequestEntityTooLarge
	case errors.Is(err, rooms.ErrInviteRefused), errors.Is(err, rooms.ErrNoConsent):
		code, status = localapi.CodeRefused, http.StatusForbidden
	case errors.Is(err, rooms.ErrMalformed):
		code, status = localapi.CodeBadRequest, http.StatusBadRequest
	case errors.Is(err, rooms.ErrCorrupt):
		code, status = localapi.CodeCorrupt, http.StatusInternalServerError
	case errors.Is(err, rooms.ErrOwnEventsUnknown):
		code, status = localapi.CodeLearning, http.StatusServiceUnavailable
	case errors.Is(err, rooms.ErrClosed):
		code, status = localapi.CodeClosed, http.StatusServiceUnavailable
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		code, status = localapi.CodeTimeout, http.StatusGatewayTimeout
	default:
		return err
	}
	return localapi.Errorf(status, code, "%v", err)
}
