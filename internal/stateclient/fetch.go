package stateclient

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/infrastate/backend-operator/internal/statefile"
)

// StateSummary is what FetchSummary learns about a state.
type StateSummary struct {
	// Present is false when the server has no state.
	Present bool
	// SizeBytes is the size of the state in bytes.
	SizeBytes int64
	// Summary is the state's metadata; zero when Present is false.
	statefile.Summary
}

// FetchSummary reads the state's metadata without keeping the state: the
// body is streamed through statefile.ReadSummary, within
// Config.MaxStateBytes, and an encrypted state is decrypted with dec
// (nil: summarized from its clear-text serial and lineage). No state gives
// Present false and no error; other answers are handled as by
// StreamState. A malformed state, one in a format other than version 4
// and an encrypted state dec cannot open are errors.
func (c *Client) FetchSummary(ctx context.Context, dec *statefile.Decryption) (*StateSummary, error) {
	var sum statefile.Summary
	found, size, err := c.StreamState(ctx, func(r io.Reader) error {
		var err error
		sum, err = statefile.ReadSummary(r, dec)
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
// the limit, and a Content-Length above it is refused before read is
// called. 401 and 403 give a *StatusError matching ErrUnauthorized or
// ErrForbidden. An error of read is returned wrapped. On every error found
// is false and size 0, as with the COS client.
//
// It is the only way the client reads a state: there is no call that
// returns the whole body, so no state costs memory in proportion to its
// size unless read keeps it.
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
	resp, err := c.do(ctx, http.MethodGet, &c.state, nil)
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
