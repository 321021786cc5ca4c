package cos

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"

	sdk "github.com/tencentyun/cos-go-sdk-v5"
)

// WriteState writes size bytes of body as the state object of workspace
// ("default" or a named workspace; see StateKey), replacing the object
// that is there, as Terraform's cos backend writes a state: with
// x-cos-meta-md5 the hex of md5sum, so that Terraform and StreamState
// accept the object when they read it back, and the acl Terraform gives
// objects by default (DefaultACL). The write also carries Content-MD5, so
// that COS checks the body against md5sum and refuses it (a
// *ResponseError) when it differs. body is streamed, never held: memory
// does not grow with the state.
//
// A PUT replaces an object whole or not at all: after an error the object
// holds the previous state, or the new one when only the answer was lost.
// The write is not retried (the SDK retries only bodies it can rewind);
// the caller may send it again, which is harmless. It takes no lock:
// a caller that must not race Terraform holds the workspace's lock
// (AcquireLock) while it writes.
//
// Errors are classified and redacted like every error of the Client: a
// refusal is ErrAccessDenied, no answer ErrUnreachable, a missing bucket
// ErrBucketNotFound. A body that ends before size bytes is an error of its
// own, not ErrUnreachable. An invalid workspace name is ErrInvalidConfig.
func (c *Client) WriteState(ctx context.Context, workspace string, body io.Reader, size int64, md5sum [16]byte) error {
	key, err := c.stateKey(workspace)
	if err != nil {
		return err
	}
	op := "write state object " + strconv.Quote(key)
	if size < 0 {
		return fmt.Errorf("%s: negative size %d", op, size)
	}
	r := &sizedReader{r: io.LimitReader(body, size), size: size}
	r.left.Store(size)
	resp, err := c.sdk.Object.Put(ctx, key, r, &sdk.ObjectPutOptions{
		ACLHeaderOptions: &sdk.ACLHeaderOptions{XCosACL: DefaultACL},
		ObjectPutHeaderOptions: &sdk.ObjectPutHeaderOptions{
			ContentLength: size,
			ContentMD5:    base64.StdEncoding.EncodeToString(md5sum[:]),
			XCosMetaXXX:   &http.Header{md5Header: {hex.EncodeToString(md5sum[:])}},
		},
	})
	if err == nil {
		return nil
	}
	if left := r.left.Load(); left > 0 && r.ended.Load() {
		// net/http reports it as a failed request, which classify would
		// read as COS being unreachable.
		return c.redact.error(fmt.Errorf("%s in bucket %q: %w: %d of %d bytes missing", op, c.bucket, errBodyShort, left, size))
	}
	return c.redact.error(c.classify(op, key, resp, err))
}

// errBodyShort is the error of a write whose body ended before its size.
var errBodyShort = errors.New("the body ended before its size")

// sizedReader reads r, which should hold size bytes, and counts down the
// bytes it still expects. Its counts are atomic: net/http may still read a
// request body after the request returned. It is an sdk.FixedLengthReader,
// whose length the SDK knows, as it knows an *io.LimitedReader's.
type sizedReader struct {
	r     io.Reader
	size  int64
	left  atomic.Int64
	ended atomic.Bool // r reached its end
}

// Size returns the size the body should have.
func (s *sizedReader) Size() int64 { return s.size }

func (s *sizedReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.left.Add(-int64(n))
	if errors.Is(err, io.EOF) {
		s.ended.Store(true)
	}
	return n, err
}
