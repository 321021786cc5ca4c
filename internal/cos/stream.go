package cos

import (
	"context"
	"crypto/md5" //nolint:gosec // x-cos-meta-md5 is Terraform's integrity check, not a security control
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
)

// StreamState reads the state object of workspace ("default" or a named
// workspace; see StateKey) without holding it in memory: read gets the
// body as it arrives and may parse it as a stream. Memory use is bounded
// by what read keeps, not by the size of the state.
//
// It returns found false and a nil error, without calling read, when the
// object does not exist. A missing bucket is ErrBucketNotFound, not a
// missing state. Before read is called, an object without a valid
// x-cos-meta-md5 is refused (ErrChecksumMissing), and so is one whose
// Content-Length is above Config.MaxStateBytes (ErrStateTooLarge).
//
// The reader handed to read checks the body while it streams:
//
//   - It computes the body's MD5 and, at the end of the body, returns an
//     error wrapping ErrChecksumMismatch instead of io.EOF when it differs
//     from x-cos-meta-md5. A consumer that reads to EOF therefore fails on
//     a tampered state.
//   - It hands over at most Config.MaxStateBytes bytes; a longer body makes
//     it return an error wrapping ErrStateTooLarge.
//   - A connection lost mid-body is an error wrapping ErrUnreachable.
//
// When read returns, StreamState reads and checks whatever read left
// unread (up to the limit, without keeping it), so a nil error means the
// whole body matched its checksum. Until StreamState returns nil, nothing
// read produced may be trusted: on a checksum or size failure StreamState
// returns that failure even when read succeeded (a streaming parser may
// stop before the end), and it returns it in preference to read's own
// error (a tampered body often fails parsing first). Otherwise read's
// error is returned, wrapped. The reader must not be used after read
// returns. On every error found is false. size is the size of the body.
//
// The whole call, body included, is bounded by the HTTP client's timeout
// (DefaultTimeout unless WithHTTPClient sets another) and by ctx.
func (c *Client) StreamState(ctx context.Context, workspace string, read func(io.Reader) error) (found bool, size int64, err error) {
	obj, err := c.readObject(ctx, workspace, false, read)
	if obj == nil {
		return false, 0, err
	}
	return true, obj.size, err
}

// streamObject GETs key and checks it as Terraform's getObject does, but
// while streaming it to read: a 404 is "not found" (found false, no
// error, read not called); x-cos-meta-md5 must be 32 characters and equal
// the hex MD5 of the body; bodies above limit are refused with tooLarge.
// It returns the object's checksum and size. See StreamState for the
// contract.
func (c *Client) streamObject(ctx context.Context, op, key string, limit int64, tooLarge error, read func(io.Reader) error) (sum string, size int64, found bool, err error) {
	resp, err := c.sdk.Object.Get(ctx, key, nil)
	if err != nil {
		err = c.classify(op, key, resp, err)
		if resp != nil && resp.StatusCode == http.StatusNotFound && !errors.Is(err, ErrBucketNotFound) {
			return "", 0, false, nil
		}
		return "", 0, false, err
	}
	defer func() { _ = resp.Body.Close() }()
	where := fmt.Sprintf("%s in bucket %q", op, c.bucket)

	sum = resp.Header.Get(md5Header)
	if len(sum) != md5.Size*2 {
		if sum == "" {
			return "", 0, false, fmt.Errorf("%s: %w: the object has no x-cos-meta-md5", where, ErrChecksumMissing)
		}
		// Not quoted: the header is whatever the object's writer put there.
		return "", 0, false, fmt.Errorf("%s: %w: x-cos-meta-md5 has %d characters, not 32 hex digits", where, ErrChecksumMissing, len(sum))
	}
	if resp.ContentLength > limit {
		return "", 0, false, fmt.Errorf("%s: %w: Content-Length %d is above the %d byte limit", where, tooLarge, resp.ContentLength, limit)
	}

	body := &verifiedBody{
		body: resp.Body, limit: limit, want: sum, hash: md5.New(), //nolint:gosec // see import
		where: where, tooLarge: tooLarge, redact: c.redact,
	}
	readErr := read(body)
	if !body.done && body.err == nil {
		// read stopped early: the rest must still match the checksum.
		_, _ = io.Copy(io.Discard, body)
	}
	switch {
	case body.failedCheck():
		return "", 0, false, body.err
	case body.err != nil && (readErr == nil || errors.Is(readErr, body.err)):
		return "", 0, false, body.err // read gave up on the reader's own error
	case readErr != nil:
		return "", 0, false, fmt.Errorf("%s: %w", where, readErr)
	}
	return sum, body.n, true, nil
}

// verifiedBody is the reader streamObject hands over: it counts and
// hashes the body, refuses to go past the limit and replaces the final
// io.EOF with a checksum error when the body does not match. Its first
// error sticks.
type verifiedBody struct {
	body     io.Reader
	limit    int64
	want     string // x-cos-meta-md5
	hash     hash.Hash
	n        int64 // bytes handed over
	where    string
	tooLarge error
	redact   redactor

	done bool  // the body ended and matched
	err  error // the first failure
}

// Read implements io.Reader.
func (b *verifiedBody) Read(p []byte) (int, error) {
	switch {
	case b.err != nil:
		return 0, b.err
	case b.done:
		return 0, io.EOF
	case len(p) == 0:
		return 0, nil
	}
	// Read at most one byte past the limit: enough to tell a body of
	// exactly the limit from a longer one.
	if room := b.limit + 1 - b.n; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.body.Read(p)
	if b.n+int64(n) > b.limit {
		n = int(b.limit - b.n)
		b.count(p[:n])
		b.err = fmt.Errorf("%s: %w: the body is above the %d byte limit", b.where, b.tooLarge, b.limit)
		return n, b.err
	}
	b.count(p[:n])
	switch {
	case err == io.EOF:
		if got := hex.EncodeToString(b.hash.Sum(nil)); got != b.want {
			// Terraform compares the lower-case hex digest with the
			// header as is, so an upper-case checksum does not match
			// either.
			b.err = fmt.Errorf("%s: %w: body MD5 %s, x-cos-meta-md5 %s", b.where, ErrChecksumMismatch, got, printableChecksum(b.want))
			return n, b.err
		}
		b.done = true
		return n, io.EOF
	case err != nil:
		b.err = b.redact.error(transportError(b.where+": reading the body", err))
		return n, b.err
	}
	return n, nil
}

func (b *verifiedBody) count(p []byte) {
	b.hash.Write(p)
	b.n += int64(len(p))
}

// failedCheck reports whether the body failed its checksum or size check,
// the failures that make anything read from it untrustworthy.
func (b *verifiedBody) failedCheck() bool {
	return b.err != nil && (errors.Is(b.err, ErrChecksumMismatch) || errors.Is(b.err, b.tooLarge))
}

// printableChecksum returns an x-cos-meta-md5 value for an error message:
// the value itself when it is hex digits, a description otherwise (the
// header is whatever the object's writer put there).
func printableChecksum(sum string) string {
	if _, err := hex.DecodeString(sum); err != nil {
		return "(not hex digits)"
	}
	return sum
}
