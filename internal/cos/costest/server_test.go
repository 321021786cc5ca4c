package costest_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/tencentyun/cos-go-sdk-v5"

	"github.com/infrastate/backend-operator/internal/cos/costest"
)

const (
	bucket    = "states-1250000000"
	secretID  = "AKIDexample"
	secretKey = "example-secret-key"
)

// roundTripFunc adapts a function to http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// newSDK returns an SDK client signing with id and key (and token) whose
// requests go to base through next (http.DefaultTransport when nil).
func newSDK(base *url.URL, id, key, token string, next http.RoundTripper) *sdk.Client {
	return sdk.NewClient(&sdk.BaseURL{BucketURL: base}, &http.Client{
		Timeout:   10 * time.Second,
		Transport: &sdk.AuthorizationTransport{SecretID: id, SecretKey: key, SessionToken: token, Transport: next},
	})
}

func newServer(t *testing.T) *costest.Server {
	t.Helper()
	srv := costest.NewServer(t)
	srv.AddCredentials(secretID, secretKey)
	srv.CreateBucket(bucket)
	return srv
}

// cosCode returns the status and COS error code of err, or 200 and "".
func cosCode(t *testing.T, err error) (int, string) {
	t.Helper()
	if err == nil {
		return http.StatusOK, ""
	}
	var er *sdk.ErrorResponse
	if !errors.As(err, &er) {
		t.Fatalf("not a COS error answer: %v", err)
	}
	return er.Response.StatusCode, er.Code
}

func TestObjectLifecycleThroughSDK(t *testing.T) {
	srv := newServer(t)
	c := newSDK(srv.URL(bucket), secretID, secretKey, "", nil)
	ctx := context.Background()
	body := []byte(`{"version":4}`)

	_, err := c.Object.Put(ctx, "env/terraform.tfstate", bytes.NewReader(body), &sdk.ObjectPutOptions{
		ObjectPutHeaderOptions: &sdk.ObjectPutHeaderOptions{
			ContentType: "application/json",
			XCosMetaXXX: &http.Header{"X-Cos-Meta-Md5": {"0123456789abcdef0123456789abcdef"}},
		},
	})
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	data, meta, ok := srv.Object(bucket, "env/terraform.tfstate")
	if !ok || !bytes.Equal(data, body) {
		t.Fatalf("stored %q, %t; want %q", data, ok, body)
	}
	if diff := cmp.Diff(map[string]string{"x-cos-meta-md5": "0123456789abcdef0123456789abcdef"}, meta); diff != "" {
		t.Errorf("stored metadata (-want +got):\n%s", diff)
	}

	resp, err := c.Object.Get(ctx, "env/terraform.tfstate", nil)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	got, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if !bytes.Equal(got, body) {
		t.Errorf("Get body = %q, want %q", got, body)
	}
	sum := md5.Sum(body)
	for h, want := range map[string]string{
		"X-Cos-Meta-Md5": "0123456789abcdef0123456789abcdef",
		"Content-Type":   "application/json",
		"ETag":           `"` + hex.EncodeToString(sum[:]) + `"`,
	} {
		if v := resp.Header.Get(h); v != want {
			t.Errorf("Get header %s = %q, want %q", h, v, want)
		}
	}
	if resp.Header.Get("X-Cos-Request-Id") == "" {
		t.Error("Get has no x-cos-request-id")
	}

	if _, err := c.Object.Head(ctx, "env/terraform.tfstate", nil); err != nil {
		t.Errorf("Head: %v", err)
	}
	list, _, err := c.Bucket.Get(ctx, &sdk.BucketGetOptions{Prefix: "env"})
	if err != nil {
		t.Fatalf("Bucket.Get: %v", err)
	}
	if len(list.Contents) != 1 || list.Contents[0].Key != "env/terraform.tfstate" || list.Contents[0].ETag != resp.Header.Get("ETag") {
		t.Errorf("listing = %+v, want the object with ETag %s", list.Contents, resp.Header.Get("ETag"))
	}

	if _, err := c.Object.Delete(ctx, "env/terraform.tfstate"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	_, err = c.Object.Get(ctx, "env/terraform.tfstate", nil)
	if status, code := cosCode(t, err); status != http.StatusNotFound || code != "NoSuchKey" {
		t.Errorf("Get after Delete = %d %s, want 404 NoSuchKey", status, code)
	}
	if !sdk.IsNotFoundError(err) {
		t.Errorf("IsNotFoundError(%v) = false", err)
	}
}

func TestPutStateSetsTerraformChecksum(t *testing.T) {
	srv := costest.NewServer(t)
	srv.PutState(bucket, "terraform.tfstate", []byte("hello"))
	_, meta, ok := srv.Object(bucket, "terraform.tfstate")
	if !ok {
		t.Fatal("PutState stored nothing")
	}
	if diff := cmp.Diff(map[string]string{"x-cos-meta-md5": "5d41402abc4b2a76b9719d911017c592"}, meta); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	srv.DeleteObject(bucket, "terraform.tfstate")
	if _, _, ok := srv.Object(bucket, "terraform.tfstate"); ok {
		t.Error("DeleteObject left the object")
	}
}

// TestRefusesTamperedRequests sends requests through a transport that
// changes them after the SDK signed them: the server must refuse each.
func TestRefusesTamperedRequests(t *testing.T) {
	cases := map[string]struct {
		id, key string
		tamper  func(*http.Request)
		status  int
		code    string
	}{
		"untouched":      {id: secretID, key: secretKey, status: http.StatusOK},
		"anonymous":      {status: http.StatusForbidden, code: "AccessDenied"},
		"unknown key id": {id: "AKIDunknown", key: secretKey, status: http.StatusForbidden, code: "InvalidAccessKeyId"},
		"wrong secret":   {id: secretID, key: "another-secret", status: http.StatusForbidden, code: "SignatureDoesNotMatch"},
		"signature edited": {id: secretID, key: secretKey, tamper: func(r *http.Request) {
			h := r.Header.Get("Authorization")
			i := strings.Index(h, "q-signature=") + len("q-signature=")
			r.Header.Set("Authorization", h[:i]+strings.Repeat("0", len(h)-i))
		}, status: http.StatusForbidden, code: "SignatureDoesNotMatch"},
		"prefix edited": {id: secretID, key: secretKey, tamper: func(r *http.Request) {
			r.URL.RawQuery = strings.Replace(r.URL.RawQuery, "prefix=env", "prefix=other", 1)
		}, status: http.StatusForbidden, code: "SignatureDoesNotMatch"},
		"host edited": {id: secretID, key: secretKey, tamper: func(r *http.Request) {
			r.Host = "other-1250000000.cos.ap-guangzhou.myqcloud.com"
		}, status: http.StatusForbidden, code: "SignatureDoesNotMatch"},
		"header removed": {id: secretID, key: secretKey, tamper: func(r *http.Request) {
			r.Header.Del("Authorization")
		}, status: http.StatusForbidden, code: "AccessDenied"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t)
			next := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if tc.tamper != nil {
					tc.tamper(r)
				}
				return http.DefaultTransport.RoundTrip(r)
			})
			c := newSDK(srv.URL(bucket), tc.id, tc.key, "", next)
			_, _, err := c.Bucket.Get(context.Background(), &sdk.BucketGetOptions{Prefix: "env", MaxKeys: 1})
			status, code := cosCode(t, err)
			if status != tc.status || code != tc.code {
				t.Errorf("answer = %d %s, want %d %s", status, code, tc.status, tc.code)
			}
		})
	}
}

func TestSignatureTimes(t *testing.T) {
	cases := map[string]struct {
		skew   time.Duration // server clock minus real time
		status int
		code   string
	}{
		"in time":         {skew: 30 * time.Minute, status: http.StatusOK},
		"expired":         {skew: 2 * time.Hour, status: http.StatusForbidden, code: "AccessDenied"},
		"from the future": {skew: -time.Hour, status: http.StatusForbidden, code: "RequestTimeTooSkewed"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t)
			srv.SetClock(func() time.Time { return time.Now().Add(tc.skew) })
			c := newSDK(srv.URL(bucket), secretID, secretKey, "", nil)
			_, _, err := c.Bucket.Get(context.Background(), nil)
			if status, code := cosCode(t, err); status != tc.status || code != tc.code {
				t.Errorf("answer = %d %s, want %d %s", status, code, tc.status, tc.code)
			}
		})
	}
}

func TestSecurityToken(t *testing.T) {
	cases := map[string]struct {
		token  string
		status int
		code   string
	}{
		"right token": {token: "session-token", status: http.StatusOK},
		"no token":    {status: http.StatusForbidden, code: "InvalidAccessKeyId"},
		"wrong token": {token: "other-token", status: http.StatusForbidden, code: "InvalidAccessKeyId"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t)
			srv.AddTemporaryCredentials("AKIDtemporary", "temporary-secret", "session-token")
			c := newSDK(srv.URL(bucket), "AKIDtemporary", "temporary-secret", tc.token, nil)
			_, _, err := c.Bucket.Get(context.Background(), nil)
			if status, code := cosCode(t, err); status != tc.status || code != tc.code {
				t.Errorf("answer = %d %s, want %d %s", status, code, tc.status, tc.code)
			}
			if log := srv.RequestLog(); log[len(log)-1].SecurityToken != tc.token {
				t.Errorf("server saw token %q, want %q", log[len(log)-1].SecurityToken, tc.token)
			}
		})
	}
}

func TestRequestLogRecordsTheSignature(t *testing.T) {
	cases := map[string]struct {
		secretID, secretKey string
		wantSigned          bool
	}{
		"signed":               {secretID: secretID, secretKey: secretKey, wantSigned: true},
		"signed, wrong secret": {secretID: secretID, secretKey: "not-the-secret", wantSigned: true},
		"anonymous, no header": {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t)
			c := newSDK(srv.URL(bucket), tc.secretID, tc.secretKey, "", nil)
			_, _, _ = c.Bucket.Get(context.Background(), nil)
			sig := srv.RequestLog()[0].Signature
			if signed := regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(sig); signed != tc.wantSigned {
				t.Errorf("Signature = %q, want a q-signature: %t", sig, tc.wantSigned)
			}
		})
	}
}

// TestForbidOverwrite checks that PUT Object with x-cos-forbid-overwrite:
// true creates a missing object but refuses, with COS's 409, to replace one
// that exists, and that without the header (or with false) it replaces it.
func TestForbidOverwrite(t *testing.T) {
	const key = "env/terraform.tfstate.tflock"
	cases := map[string]struct {
		existing []byte // nil: no object before the PUT
		forbid   string // x-cos-forbid-overwrite, "" for none
		status   int
		code     string
		want     []byte // the object after the PUT
	}{
		"new key, forbidden":      {forbid: "true", status: http.StatusOK, want: []byte("new")},
		"existing key, forbidden": {existing: []byte("old"), forbid: "true", status: http.StatusConflict, code: "FileAlreadyExists", want: []byte("old")},
		"existing key, false":     {existing: []byte("old"), forbid: "false", status: http.StatusOK, want: []byte("new")},
		"existing key, no header": {existing: []byte("old"), status: http.StatusOK, want: []byte("new")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t)
			if tc.existing != nil {
				srv.PutState(bucket, key, tc.existing)
			}
			_, oldMeta, _ := srv.Object(bucket, key)
			opt := &sdk.ObjectPutOptions{ObjectPutHeaderOptions: &sdk.ObjectPutHeaderOptions{
				XCosMetaXXX: &http.Header{"X-Cos-Meta-Md5": {"0123456789abcdef0123456789abcdef"}},
			}}
			if tc.forbid != "" {
				opt.XOptionHeader = &http.Header{"X-Cos-Forbid-Overwrite": {tc.forbid}}
			}
			c := newSDK(srv.URL(bucket), secretID, secretKey, "", nil)
			_, err := c.Object.Put(context.Background(), key, bytes.NewReader([]byte("new")), opt)
			if status, code := cosCode(t, err); status != tc.status || code != tc.code {
				t.Errorf("answer = %d %s, want %d %s", status, code, tc.status, tc.code)
			}
			data, meta, _ := srv.Object(bucket, key)
			if diff := cmp.Diff(string(tc.want), string(data)); diff != "" {
				t.Errorf("object after the PUT (-want +got):\n%s", diff)
			}
			if tc.status != http.StatusOK {
				if diff := cmp.Diff(oldMeta, meta); diff != "" {
					t.Errorf("refused PUT changed the metadata (-want +got):\n%s", diff)
				}
			}
			if log := srv.RequestLog(); log[len(log)-1].Status != tc.status {
				t.Errorf("server logged status %d, want %d", log[len(log)-1].Status, tc.status)
			}
		})
	}
}
