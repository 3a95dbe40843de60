package localapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// backupTrailer is the trailer that ends a backup: "ok", or why it is not
// whole. A client keeps the file only on "ok".
const backupTrailer = "Parley-Backup"

// HandleBackup adds
//
//	GET /v1/backup   the node's backup (a zip archive; see node.WriteBackup)
//
// write writes the backup; an error before its first byte is the answer's
// error, and one after it is told in the answer's trailer.
func (s *Server) HandleBackup(write func(ctx context.Context, w io.Writer) error) {
	s.mux.HandleFunc("GET /v1/backup", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", backupTrailer)
		cw := &countingWriter{w: w, start: func() {
			w.Header().Set("Content-Type", "application/zip")
			w.WriteHeader(http.StatusOK)
		}}
		err := write(r.Context(), cw)
		if err != nil && cw.n == 0 {
			w.Header().Del("Trailer")
			WriteError(w, err)
			return
		}
		cw.begin()
		if err != nil {
			w.Header().Set(backupTrailer, "failed: "+err.Error())
			return
		}
		w.Header().Set(backupTrailer, "ok")
	})
}

// countingWriter starts the answer at its first byte.
type countingWriter struct {
	w       io.Writer
	n       int64
	start   func()
	started bool
}

func (c *countingWriter) begin() {
	if !c.started {
		c.started = true
		c.start()
	}
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.begin()
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Backup copies the node's backup to w and returns its size. An answer
// that ends before the node says it is whole is an error: w then holds
// part of a backup.
func (c *Client) Backup(ctx context.Context, w io.Writer) (int64, error) {
	resp, err := c.open(ctx, http.MethodGet, "/v1/backup", nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	dst := &writeErr{w: w}
	n, err := io.Copy(dst, resp.Body)
	if dst.err != nil {
		return n, fmt.Errorf("localapi: backup: writing it: %w", dst.err)
	}
	if err != nil {
		return n, fmt.Errorf("localapi: backup: the node's answer ended after %d bytes: %w", n, err)
	}
	switch t := resp.Trailer.Get(backupTrailer); t {
	case "ok":
		return n, nil
	case "":
		return n, fmt.Errorf("localapi: backup: the node's answer ended after %d bytes without saying it was whole", n)
	default:
		return n, fmt.Errorf("localapi: backup: the node %s", t)
	}
}

// writeErr keeps the error of the writer a copy writes to, to tell it from
// the reader's.
type writeErr struct {
	w   io.Writer
	err error
}

func (e *writeErr) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}
