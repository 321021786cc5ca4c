package cos_test

import (
	"bytes"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/cos/costest"
)

// putHeaders records the headers of the PUT requests a Client sends, as
// they leave it (signed).
type putHeaders struct {
	mu   sync.Mutex
	seen []http.Header
}

func (p *putHeaders) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodPut {
			p.mu.Lock()
			p.seen = append(p.seen, req.Header.Clone())
			p.mu.Unlock()
		}
		return next.RoundTrip(req)
	})
}

func (p *putHeaders) all() []http.Header {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen
}

func TestWriteStateAndReadItBack(t *testing.T) {
	cases := map[string]struct {
		workspace string
		key       string // the object written
		previous  []byte // already there; nil: none
		data      []byte
	}{
		"default workspace": {
			workspace: cos.DefaultWorkspace, key: "env/terraform.tfstate",
			data: []byte(`{"version":4,"serial":3,"lineage":"l","outputs":{},"resources":[]}`),
		},
		"named workspace": {
			workspace: "staging", key: "env/staging/terraform.tfstate",
			data: []byte(`{"version":4,"serial":1,"lineage":"s","outputs":{},"resources":[]}`),
		},
		"over an existing state": {
			workspace: cos.DefaultWorkspace, key: "env/terraform.tfstate",
			previous: []byte(`{"version":4,"serial":9,"lineage":"l","outputs":{},"resources":[]}`),
			data:     []byte(`{"version":4,"serial":3,"lineage":"l","outputs":{},"resources":[]}`),
		},
		"large state": {
			workspace: cos.DefaultWorkspace, key: "env/terraform.tfstate",
			data: bigState(4 << 20),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t)
			if tc.previous != nil {
				srv.PutState(bucket, tc.key, tc.previous)
			}
			var puts putHeaders
			c, err := cos.New(baseConfig(), cos.WithBaseURL(srv.URL(bucket)), cos.WithWrapTransport(puts.wrap))
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			sum := md5.Sum(tc.data)

			if err := c.WriteState(ctx, tc.workspace, bytes.NewReader(tc.data), int64(len(tc.data)), sum); err != nil {
				t.Fatalf("WriteState: %v", err)
			}
			got, err := readState(ctx, c, tc.workspace)
			if err != nil {
				t.Fatalf("StreamState after WriteState: %v", err)
			}
			if !bytes.Equal(got, tc.data) {
				t.Errorf("StreamState read %d bytes with MD5 %x, want %d bytes with MD5 %x", len(got), md5.Sum(got), len(tc.data), sum)
			}
			// What Terraform checks when it reads the state.
			_, meta, ok := srv.Object(bucket, tc.key)
			if want := hex.EncodeToString(sum[:]); !ok || meta["x-cos-meta-md5"] != want {
				t.Errorf("object %s: found %t, x-cos-meta-md5 %q, want %q", tc.key, ok, meta["x-cos-meta-md5"], want)
			}

			type sent struct{ ACL, ContentMD5, MetaMD5, ContentLength, ForbidOverwrite string }
			want := []sent{{
				ACL: cos.DefaultACL, ContentMD5: base64.StdEncoding.EncodeToString(sum[:]),
				MetaMD5: hex.EncodeToString(sum[:]), ContentLength: strconv.Itoa(len(tc.data)),
			}}
			var gotHeaders []sent
			for _, h := range puts.all() {
				gotHeaders = append(gotHeaders, sent{
					ACL: h.Get("X-Cos-Acl"), ContentMD5: h.Get("Content-MD5"), MetaMD5: h.Get("X-Cos-Meta-Md5"),
					ContentLength: h.Get("Content-Length"), ForbidOverwrite: h.Get("X-Cos-Forbid-Overwrite"),
				})
			}
			if diff := cmp.Diff(want, gotHeaders); diff != "" {
				t.Errorf("PUT headers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteStateErrors(t *testing.T) {
	previous := []byte(`{"version":4,"serial":9,"lineage":"l","outputs":{},"resources":[]}`)
	data := []byte(`{"version":4,"serial":10,"lineage":"l","outputs":{},"resources":[]}`)
	// client returns a client of cfg changed by edit, pointed at the
	// listener of cfg's bucket.
	client := func(t *testing.T, srv *costest.Server, edit func(*cos.Config)) *cos.Client {
		t.Helper()
		cfg := baseConfig()
		edit(&cfg)
		return newClient(t, srv, cfg)
	}
	cases := map[string]struct {
		setup     func(*testing.T, *costest.Server) *cos.Client // nil: a client of baseConfig
		workspace string                                        // "": the default workspace
		size      int64                                         // 0: len(data)
		sum       *[16]byte                                     // nil: the MD5 of data
		is        error
		status    int    // of a *ResponseError; 0: none expected
		wantErr   string // in the message
		notIs     error
		notErr    string // not in the message
	}{
		"access denied": {
			setup: func(t *testing.T, srv *costest.Server) *cos.Client {
				t.Helper()
				srv.DenyAccess(bucket, true)
				return newClient(t, srv, baseConfig())
			},
			is: cos.ErrAccessDenied, status: http.StatusForbidden, wantErr: "AccessDenied",
		},
		"wrong secret key": {
			setup: func(t *testing.T, srv *costest.Server) *cos.Client {
				t.Helper()
				return client(t, srv, func(c *cos.Config) { c.SecretKey = "not-the-secret-key" })
			},
			is: cos.ErrAccessDenied, status: http.StatusForbidden,
		},
		"bucket missing": {
			setup: func(t *testing.T, srv *costest.Server) *cos.Client {
				t.Helper()
				return client(t, srv, func(c *cos.Config) { c.Bucket = "gone-1250000000" })
			},
			is: cos.ErrBucketNotFound, status: http.StatusNotFound,
		},
		"unreachable": {
			setup: func(t *testing.T, srv *costest.Server) *cos.Client {
				t.Helper()
				c := newClient(t, srv, baseConfig())
				srv.Close()
				return c
			},
			// A body the SDK cannot rewind is sent once.
			is: cos.ErrUnreachable, notErr: "attempts",
		},
		"MD5 differs": {
			sum:    &[16]byte{1, 2, 3},
			status: http.StatusBadRequest, wantErr: "BadDigest",
		},
		"body shorter than its size": {
			size:    int64(len(data)) + 10,
			wantErr: "10 of " + strconv.Itoa(len(data)+10) + " bytes missing", notIs: cos.ErrUnreachable,
		},
		"invalid workspace": {workspace: "..", is: cos.ErrInvalidConfig},
		"negative size":     {size: -1, wantErr: "negative size"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t)
			srv.PutState(bucket, "env/terraform.tfstate", previous)
			c := newClient(t, srv, baseConfig())
			if tc.setup != nil {
				c = tc.setup(t, srv)
			}
			size := tc.size
			if size == 0 {
				size = int64(len(data))
			}
			sum := md5.Sum(data)
			if tc.sum != nil {
				sum = *tc.sum
			}
			workspace := tc.workspace
			if workspace == "" {
				workspace = cos.DefaultWorkspace
			}

			err := c.WriteState(t.Context(), workspace, bytes.NewReader(data), size, sum)
			if err == nil {
				t.Fatal("WriteState succeeded")
			}
			assertNoSecrets(t, err)
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("WriteState() = %v, want %v", err, tc.is)
			}
			if tc.notIs != nil && errors.Is(err, tc.notIs) {
				t.Errorf("WriteState() = %v, must not match %v", err, tc.notIs)
			}
			if tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("WriteState() = %v, want it to contain %q", err, tc.wantErr)
			}
			if tc.notErr != "" && strings.Contains(err.Error(), tc.notErr) {
				t.Errorf("WriteState() = %v, want it not to contain %q", err, tc.notErr)
			}
			re, ok := errors.AsType[*cos.ResponseError](err)
			switch {
			case tc.status == 0 && ok:
				t.Errorf("WriteState() = %v, a *ResponseError; want none", err)
			case tc.status != 0 && (!ok || re.StatusCode != tc.status):
				t.Errorf("WriteState() = %v, want a *ResponseError with status %d", err, tc.status)
			}
			if got, _, _ := srv.Object(bucket, "env/terraform.tfstate"); !bytes.Equal(got, previous) {
				t.Errorf("the state object holds %q, want the previous state", got)
			}
		})
	}
}
