package inbox

import (
	"errors"
	"net/http"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/rooms"
)

// ErrBadConfig is returned by New when the Config cannot be used.
var ErrBadConfig = errors.New("inbox: bad config")

// apiErrors give errors of the rooms service an HTTP status and a code for
// the local API, keeping their message.
var apiErrors = localapi.ErrorTable{Rows: []localapi.Mapping{
	// First: it wraps the write's or the fsync's own error.
	{Status: http.StatusInsufficientStorage, Code: localapi.CodeNotStored, Errs: []error{rooms.ErrSentNotStored}},
	{Status: http.StatusNotFound, Code: localapi.CodeUnknownRoom, Errs: []error{rooms.ErrUnknownRoom}},
	{Status: http.StatusNotFound, Code: localapi.CodeUnknownEvent, Errs: []error{rooms.ErrUnknownEvent}},
	{Status: http.StatusConflict, Code: localapi.CodeAmbiguous, Errs: []error{rooms.ErrAmbiguousID}},
	{Status: http.StatusForbidden, Code: localapi.CodeLeft, Errs: []error{rooms.ErrAgentLeft}},
	{Status: http.StatusForbidden, Code: localapi.CodeNotCreator, Errs: []error{rooms.ErrNotCreator}},
	{Status: http.StatusConflict, Code: localapi.CodeConflict, Errs: []error{rooms.ErrRoomTooOld}},
	{Status: http.StatusForbidden, Code: localapi.CodeNotMember, Errs: []error{rooms.ErrNotMember}},
	{Status: http.StatusRequestEntityTooLarge, Code: localapi.CodeTooLarge, Errs: []error{rooms.ErrTextTooLong, rooms.ErrTooLarge}},
	{Status: http.StatusForbidden, Code: localapi.CodeRefused, Errs: []error{rooms.ErrInviteRefused, rooms.ErrNoConsent}},
	{Status: http.StatusBadRequest, Code: localapi.CodeBadRequest, Errs: []error{rooms.ErrMalformed}},
	{Status: http.StatusInternalServerError, Code: localapi.CodeCorrupt, Errs: []error{rooms.ErrCorrupt}},
	{Status: http.StatusServiceUnavailable, Code: localapi.CodeLearning, Errs: []error{rooms.ErrOwnEventsUnknown}},
	{Status: http.StatusServiceUnavailable, Code: localapi.CodeClosed, Errs: []error{rooms.ErrClosed}},
}}

func apiError(err error) error { return apiErrors.Wrap(err) }
