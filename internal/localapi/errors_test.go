package localapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func TestErrorTableWrap(t *testing.T) {
	t.Parallel()
	errA, errB, errC := errors.New("svc: a"), errors.New("svc: b"), errors.New("svc: c")
	table := ErrorTable{Rows: []Mapping{
		{Status: http.StatusNotFound, Code: CodeUnknownRoom, Errs: []error{errA}},
		{Status: http.StatusConflict, Code: CodeConflict, Errs: []error{errB, errC}},
		{Status: http.StatusBadRequest, Code: CodeBadRequest, Errs: []error{errC}},
	}}
	own := Errorf(http.StatusTooManyRequests, CodeTooMany, "slow down")
	for _, c := range []struct {
		in     error
		status int
		code   string
		msg    string
	}{
		{fmt.Errorf("room x: %w", errA), http.StatusNotFound, CodeUnknownRoom, "room x: svc: a"},
		{errB, http.StatusConflict, CodeConflict, "svc: b"},
		{errC, http.StatusConflict, CodeConflict, "svc: c"}, // the first row that matches
		{fmt.Errorf("wrapped: %w", own), http.StatusTooManyRequests, CodeTooMany, "slow down"},
		{fmt.Errorf("ask: %w", context.DeadlineExceeded), http.StatusGatewayTimeout, CodeTimeout, "ask: context deadline exceeded"},
		{context.Canceled, http.StatusGatewayTimeout, CodeTimeout, "context canceled"},
	} {
		var e *Error
		if !errors.As(table.Wrap(c.in), &e) {
			t.Fatalf("Wrap(%v) is not an *Error", c.in)
		}
		if e.Status != c.status || e.Code != c.code || e.Message != c.msg {
			t.Errorf("Wrap(%v) = %d %s %q, want %d %s %q", c.in, e.Status, e.Code, e.Message, c.status, c.code, c.msg)
		}
	}
	if table.Wrap(nil) != nil {
		t.Error("Wrap(nil) is not nil")
	}
	other := errors.New("disk on fire")
	if got := table.Wrap(other); got != other {
		t.Errorf("an unknown error came back as %v", got)
	}
	trimmed := ErrorTable{Rows: table.Rows, Message: func(err error) string { return strings.TrimPrefix(err.Error(), "svc: ") }}
	if got := trimmed.Wrap(errB).Error(); got != "b" {
		t.Errorf("Message not used: %q", got)
	}
}
