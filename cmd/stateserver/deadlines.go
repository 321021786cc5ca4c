package main

import (
	"errors"
	"io"
	"net/http"
	"time"
)

// progressDeadlines wraps a handler so that a request body the client stops
// sending, or a response body the client stops reading, fails after timeout
// without progress, and the connection is closed.
//
// A deadline on the whole request (http.Server.ReadTimeout) would have to be
// long enough for the largest state on the slowest link, and so would leave
// a stalled client connected that long. Here every read of the request body
// and every write of the response moves the connection's deadline to timeout
// from now: a slow but steady 100 MiB upload is never cut, a stalled one
// is dropped after timeout.
type progressDeadlines struct {
	next    http.Handler
	timeout time.Duration
}

func (p progressDeadlines) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Errors mean the connection does not support deadlines, as with some
	// test recorders: there is nothing to enforce then.
	rc := http.NewResponseController(w)
	// The server keeps write deadlines from one request to the next on a
	// connection: drop the one the previous answer left, so that the 100
	// Continue of a long upload goes out.
	_ = rc.SetWriteDeadline(time.Time{})
	if r.Body != nil && r.Body != http.NoBody {
		// Also bounds the server discarding a body the handler did not
		// read, after the handler returns.
		_ = rc.SetReadDeadline(time.Now().Add(p.timeout))
		r.Body = &progressReader{ReadCloser: r.Body, rc: rc, timeout: p.timeout}
	}
	p.next.ServeHTTP(&progressWriter{ResponseWriter: w, rc: rc, timeout: p.timeout}, r)
	// The server writes what is still buffered after the handler returns.
	_ = rc.SetWriteDeadline(time.Now().Add(p.timeout))
}

// progressReader moves the read deadline before each read of the body, and
// clears it once the body is complete: net/http then reads the connection
// in the background to notice a client going away, and must not time out.
type progressReader struct {
	io.ReadCloser
	rc      *http.ResponseController
	timeout time.Duration
}

func (b *progressReader) Read(p []byte) (int, error) {
	_ = b.rc.SetReadDeadline(time.Now().Add(b.timeout))
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) {
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// progressWriter moves the write deadline before each write of the
// response.
type progressWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (w *progressWriter) WriteHeader(code int) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	w.ResponseWriter.WriteHeader(code)
}

func (w *progressWriter) Write(b []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *progressWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
