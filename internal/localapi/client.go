package localapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
)

// Client talks to a node's local API.
type Client struct {
	socket string
	hc     *http.Client
}

// NewClient returns a client for the socket at path.
func NewClient(socket string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		MaxIdleConns: 4,
	}
	return &Client{socket: socket, hc: &http.Client{Transport: tr}}
}

// Socket is the path the client dials.
func (c *Client) Socket() string { return c.socket }

// Close releases idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// Do sends a request with an optional JSON body and decodes the JSON answer
// into out (when out is not nil).
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	resp, err := c.Open(ctx, method, path, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("localapi: %s %s: bad answer: %w", method, path, err)
	}
	return nil
}

// Open sends a request and returns the response for the caller to read (for
// streams). A non-2xx answer is returned as *Error.
func (c *Client) Open(ctx context.Context, method, path string, in any) (*http.Response, error) {
	var body io.Reader
	if in != nil {
		raw, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("localapi: encode request: %w", err)
		}
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://parley"+path, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if isNoNode(err) {
			return nil, fmt.Errorf("%w (socket %s)", ErrNoNode, c.socket)
		}
		return nil, fmt.Errorf("localapi: %s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		e := &Error{Status: resp.StatusCode}
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, MaxRequestBody))
		if json.Unmarshal(raw, e) != nil || e.Message == "" {
			e.Message = fmt.Sprintf("node answered %s", resp.Status)
		}
		return nil, e
	}
	return resp, nil
}

func isNoNode(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)
}

// ID returns the node's identity.
func (c *Client) ID(ctx context.Context) (Info, error) {
	var v Info
	return v, c.Do(ctx, "GET", "/v1/id", nil, &v)
}

// Status returns the node's status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var v Status
	return v, c.Do(ctx, "GET", "/v1/status", nil, &v)
}

// Peers lists connected peers.
func (c *Client) Peers(ctx context.Context) ([]Peer, error) {
	var v []Peer
	return v, c.Do(ctx, "GET", "/v1/peers", nil, &v)
}

// Connect dials a multiaddr (with /p2p/PEER_ID).
func (c *Client) Connect(ctx context.Context, addr string) (Peer, error) {
	var v Peer
	return v, c.Do(ctx, "POST", "/v1/connect", ConnectRequest{Addr: addr}, &v)
}

// Down asks the node to shut down.
func (c *Client) Down(ctx context.Context) error {
	return c.Do(ctx, "POST", "/v1/down", nil, nil)
}
