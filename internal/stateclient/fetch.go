package stateclient

import (
	"bufio"
	"context"
	"crypto/md5" //nolint:gosec // protocol checksum
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/infrastate/backend-operator/internal/statefile"
)

// Payload is a state as fetched.
type Payload struct {
	// Data is the state, as sent by the server.
	Data []byte
	// MD5 is the server's Content-MD5 when it sent one, else the MD5 of Data,
	// as Terraform computes it. It is not checked against Data.
	MD5 []byte
}

// StateSummary is what FetchSummary learns about a state.
type StateSummary struct {
	// Present is false when the server has no state.
	Present bool
	// SizeBytes is the size of the state in bytes.
	SizeBytes int64
	// Summary is the state's metadata; zero when Present is false.
	statefile.Summary
}

// Fetch reads the state. It returns nil and no error when there is no
// state: a 204 or 404 answer, or a 200 with an empty body. 401 and 403 give
// a *StatusError matching ErrUnauthorized or ErrForbidden; a state larger
// than Config.MaxStateBytes gives a *SizeError.
//
// The body is read into a buffer sized from Content-Length when the server
// sends one, so a fetch allocates about the size of the state once.
func (c *Client) Fetch(ctx context.Context) (*Payload, error) {
	p, err := c.fetch(ctx)
	return p, c.secrets.scrubError(err)
}

func (c *Client) fetch(ctx context.Context) (*Payload, error) {
	resp, err := c.get(ctx)
	if err != nil || resp == nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := readBounded(resp.Body, resp.ContentLength, c.maxStateBytes)
	if err != nil {
		return nil, fmt.Errorf("GET %s: reading the state: %w", c.state.printable, c.secrets.cleanCause(err))
	}
	if len(data) == 0 {
		return nil, nil
	}
	p := &Payload{Data: data}
	if raw := resp.Header.Get("Content-MD5"); raw != "" {
		if p.MD5, err = base64.StdEncoding.DecodeString(raw); err != nil {
			// base64's error gives an offset, never the header's bytes.
			return nil, fmt.Errorf("GET %s: decoding Content-MD5: the header is not valid base64: %w", c.state.printable, err)
		}
	} else {
		sum := md5.Sum(data) //nolint:gosec // protocol checksum
		p.MD5 = sum[:]
	}
	return p, nil
}

// FetchSummary reads the state's metadata without keeping the state: the
// body is streamed through statefile.ReadSummary, within
// Config.MaxStateBytes. No state gives Present false and no error; other
// answers are handled as by Fetch. A malformed state or one in a format
// other than version 4 is an error.
func (c *Client) FetchSummary(ctx context.Context) (*StateSummary, error) {
	var sum statefile.Summary
	found, size, err := c.StreamState(ctx, func(r io.Reader) error {
		var err error
		sum, err = statefile.ReadSummary(r)
		return err
	})
	switch {
	case err != nil:
		return nil, err
	case !found:
		return &StateSummary{}, nil
	}
	return &StateSummary{Present: true, SizeBytes: size, Summary: sum}, nil
}

// StreamState reads the state and hands its body to read as it arrives:
// the client keeps nothing of it, so a streaming consumer bounds the
// memory a state costs. found is false when there is no state (a 204 or
// 404 answer, or a 200 with an empty body), in which case read is not
// called. size is the number of bytes read. A state larger than
// Config.MaxStateBytes gives a *SizeError: read sees at most one byte past
// the limit. An error of read is returned wrapped; other answers are
// handled as by Fetch. On every error found is false and size 0, as with
// the COS client.
func (c *Client) StreamState(ctx context.Context, read func(io.Reader) error) (found bool, size int64, err error) {
	found, size, err = c.streamState(ctx, read)
	return found, size, c.secrets.scrubError(err)
}

func (c *Client) streamState(ctx context.Context, read func(io.Reader) error) (bool, int64, error) {
	resp, err := c.get(ctx)
	if err != nil || resp == nil {
		return false, 0, err
	}
	defer resp.Body.Close()
	counted := &countingReader{r: io.LimitReader(resp.Body, c.maxStateBytes+1)}
	body := bufio.NewReader(counted)
	if _, err := body.Peek(1); errors.Is(err, io.EOF) {
		return false, 0, nil
	} else if err != nil {
		return false, 0, fmt.Errorf("GET %s: reading the state: %w", c.state.printable, c.secrets.cleanCause(err))
	}
	readErr := read(body)
	if counted.n > c.maxStateBytes {
		return false, 0, fmt.Errorf("GET %s: %w", c.state.printable, &SizeError{Limit: c.maxStateBytes, ContentLength: resp.ContentLength})
	}
	if readErr != nil {
		return false, 0, fmt.Errorf("GET %s: %w", c.state.printable, readErr) // statefile's errors quote no input; the caller scrubs secrets
	}
	return true, counted.n, nil
}

// get sends the GET of the state and sorts the answer: it returns the
// response of a 200 within the size limit (the caller closes it), nil for
// no state, or an error.
func (c *Client) get(ctx context.Context) (*http.Response, error) {
	resp, err := c.do(ctx, http.MethodGet, &c.state, nil, nil)
	if err != nil {
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
		if resp.ContentLength > c.maxStateBytes {
			_ = resp.Body.Close() // no drain: it is too large
			return nil, fmt.Errorf("GET %s: %w", c.state.printable, &SizeError{Limit: c.maxStateBytes, ContentLength: resp.ContentLength})
		}
		return resp, nil
	case http.StatusNoContent, http.StatusNotFound:
		discard(resp)
		return nil, nil
	}
	return nil, statusError(resp)
}

// readBounded reads r to the end, failing with a *SizeError beyond limit
// bytes. With a known size it allocates exactly that size.
func readBounded(r io.Reader, contentLength, limit int64) ([]byte, error) {
	if contentLength > limit {
		return nil, &SizeError{Limit: limit, ContentLength: contentLength}
	}
	if contentLength >= 0 {
		data := make([]byte, contentLength)
		if _, err := io.ReadFull(r, data); err != nil {
			return nil, err
		}
		// net/http stops at Content-Length; reading to EOF releases the
		// connection for reuse.
		var probe [1]byte
		if n, _ := io.ReadFull(r, probe[:]); n > 0 {
			return nil, errors.New("the body is longer than its Content-Length")
		}
		return data, nil
	}
	return readChunks(io.LimitReader(r, limit+1), limit)
}

// readChunks reads a body of unknown size in chunks of growing size, then
// joins them: about twice the final size is allocated, where growing one
// slice would allocate several times it.
func readChunks(r io.Reader, limit int64) ([]byte, error) {
	const first, most = 32 << 10, 1 << 20
	var (
		chunks [][]byte
		total  int64
	)
	for size := first; ; size = min(size*2, most) {
		chunk := make([]byte, size)
		n, err := fill(r, chunk)
		chunks = append(chunks, chunk[:n])
		total += int64(n)
		if total > limit {
			return nil, &SizeError{Limit: limit, ContentLength: -1}
		}
		if err == io.EOF { //nolint:errorlint // io.EOF is returned unwrapped by contract
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if len(chunks) == 1 {
		return chunks[0], nil
	}
	data := make([]byte, 0, total)
	for _, chunk := range chunks {
		data = append(data, chunk...)
	}
	return data, nil
}

// fill reads into buf until it is full or r fails; unlike io.ReadFull it
// returns r's error (io.EOF included) as is.
func fill(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
