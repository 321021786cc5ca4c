package stateclient

import (
	"bytes"
	"context"
	"crypto/md5" //nolint:gosec // Content-MD5 is part of the protocol, not a security control
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"
)

// UpdateFrom writes the state as Update does, streaming it from body: the
// first size bytes of body, read from offset 0 whatever body's current
// offset, whose MD5 is md5sum. It is meant for a state kept in a file (an
// *os.File), written back whole without being held in memory.
//
// The query parameter ID=lockID is added (keeping any query the address
// already has) when lockID is not "", so that a client that did not take
// the lock itself can write under it; with lockID "" the ID of the lock
// this client holds is added, as by Update, and none when it holds none.
//
// The request carries Content-Length size, Content-Type application/json
// and Content-MD5 base64(md5sum). body is read in small pieces as the
// request is sent and rewound with Seek for every attempt; it is never
// read whole into memory. Once the call has returned body is no longer
// used. body must hold exactly size bytes, and they must have the MD5
// md5sum: otherwise the call fails with an error wrapping ErrBodyMismatch,
// before sending anything when the size differs, and without sending the
// last bytes, so that no server can store a complete body, when the
// content differs (the file changed after its MD5 was taken). Such a
// failure is not retried.
//
// Retries, authentication and answers are Update's: 200, 201 and 204
// succeed; a 409 or 423 gives a *LockError with the holder when the server
// names it; 401 and 403 a *StatusError matching ErrUnauthorized or
// ErrForbidden; any other answer a *StatusError. Errors hold no secret.
func (c *Client) UpdateFrom(ctx context.Context, lockID string, body io.ReadSeeker, size int64, md5sum [16]byte) error {
	return c.secrets.scrubError(c.updateFrom(ctx, lockID, body, size, md5sum))
}

func (c *Client) updateFrom(ctx context.Context, lockID string, body io.ReadSeeker, size int64, md5sum [16]byte) error {
	if size < 0 {
		return fmt.Errorf("update: %w: negative size %d", ErrBodyMismatch, size)
	}
	end, err := body.Seek(0, io.SeekEnd)
	if err != nil {
		return fmt.Errorf("update: finding the end of the body: %w", err)
	}
	if end != size {
		return fmt.Errorf("update: %w: the body holds %d bytes, not %d", ErrBodyMismatch, end, size)
	}
	if size == 0 {
		// As Update sends an empty state: net/http would otherwise probe a
		// reader of unknown length and send it chunked.
		if md5sum != md5.Sum(nil) { //nolint:gosec // protocol checksum
			return fmt.Errorf("update: %w: its MD5 is not the one given", ErrBodyMismatch)
		}
		return c.write(ctx, lockID, bytesPayload([]byte{}))
	}
	rb := &rewindableBody{r: body, size: size, md5sum: md5sum}
	err = c.write(ctx, lockID, &payload{raw: rb.open, size: size, md5sum: md5sum})
	rb.retire()
	return err
}

// errAttemptSuperseded ends the reading of an attempt's body once another
// attempt has started: the transport of the abandoned attempt can still
// be reading it.
var errAttemptSuperseded = errors.New("the request body was reopened for another attempt")

// rewindableBody hands go-retryablehttp one reader per attempt over the
// same seekable body. net/http may go on reading an attempt's body after
// RoundTrip returned (it documents that the caller must wait for Close
// before reusing a body, and go-retryablehttp does not), so every reader
// reads under one lock and only while it is the latest: opening a reader
// for a new attempt ends the previous one, whose next Read fails, and a
// Read in progress finishes before the body is rewound.
type rewindableBody struct {
	mu     sync.Mutex
	r      io.ReadSeeker
	size   int64
	md5sum [16]byte
	gen    uint64 // of the latest reader; readers of another are done
}

// open rewinds the body and returns a reader of its size bytes for a new
// attempt. It is a retryablehttp.ReaderFunc.
func (b *rewindableBody) open() (io.Reader, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gen++
	if _, err := b.r.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("rewinding the state body: %w", err)
	}
	return &attemptReader{body: b, gen: b.gen, left: b.size, hash: md5.New()}, nil //nolint:gosec // protocol checksum
}

// retire ends every reader: the caller gets the body back.
func (b *rewindableBody) retire() {
	b.mu.Lock()
	b.gen++
	b.mu.Unlock()
}

// attemptReader reads the body for one attempt, checking its MD5.
type attemptReader struct {
	body *rewindableBody
	gen  uint64
	left int64 // bytes still to hand over
	hash hash.Hash
	err  error // returned by every Read once set: io.EOF or why it failed
}

// Read implements io.Reader. It withholds the last bytes of a body whose
// MD5 is not the one announced, so that the server sees a body shorter
// than its Content-Length and stores nothing.
func (a *attemptReader) Read(p []byte) (int, error) {
	a.body.mu.Lock()
	defer a.body.mu.Unlock()
	switch {
	case a.err != nil:
		return 0, a.err
	case a.gen != a.body.gen:
		return 0, errAttemptSuperseded
	}
	if int64(len(p)) > a.left {
		p = p[:a.left]
	}
	n, err := a.body.r.Read(p)
	a.hash.Write(p[:n])
	a.left -= int64(n)
	switch {
	case a.left == 0:
		if a.err = a.check(); !errors.Is(a.err, io.EOF) {
			return 0, a.err
		}
		return n, nil
	case errors.Is(err, io.EOF):
		a.err = fmt.Errorf("%w: the body ended %d bytes short of its size", ErrBodyMismatch, a.left)
		return n, a.err
	case err != nil:
		a.err = fmt.Errorf("reading the state body: %w", err)
		return n, a.err
	}
	return n, nil
}

// check compares the MD5 of the whole body with the announced one: io.EOF
// when they match.
func (a *attemptReader) check() error {
	if !bytes.Equal(a.hash.Sum(nil), a.body.md5sum[:]) {
		return fmt.Errorf("%w: its MD5 is not the one given (the file changed?)", ErrBodyMismatch)
	}
	return io.EOF
}
