package costest

import (
	"context"
	"crypto/md5" // x-cos-meta-md5 and ETag are MD5 by definition
	"encoding/hex"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a COS protocol server for tests. Create it with NewServer. All
// methods are safe for concurrent use, also while requests are served.
type Server struct {
	main *httptest.Server // routes by Host header

	mu        sync.Mutex
	closed    bool
	perBucket map[string]*httptest.Server // URL(bucket) listeners
	creds     map[string]credential       // by secret ID
	buckets   map[string]map[string]*object
	denied    map[string]bool
	readOnly  map[string]bool  // DenyWrites
	quotas    map[string]int64 // SetQuota: the most object bytes a bucket may hold
	failLeft  int              // requests still to fail with failWith
	failWith  int
	requests  int
	log       []Request
	now       func() time.Time
}

// object is a stored object.
type object struct {
	data        []byte
	meta        map[string]string // lower-case x-cos-meta-* header names
	contentType string
	etag        string // quoted hex MD5
	modified    time.Time
}

// Request is what the server saw of one request, for assertions.
type Request struct {
	// Method is the HTTP method.
	Method string
	// Host is the Host header.
	Host string
	// Path is the decoded URL path.
	Path string
	// Query is the raw query string.
	Query string
	// Bucket is the bucket the request addressed, "" when none.
	Bucket string
	// SecretID is the q-ak of a correctly signed request, "" otherwise.
	SecretID string
	// SecurityToken is the x-cos-security-token header.
	SecurityToken string
	// Signature is the q-signature of the Authorization header, valid or
	// not, "" when the header is missing or malformed: what a client must
	// never print.
	Signature string
	// Status is the answer's status code.
	Status int
}

// NewServer starts a server. When tb is not nil the server is closed in
// tb's cleanup; otherwise call Close. It starts with no buckets and no
// credentials.
func NewServer(tb testing.TB) *Server { //nolint:thelper // tb is optional (nil in hack/cosdouble) and only closes the server
	s := &Server{
		perBucket: map[string]*httptest.Server{},
		creds:     map[string]credential{},
		buckets:   map[string]map[string]*object{},
		denied:    map[string]bool{},
		readOnly:  map[string]bool{},
		quotas:    map[string]int64{},
		now:       time.Now,
	}
	s.main = httptest.NewServer(s.handler(""))
	if tb != nil {
		tb.Cleanup(s.Close)
	}
	return s
}

// Close stops every listener of the server. Later requests are refused
// (connection refused), which is how tests make COS unreachable.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	servers := []*httptest.Server{s.main}
	for _, l := range s.perBucket {
		servers = append(servers, l)
	}
	s.mu.Unlock()
	for _, l := range servers {
		l.Close()
	}
}

// URL returns the base URL to pass to cos.WithBaseURL for bucket: the
// address of a loopback listener serving only that bucket, started on the
// first call. The bucket need not exist: requests then get NoSuchBucket.
// After Close it returns the closed listener's address (or the main one's).
func (s *Server) URL(bucket string) *url.URL {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.perBucket[bucket]
	if !ok {
		if s.closed {
			return mustParse(s.main.URL)
		}
		l = httptest.NewServer(s.handler(bucket))
		s.perBucket[bucket] = l
	}
	return mustParse(l.URL)
}

func mustParse(raw string) *url.URL {
	u, err := url.Parse(raw)
	if err != nil {
		panic(err)
	}
	return u
}

// HTTPClient returns a client whose every connection goes to the server's
// main listener, whatever host the request URL names. The main listener
// routes by Host header, so a cos.Client built from a real bucket URL with
// cos.WithHTTPClient(srv.HTTPClient()) reaches the server, as long as the
// URL is plain http (an endpoint such as http://cos-internal.<region>.tencentcos.cn).
func (s *Server) HTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: s.DialContext}}
}

// DialContext connects to the server's main listener, whatever address it
// is asked for: the dial function HTTPClient uses, for tests that install
// their own (cos.WithDialContext). It has the signature of
// net.Dialer.DialContext.
func (s *Server) DialContext(ctx context.Context, network, _ string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, s.main.Listener.Addr().String())
}

// AddCredentials makes the server accept requests signed with this
// permanent key.
func (s *Server) AddCredentials(secretID, secretKey string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.creds[secretID] = credential{secretKey: secretKey}
}

// AddTemporaryCredentials makes the server accept requests signed with
// this temporary key that also carry token in x-cos-security-token.
func (s *Server) AddTemporaryCredentials(secretID, secretKey, token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.creds[secretID] = credential{secretKey: secretKey, token: token}
}

// CreateBucket creates an empty bucket; an existing bucket is kept as is.
func (s *Server) CreateBucket(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bucketLocked(name)
}

func (s *Server) bucketLocked(name string) map[string]*object {
	b, ok := s.buckets[name]
	if !ok {
		b = map[string]*object{}
		s.buckets[name] = b
	}
	return b
}

// PutObject stores an object, creating the bucket if needed. meta holds
// x-cos-meta-* metadata; a name without that prefix gets it ("md5" is
// x-cos-meta-md5). Unlike PutState it adds no checksum. It is the test's
// own write: neither SetQuota nor DenyWrites refuses it, so a test can
// fill a bucket up to or beyond its quota.
func (s *Server) PutObject(bucket, key string, data []byte, meta map[string]string) {
	m := map[string]string{}
	for k, v := range meta {
		k = strings.ToLower(k)
		if !strings.HasPrefix(k, metaPrefix) {
			k = metaPrefix + k
		}
		m[k] = v
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.storeLocked(bucket, key, &object{data: append([]byte(nil), data...), meta: m, contentType: "application/octet-stream"})
}

// PutState stores data as Terraform's cos backend writes a state or lock
// object: with x-cos-meta-md5 set to the hex MD5 of data.
func (s *Server) PutState(bucket, key string, data []byte) {
	sum := md5.Sum(data)
	s.PutObject(bucket, key, data, map[string]string{"md5": hex.EncodeToString(sum[:])})
}

func (s *Server) storeLocked(bucket, key string, o *object) {
	sum := md5.Sum(o.data)
	o.etag = `"` + hex.EncodeToString(sum[:]) + `"`
	o.modified = s.now().UTC()
	s.bucketLocked(bucket)[key] = o
}

// DeleteObject removes an object if it exists.
func (s *Server) DeleteObject(bucket, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.buckets[bucket], key)
}

// Object returns a copy of a stored object's body and x-cos-meta-*
// metadata, and whether it exists.
func (s *Server) Object(bucket, key string) (data []byte, meta map[string]string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.buckets[bucket][key]
	if !ok {
		return nil, nil, false
	}
	meta = make(map[string]string, len(o.meta))
	maps.Copy(meta, o.meta)
	return append([]byte(nil), o.data...), meta, true
}

// Requests returns how many requests the server received, on any
// listener, including refused ones.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// RequestLog returns what the server saw of every request so far.
func (s *Server) RequestLog() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// FailNext answers the next n requests with status (503 gives COS's
// ServiceUnavailable, 500 InternalError, 507 InsufficientStorage) before
// looking at them. Note that the SDK retries 5xx answers to requests
// without a body or with a seekable one: one call can use up to three
// requests. internal/cos's PutObject streams its body and is never
// retried.
func (s *Server) FailNext(n, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failLeft, s.failWith = n, status
}

// DenyAccess makes correctly signed requests to bucket fail with 403
// AccessDenied while deny is true, as when the key lacks permission.
func (s *Server) DenyAccess(bucket string, deny bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.denied[bucket] = deny
}

// DenyWrites makes correctly signed requests to bucket that would change
// it (PUT and DELETE) fail with 403 AccessDenied while deny is true, as
// when the key may only read; GET and HEAD of objects and listings still
// work. DenyAccess refuses reads too.
func (s *Server) DenyWrites(bucket string, deny bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readOnly[bucket] = deny
}

// SetQuota limits the bytes the objects of bucket may hold together to
// maxBytes; 0 (or less) removes the limit. A PUT Object that would take
// the bucket's total above maxBytes (an object it replaces no longer
// counts) is refused with 507 Insufficient Storage and the code
// InsufficientStorage, and stores nothing: COS documents no quota error
// of its own, so the double answers as a full store does (MinIO's
// XMinioStorageFull is also a 507). Objects already stored are kept,
// also when a lower quota leaves the bucket above it; deleting some makes
// room again.
func (s *Server) SetQuota(bucket string, maxBytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if maxBytes <= 0 {
		delete(s.quotas, bucket)
		return
	}
	s.quotas[bucket] = maxBytes
}

// SetClock replaces the clock the server checks signature times against
// (time.Now by default), to test expired or future signatures.
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// ServiceURL returns the address of the server's main listener, which
// tells buckets apart by Host header as COS does: the URL to pass to
// cos.WithServiceURL (or the manager's --cos-service-url) so that clients
// of every bucket reach the server.
func (s *Server) ServiceURL() *url.URL { return mustParse(s.main.URL) }
