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
	"net/url"
	"strings"
	"syscall"
)

// Client talks to a node's local API. Its typed methods are the only way
// in: every request and answer is one of this package's types.
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
		MaxIdleConns:        4,
		MaxIdleConnsPerHost: 4,
	}
	return &Client{socket: socket, hc: &http.Client{Transport: tr}}
}

// Socket is the path the client dials.
func (c *Client) Socket() string { return c.socket }

// Close releases idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// do sends a request with an optional JSON body and decodes the JSON answer
// into out (when out is not nil).
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	resp, err := c.open(ctx, method, path, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			if stoppedErr(ctx, err) {
				return &Stopped{Method: method, Path: path, Err: err}
			}
			return fmt.Errorf("localapi: %s %s: read answer: %w", method, path, err)
		}
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		// A body cut off reads as io.ErrUnexpectedEOF or a reset; a
		// plain io.EOF is an empty answer, whole.
		if !errors.Is(err, io.EOF) && stoppedErr(ctx, err) {
			return &Stopped{Method: method, Path: path, Err: err}
		}
		return fmt.Errorf("localapi: %s %s: bad answer: %w", method, path, err)
	}
	return nil
}

// stoppedErr reports whether err, met while a request was under way (the
// node had taken the connection), means that the node's end went away: a
// connection reset or closed before the answer was whole. The caller's own
// deadline or cancel is not that.
func stoppedErr(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// open sends a request and returns the response for the caller to read (for
// streams). A non-2xx answer is returned as *Error.
func (c *Client) open(ctx context.Context, method, path string, in any) (*http.Response, error) {
	// A socket path too long for a unix socket is no node's: say so, not
	// the dial's "invalid argument".
	if err := CheckSocketPath(c.socket); err != nil {
		return nil, err
	}
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
		return nil, fmt.Errorf("localapi: %s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if TwoStep(ctx) {
		req.Header.Set(HandHeader, handTwoStep)
	}
	if sess, conn := SessionOf(ctx); sess != "" || conn != "" {
		req.Header.Set(SessionHeader, sess)
		req.Header.Set(ConnectionHeader, conn)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if isNoNode(err) {
			return nil, fmt.Errorf("%w (socket %s)", ErrNoNode, c.socket)
		}
		if stoppedErr(ctx, err) {
			return nil, &Stopped{Method: method, Path: path, Err: err}
		}
		return nil, fmt.Errorf("localapi: %s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		e := &Error{Status: resp.StatusCode}
		raw, rerr := io.ReadAll(io.LimitReader(resp.Body, MaxRequestBody))
		if rerr != nil || json.Unmarshal(raw, e) != nil || e.Message == "" {
			e.Message = fmt.Sprintf("node answered %s", resp.Status)
		}
		if e.Code == CodeStopping {
			// The node stopped while the request was under way (a
			// long poll, cut short).
			return nil, &Stopped{Method: method, Path: path, Err: e}
		}
		return nil, e
	}
	return resp, nil
}

func isNoNode(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)
}

// segment escapes one path segment, refusing an empty one (which would
// name another endpoint).
func segment(what, s string) (string, error) {
	if s == "" {
		return "", BadRequest("%s is empty: name one", what)
	}
	if s == "." || s == ".." {
		// A dot segment is escaped, or the server's mux would clean it
		// away and route the call elsewhere (a room named "." read
		// /v1/rooms/log); it unescapes it back.
		return strings.Repeat("%2E", len(s)), nil
	}
	return url.PathEscape(s), nil
}
