package cos_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/cos/costest"
	"github.com/infrastate/backend-operator/internal/testtools"
)

// consumed is what a read function passed to StreamState saw.
type consumed struct {
	called  bool
	data    string
	readErr error // the error that ended its reading, nil at a clean EOF
}

// sameError compares the errors a read function met: equal when both are
// nil or one wraps the other.
var sameError = cmp.Comparer(func(a, b error) bool {
	return (a == nil) == (b == nil) && (a == nil || errors.Is(a, b) || errors.Is(b, a))
})

// readState reads the whole state object of workspace through
// StreamState, for tests that look at the body: nil and no error when
// there is none. The package itself has no such call, so that no caller
// holds a whole state.
func readState(ctx context.Context, c *cos.Client, workspace string) ([]byte, error) {
	return testtools.ReadStream(func(read func(io.Reader) error) (bool, int64, error) {
		return c.StreamState(ctx, workspace, read)
	})
}

// readAll is a read function that reads to the end, as a parser that
// checks for trailing data does.
func readAll(got *consumed) func(io.Reader) error {
	return func(r io.Reader) error {
		got.called = true
		b, err := io.ReadAll(r)
		got.data, got.readErr = string(b), err
		return err
	}
}

// readFirstByte is a read function that stops early and succeeds, as a
// streaming parser that found what it wanted does.
func readFirstByte(got *consumed) func(io.Reader) error {
	return func(r io.Reader) error {
		got.called = true
		b := make([]byte, 1)
		n, err := r.Read(b)
		got.data, got.readErr = string(b[:n]), err
		return nil
	}
}

// errParse is the error of failParsing.
var errParse = errors.New("not a state")

// failParsing is a read function that reads one byte and fails, as a
// parser meeting garbage does.
func failParsing(got *consumed) func(io.Reader) error {
	return func(r io.Reader) error {
		_ = readFirstByte(got)(r)
		return errParse
	}
}

// decodeJSON is a read function that decodes one JSON value and stops,
// as encoding/json's Decoder does: it never looks for the end.
func decodeJSON(got *consumed) func(io.Reader) error {
	return func(r io.Reader) error {
		got.called = true
		var v map[string]any
		err := json.NewDecoder(r).Decode(&v)
		got.data, got.readErr = strconv.Itoa(len(v)), err
		return err
	}
}

func TestStreamState(t *testing.T) {
	data := []byte(state)
	put := func(key string, meta map[string]string) func(*costest.Server, *cos.Config) {
		return func(srv *costest.Server, _ *cos.Config) { srv.PutObject(bucket, key, data, meta) }
	}
	size := int64(len(data))
	good := map[string]string{"md5": md5hex(data)}
	tampered := map[string]string{"md5": md5hex([]byte("other"))}
	cases := map[string]struct {
		workspace string
		maxBytes  int64
		setup     func(*costest.Server, *cos.Config)
		read      func(*consumed) func(io.Reader) error
		wantFound bool
		wantSize  int64 // when found
		want      consumed
		wantErrs  []error
		wantIs    error // an error besides the sentinels the result must match
	}{
		"default workspace": {
			setup: put("env/terraform.tfstate", good), read: readAll,
			wantFound: true, wantSize: size, want: consumed{called: true, data: state},
		},
		"named workspace": {
			workspace: "staging", setup: put("env/staging/terraform.tfstate", good), read: readAll,
			wantFound: true, wantSize: size, want: consumed{called: true, data: state},
		},
		"custom key, no prefix": {
			setup: func(srv *costest.Server, cfg *cos.Config) {
				cfg.Prefix, cfg.Key = "", "app.tfstate"
				srv.PutState(bucket, "app.tfstate", data)
			},
			read:      readAll,
			wantFound: true, wantSize: size, want: consumed{called: true, data: state},
		},
		"missing: read is not called": {
			setup: put("env/other/terraform.tfstate", good), read: readAll,
		},
		"empty object": {
			setup: func(srv *costest.Server, _ *cos.Config) { srv.PutState(bucket, "env/terraform.tfstate", nil) },
			read:  readAll, wantFound: true, want: consumed{called: true},
		},
		"stops early, body matches": {
			setup: put("env/terraform.tfstate", good), read: readFirstByte,
			wantFound: true, wantSize: size, want: consumed{called: true, data: "{"},
		},
		"JSON decoder, body matches": {
			setup: put("env/terraform.tfstate", good), read: decodeJSON,
			wantFound: true, wantSize: size, want: consumed{called: true, data: "7"},
		},
		"tampered: the reader fails at the end instead of io.EOF": {
			setup: put("env/terraform.tfstate", tampered), read: readAll,
			want:     consumed{called: true, data: state, readErr: cos.ErrChecksumMismatch},
			wantErrs: []error{cos.ErrChecksumMismatch},
		},
		"tampered, read stops early: the rest is checked": {
			setup: put("env/terraform.tfstate", tampered), read: readFirstByte,
			want:     consumed{called: true, data: "{"},
			wantErrs: []error{cos.ErrChecksumMismatch},
		},
		"tampered, JSON decoder": {
			setup: put("env/terraform.tfstate", tampered), read: decodeJSON,
			want:     consumed{called: true, data: "7"},
			wantErrs: []error{cos.ErrChecksumMismatch},
		},
		"read fails, body matches: read's error": {
			setup: put("env/terraform.tfstate", good), read: failParsing,
			want:   consumed{called: true, data: "{"},
			wantIs: errParse,
		},
		"read fails on a tampered body: the mismatch": {
			setup: put("env/terraform.tfstate", tampered), read: failParsing,
			want:     consumed{called: true, data: "{"},
			wantErrs: []error{cos.ErrChecksumMismatch},
		},
		"upper-case md5, as Terraform compares": {
			setup: put("env/terraform.tfstate", map[string]string{"md5": strings.ToUpper(md5hex(data))}), read: readAll,
			want:     consumed{called: true, data: state, readErr: cos.ErrChecksumMismatch},
			wantErrs: []error{cos.ErrChecksumMismatch},
		},
		"no md5: read is not called": {
			setup: put("env/terraform.tfstate", nil), read: readAll,
			wantErrs: []error{cos.ErrChecksumMissing},
		},
		"malformed md5: read is not called": {
			setup: put("env/terraform.tfstate", map[string]string{"md5": "d41d8cd98f00b204"}), read: readAll,
			wantErrs: []error{cos.ErrChecksumMissing},
		},
		"exactly the limit": {
			maxBytes: int64(len(data)), setup: put("env/terraform.tfstate", good), read: readAll,
			wantFound: true, wantSize: size, want: consumed{called: true, data: state},
		},
		"Content-Length above the limit: read is not called": {
			maxBytes: int64(len(data)) - 1, setup: put("env/terraform.tfstate", good), read: readAll,
			wantErrs: []error{cos.ErrStateTooLarge},
		},
		"missing bucket": {
			setup: func(_ *costest.Server, cfg *cos.Config) { cfg.Bucket = "missing-1250000000" }, read: readAll,
			wantErrs: []error{cos.ErrBucketNotFound},
		},
		"access denied": {
			setup: func(srv *costest.Server, _ *cos.Config) {
				srv.PutState(bucket, "env/terraform.tfstate", data)
				srv.DenyAccess(bucket, true)
			},
			read:     readAll,
			wantErrs: []error{cos.ErrAccessDenied},
		},
		"blank workspace": {
			workspace: " ", read: readAll,
			wantErrs: []error{cos.ErrInvalidConfig},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t)
			cfg := baseConfig()
			cfg.MaxStateBytes = tc.maxBytes
			if tc.setup != nil {
				tc.setup(srv, &cfg)
			}
			workspace := tc.workspace
			if workspace == "" {
				workspace = cos.DefaultWorkspace
			}
			var got consumed
			found, size, err := newClient(t, srv, cfg).StreamState(context.Background(), workspace, tc.read(&got))
			if diff := errorsDiff(tc.wantErrs, err); diff != "" {
				t.Fatalf("StreamState() error = %v; sentinels (-want +got):\n%s", err, diff)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("StreamState() error = %v, want %v", err, tc.wantIs)
			}
			if found != tc.wantFound {
				t.Errorf("StreamState() found = %t, want %t", found, tc.wantFound)
			}
			if size != tc.wantSize {
				t.Errorf("StreamState() size = %d, want %d", size, tc.wantSize)
			}
			if diff := cmp.Diff(tc.want, got, sameError, cmp.AllowUnexported(consumed{})); diff != "" {
				t.Errorf("read saw (-want +got):\n%s", diff)
			}
			assertNoSecrets(t, err)
		})
	}
}

// chunkedState serves data with its checksum and no Content-Length,
// flushing every byte, so that only the stream can tell its size.
func chunkedState(t *testing.T, data []byte) *url.URL {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Cos-Meta-Md5", md5hex(data))
		w.WriteHeader(http.StatusOK)
		for _, b := range data {
			_, _ = w.Write([]byte{b})
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(s.Close)
	u, _ := url.Parse(s.URL)
	return u
}

// TestStreamStateLimitWhileStreaming checks the size limit on a body whose
// size is not announced: the reader hands over at most the limit, then
// fails.
func TestStreamStateLimitWhileStreaming(t *testing.T) {
	data := []byte(state)
	base := chunkedState(t, data)
	cases := map[string]struct {
		limit    int64
		want     consumed
		wantErrs []error
	}{
		"within the limit": {
			limit: int64(len(data)),
			want:  consumed{called: true, data: state},
		},
		"above the limit": {
			limit:    8,
			want:     consumed{called: true, data: state[:8], readErr: cos.ErrStateTooLarge},
			wantErrs: []error{cos.ErrStateTooLarge},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := cos.New(cos.Config{Bucket: bucket, Region: region, MaxStateBytes: tc.limit}, cos.WithBaseURL(base))
			if err != nil {
				t.Fatal(err)
			}
			var got consumed
			_, _, err = c.StreamState(context.Background(), cos.DefaultWorkspace, readAll(&got))
			if diff := errorsDiff(tc.wantErrs, err); diff != "" {
				t.Errorf("StreamState() error = %v; sentinels (-want +got):\n%s", err, diff)
			}
			if diff := cmp.Diff(tc.want, got, sameError, cmp.AllowUnexported(consumed{})); diff != "" {
				t.Errorf("read saw (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStreamStateConnectionLost cuts the connection in the middle of the
// body: the reader fails with ErrUnreachable, and so does StreamState.
func TestStreamStateConnectionLost(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { cutShort(w, r, "", "") }))
	defer s.Close()
	base, _ := url.Parse(s.URL)
	c, err := cos.New(cos.Config{Bucket: bucket, Region: region}, cos.WithBaseURL(base))
	if err != nil {
		t.Fatal(err)
	}
	var got consumed
	found, _, err := c.StreamState(context.Background(), cos.DefaultWorkspace, readAll(&got))
	if diff := errorsDiff([]error{cos.ErrUnreachable}, err); diff != "" || found {
		t.Errorf("StreamState() = %t, %v; want false and (-want +got):\n%s", found, err, diff)
	}
	want := consumed{called: true, data: state[:10], readErr: cos.ErrUnreachable}
	if diff := cmp.Diff(want, got, sameError, cmp.AllowUnexported(consumed{})); diff != "" {
		t.Errorf("read saw (-want +got):\n%s", diff)
	}
}

// TestStreamStateHandsOverTheBodyAsItArrives serves the first half of a
// state and holds the rest back until read has seen that half: a client
// that buffered the body before calling read would never get there.
func TestStreamStateHandsOverTheBodyAsItArrives(t *testing.T) {
	data := []byte(state)
	half := len(data) / 2
	firstHalfRead := make(chan struct{})
	const patience = 10 * time.Second
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Cos-Meta-Md5", md5hex(data))
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(data[:half])
		w.(http.Flusher).Flush()
		select {
		case <-firstHalfRead:
			_, _ = w.Write(data[half:])
		case <-time.After(patience):
		case <-r.Context().Done():
		}
	}))
	defer s.Close()
	base, _ := url.Parse(s.URL)
	c, err := cos.New(cos.Config{Bucket: bucket, Region: region}, cos.WithBaseURL(base))
	if err != nil {
		t.Fatal(err)
	}
	var rest []byte
	found, _, err := c.StreamState(context.Background(), cos.DefaultWorkspace, func(r io.Reader) error {
		first := make([]byte, half)
		if _, err := io.ReadFull(r, first); err != nil {
			return err
		}
		if !bytes.Equal(first, data[:half]) {
			t.Errorf("first half = %q, want %q", first, data[:half])
		}
		close(firstHalfRead)
		var err error
		rest, err = io.ReadAll(r)
		return err
	})
	if err != nil || !found {
		t.Fatalf("StreamState() = %t, %v; want true, nil", found, err)
	}
	if diff := cmp.Diff(string(data[half:]), string(rest)); diff != "" {
		t.Errorf("second half (-want +got):\n%s", diff)
	}
}

// bigState is a state-shaped body of n bytes, built without holding a
// second copy anywhere.
func bigState(n int) []byte {
	const head = `{"version":4,"serial":1,"lineage":"l","outputs":{"blob":{"value":"`
	const tail = `","type":"string"}},"resources":[]}`
	b := make([]byte, n)
	copy(b, head)
	for i := len(head); i < n-len(tail); i++ {
		b[i] = 'a' + byte(i%26)
	}
	copy(b[n-len(tail):], tail)
	return b
}

// TestStreamStateAllocatesFarLessThanTheState reads a state far larger
// than any buffer on the way and checks that the bytes allocated during
// the call, client and test server together, stay far below its size.
func TestStreamStateAllocatesFarLessThanTheState(t *testing.T) {
	const size = 16 << 20
	data := bigState(size)
	srv := newServer(t)
	srv.PutState(bucket, "env/terraform.tfstate", data)
	c := newClient(t, srv, baseConfig())
	want := md5.Sum(data)
	// data is dead from here on: the test's own copy plays no part in what
	// is measured.

	h := md5.New()
	var n int64
	var found bool
	var err error
	allocated := testtools.AllocatedBy(func() {
		found, _, err = c.StreamState(context.Background(), cos.DefaultWorkspace, func(r io.Reader) error {
			var copyErr error
			n, copyErr = io.Copy(h, r)
			return copyErr
		})
	})
	if err != nil || !found {
		t.Fatalf("StreamState() = %t, %v; want true, nil", found, err)
	}
	if got := h.Sum(nil); n != size || !bytes.Equal(got, want[:]) {
		t.Fatalf("read %d bytes with MD5 %x, want %d bytes with MD5 %x", n, got, size, want)
	}
	if limit := uint64(size / 16); allocated > limit {
		t.Errorf("allocated %d bytes while streaming a %d byte state, want at most %d", allocated, size, limit)
	}
	t.Logf("allocated %d bytes while streaming a %d byte state", allocated, size)
}
