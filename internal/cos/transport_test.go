package cos_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/cos/costest"
)

// dialRecorder is a dial function that records the addresses it is asked
// for and then connects with connect, or refuses when connect is nil.
type dialRecorder struct {
	connect func(ctx context.Context, network, address string) (net.Conn, error)

	mu        sync.Mutex
	addresses []string
}

var errPolicy = errors.New("address refused by policy")

func (d *dialRecorder) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	d.mu.Lock()
	d.addresses = append(d.addresses, address)
	d.mu.Unlock()
	if d.connect == nil {
		return nil, errPolicy
	}
	return d.connect(ctx, network, address)
}

// dialed returns the distinct addresses dialed, sorted.
func (d *dialRecorder) dialed() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := slices.Clone(d.addresses)
	slices.Sort(out)
	return slices.Compact(out)
}

// readEverything makes every request a probe makes.
func readEverything(ctx context.Context, c *cos.Client) error {
	if err := c.CheckBucket(ctx); err != nil {
		return err
	}
	if _, err := readState(ctx, c, cos.DefaultWorkspace); err != nil {
		return err
	}
	if _, _, err := c.StreamState(ctx, "staging", func(r io.Reader) error { _, err := io.Copy(io.Discard, r); return err }); err != nil {
		return err
	}
	_, err := c.ReadLock(ctx, cos.DefaultWorkspace)
	return err
}

func TestWithDialContext(t *testing.T) {
	cases := map[string]struct {
		cfg        func(*cos.Config)
		baseURL    bool // point the client at srv.URL(bucket)
		refuse     bool // the dial function refuses every address
		wantDialed func(srv *costest.Server) []string
		wantErrs   []error
	}{
		"bucket URL": {
			cfg: func(c *cos.Config) {
				c.Endpoint, c.AllowHTTPEndpoint = "http://cos-internal.ap-shanghai.tencentcos.cn", true
			},
			wantDialed: func(*costest.Server) []string {
				return []string{bucket + ".cos-internal.ap-shanghai.tencentcos.cn:80"}
			},
		},
		"base URL": {
			baseURL:    true,
			wantDialed: func(srv *costest.Server) []string { return []string{srv.URL(bucket).Host} },
		},
		"refused by the dial function": {
			cfg: func(c *cos.Config) {
				c.Endpoint, c.AllowHTTPEndpoint = "http://cos-internal.ap-shanghai.tencentcos.cn", true
			},
			refuse: true,
			wantDialed: func(*costest.Server) []string {
				return []string{bucket + ".cos-internal.ap-shanghai.tencentcos.cn:80"}
			},
			wantErrs: []error{cos.ErrUnreachable},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if !tc.baseURL && os.Getenv("HTTP_PROXY")+os.Getenv("http_proxy") != "" {
				// The transport takes its proxy from the environment: the
				// dial function would see the proxy's address.
				t.Skip("an HTTP proxy is configured in the environment")
			}
			srv := newServer(t)
			srv.PutState(bucket, "env/terraform.tfstate", []byte(state))
			srv.PutState(bucket, "env/staging/terraform.tfstate", []byte(state))
			cfg := baseConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			dial := &dialRecorder{connect: srv.DialContext} // any address: the Host-routing listener
			if tc.baseURL {
				var d net.Dialer
				dial.connect = d.DialContext // the bucket's own listener, at the address asked for
			}
			if tc.refuse {
				dial.connect = nil
			}
			opts := []cos.Option{cos.WithDialContext(dial.DialContext)}
			if tc.baseURL {
				opts = append(opts, cos.WithBaseURL(srv.URL(bucket)))
			}
			c, err := cos.New(cfg, opts...)
			if err != nil {
				t.Fatal(err)
			}
			err = readEverything(context.Background(), c)
			if diff := errorsDiff(tc.wantErrs, err); diff != "" {
				t.Fatalf("reading = %v; sentinels (-want +got):\n%s", err, diff)
			}
			if tc.refuse {
				if !errors.Is(err, errPolicy) {
					t.Errorf("reading = %v, want the dial function's error", err)
				}
				if n := srv.Requests(); n != 0 {
					t.Errorf("the server got %d requests, want none", n)
				}
			}
			if diff := cmp.Diff(tc.wantDialed(srv), dial.dialed()); diff != "" {
				t.Errorf("dialed addresses (-want +got):\n%s", diff)
			}
			assertNoSecrets(t, err)
		})
	}
}

func TestWithDialContextExcludesWithHTTPClient(t *testing.T) {
	var d net.Dialer
	_, err := cos.New(baseConfig(), cos.WithDialContext(d.DialContext), cos.WithHTTPClient(&http.Client{}))
	if err == nil {
		t.Fatal("New(WithDialContext, WithHTTPClient) succeeded, want an error")
	}
}

// countingServer is a loopback server that answers 404 to everything and
// counts the requests it gets.
type countingServer struct {
	*httptest.Server
	requests atomic.Int64
}

func newCountingServer(t *testing.T) *countingServer {
	t.Helper()
	s := &countingServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		http.NotFound(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// redirectingServer answers every request with a 302 to location(r),
// with the Location repeated in the body, as redirect pages do.
func redirectingServer(t *testing.T, location func(r *http.Request) string) *url.URL {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		loc := location(r)
		w.Header().Set("Location", loc)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusFound)
		_, _ = io.WriteString(w, "<Error><Code>Found</Code><Message>moved to "+loc+"</Message></Error>")
	}))
	t.Cleanup(s.Close)
	u, _ := url.Parse(s.URL)
	return u
}

// TestRedirectsToAnotherHostAreRefused points the client at a loopback
// server that redirects every request to another loopback port: no
// request may reach it, whatever redirect policy the caller's http.Client
// has, and the error must not quote the Location.
func TestRedirectsToAnotherHostAreRefused(t *testing.T) {
	other := newCountingServer(t)
	otherHost := strings.TrimPrefix(other.URL, "http://")
	base := redirectingServer(t, func(r *http.Request) string {
		return other.URL + "/elsewhere" + r.URL.Path + "?q-signature=from-the-location"
	})
	var d net.Dialer
	clients := map[string][]cos.Option{
		"default": nil,
		"WithHTTPClient without a redirect policy": {cos.WithHTTPClient(&http.Client{})},
		"WithHTTPClient following every redirect": {cos.WithHTTPClient(&http.Client{
			CheckRedirect: func(*http.Request, []*http.Request) error { return nil },
		})},
		"WithDialContext": {cos.WithDialContext(d.DialContext)},
	}
	reads := map[string]func(*cos.Client) error{
		"CheckBucket": func(c *cos.Client) error { return c.CheckBucket(context.Background()) },
		"StreamState": func(c *cos.Client) error {
			_, _, err := c.StreamState(context.Background(), cos.DefaultWorkspace, func(io.Reader) error { return nil })
			return err
		},
		"ReadLock": func(c *cos.Client) error {
			_, err := c.ReadLock(context.Background(), cos.DefaultWorkspace)
			return err
		},
	}
	for clientName, opts := range clients {
		for readName, read := range reads {
			t.Run(clientName+"/"+readName, func(t *testing.T) {
				before := other.requests.Load()
				c, err := cos.New(baseConfig(), append([]cos.Option{cos.WithBaseURL(base)}, opts...)...)
				if err != nil {
					t.Fatal(err)
				}
				err = read(c)
				if n := other.requests.Load() - before; n != 0 {
					t.Errorf("the other host got %d requests, want none", n)
				}
				if diff := errorsDiff([]error{cos.ErrRedirect}, err); diff != "" {
					t.Fatalf("%s() = %v; sentinels (-want +got):\n%s", readName, err, diff)
				}
				for _, s := range []string{otherHost, "elsewhere", "from-the-location"} {
					if strings.Contains(err.Error(), s) {
						t.Errorf("%s() = %q quotes the Location (%q)", readName, err, s)
					}
				}
				assertNoSecrets(t, err)
			})
		}
	}
}

// TestSameHostRedirects checks that a redirect within the bucket's host is
// left to the caller's http.Client: not followed by default (ErrRedirect),
// followed when its CheckRedirect allows it.
func TestSameHostRedirects(t *testing.T) {
	data := []byte(state)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/moved" {
			http.Redirect(w, r, "/moved", http.StatusFound)
			return
		}
		w.Header().Set("X-Cos-Meta-Md5", md5hex(data))
		_, _ = w.Write(data)
	}))
	defer s.Close()
	base, _ := url.Parse(s.URL)
	cases := map[string]struct {
		opts     []cos.Option
		want     []byte
		wantErrs []error
	}{
		"default": {wantErrs: []error{cos.ErrRedirect}},
		"WithHTTPClient following redirects": {
			opts: []cos.Option{cos.WithHTTPClient(&http.Client{
				CheckRedirect: func(*http.Request, []*http.Request) error { return nil },
			})},
			want: data,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := cos.New(baseConfig(), append([]cos.Option{cos.WithBaseURL(base)}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			got, err := readState(context.Background(), c, cos.DefaultWorkspace)
			if diff := errorsDiff(tc.wantErrs, err); diff != "" {
				t.Fatalf("StreamState() = %v; sentinels (-want +got):\n%s", err, diff)
			}
			if diff := cmp.Diff(string(tc.want), string(got)); diff != "" {
				t.Errorf("StreamState() read (-want +got):\n%s", diff)
			}
		})
	}
}
