package localapi

import (
	"context"
	"net/http"
)

// UIInfo says where the node serves its dashboard.
type UIInfo struct {
	URL   string `json:"url,omitempty"`   // opens the page once (a one-time code); empty when not served
	Error string `json:"error,omitempty"` // why it is not served
}

// Handler is the API's handler, for a front end that serves some of its
// routes itself (the dashboard).
func (s *Server) Handler() http.Handler { return s.mux }

// HandleUI adds
//
//	GET /v1/ui   UIInfo
func (s *Server) HandleUI(f func() UIInfo) {
	noBody(s, "GET /v1/ui", func(*http.Request) (UIInfo, error) { return f(), nil })
}

// UI asks the node where its dashboard is.
func (c *Client) UI(ctx context.Context) (UIInfo, error) {
	var out UIInfo
	return out, c.do(ctx, http.MethodGet, "/v1/ui", nil, &out)
}
