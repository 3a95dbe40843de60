package localapi

import (
	"context"
	"net/http"
)

// HandHeader is the request header that asks for a two-step hand-out
// ("two-step"): what the call hands out (pending items, messages read, the
// reply to an ask) is marked as handed out as with one step, and also kept
// under the token the answer gives in Pending.Hand until the caller
// confirms it (Ack); unconfirmed within the node's hand wait, it is offered
// to the agent again. Without the header a call hands out in one step, as
// it always did.
const HandHeader = "Parley-Hand"

// handTwoStep is HandHeader's value.
const handTwoStep = "two-step"

type twoStepKey struct{}

// WithTwoStep returns ctx marked for two-step hand-outs: the Client sends
// HandHeader on the calls made with it, and the Server marks the context of
// the requests that carry it.
func WithTwoStep(ctx context.Context) context.Context {
	return context.WithValue(ctx, twoStepKey{}, true)
}

// TwoStep reports whether ctx asks for two-step hand-outs (WithTwoStep).
func TwoStep(ctx context.Context) bool {
	v, _ := ctx.Value(twoStepKey{}).(bool)
	return v
}

// twoStepRequest returns r with its context marked when it asks for a
// two-step hand-out.
func twoStepRequest(r *http.Request) *http.Request {
	if r.Header.Get(HandHeader) != handTwoStep {
		return r
	}
	return r.WithContext(WithTwoStep(r.Context()))
}
