package costest_test

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/url"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/tencentyun/cos-go-sdk-v5"

	"github.com/infrastate/backend-operator/internal/cos/costest"
)

func TestURLGivesEachBucketItsListener(t *testing.T) {
	srv := newServer(t)
	srv.CreateBucket("other-1250000000")
	srv.PutState(bucket, "a", []byte("in states"))
	srv.PutState("other-1250000000", "b", []byte("in other"))

	if first, second := srv.URL(bucket), srv.URL(bucket); first.String() != second.String() {
		t.Error("URL(bucket) changes between calls")
	}
	if srv.URL(bucket).Host == srv.URL("other-1250000000").Host {
		t.Error("two buckets share a listener")
	}
	for b, want := range map[string]string{bucket: "a", "other-1250000000": "b"} {
		c := newSDK(srv.URL(b), secretID, secretKey, "", nil)
		res, _, err := c.Bucket.Get(context.Background(), nil)
		if err != nil {
			t.Fatalf("list %s: %v", b, err)
		}
		if len(res.Contents) != 1 || res.Contents[0].Key != want || res.Name != b {
			t.Errorf("list %s = %s %+v, want only %q", b, res.Name, res.Contents, want)
		}
	}

	c := newSDK(srv.URL("missing-1250000000"), secretID, secretKey, "", nil)
	_, _, err := c.Bucket.Get(context.Background(), nil)
	if status, code := cosCode(t, err); status != http.StatusNotFound || code != "NoSuchBucket" {
		t.Errorf("missing bucket = %d %s, want 404 NoSuchBucket", status, code)
	}
}

// TestHostRouting reaches the main listener with real COS host names.
func TestHostRouting(t *testing.T) {
	cases := map[string]struct {
		base   string
		status int
		code   string
	}{
		"internal endpoint": {base: "http://" + bucket + ".cos-internal.ap-guangzhou.tencentcos.cn", status: http.StatusOK},
		"regional":          {base: "http://" + bucket + ".cos.ap-guangzhou.myqcloud.com", status: http.StatusOK},
		"accelerate":        {base: "http://" + bucket + ".cos.accelerate.myqcloud.com", status: http.StatusOK},
		"unknown bucket":    {base: "http://nope-1250000000.cos.ap-guangzhou.myqcloud.com", status: http.StatusNotFound, code: "NoSuchBucket"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t)
			u, _ := url.Parse(tc.base)
			c := newSDK(u, secretID, secretKey, "", srv.HTTPClient().Transport)
			_, _, err := c.Bucket.Get(context.Background(), nil)
			if status, code := cosCode(t, err); status != tc.status || code != tc.code {
				t.Errorf("answer = %d %s, want %d %s", status, code, tc.status, tc.code)
			}
			if got := srv.RequestLog()[0].Host; got != u.Host {
				t.Errorf("server saw Host %q, want %q", got, u.Host)
			}
		})
	}
}

func TestListing(t *testing.T) {
	srv := newServer(t)
	for _, k := range []string{"env/a/terraform.tfstate", "env/b/terraform.tfstate", "env/terraform.tfstate", "envx", "other"} {
		srv.PutState(bucket, k, []byte(k))
	}
	type page struct {
		Keys, Prefixes []string
		Truncated      bool
		Next           string
	}
	cases := map[string]struct {
		opt  sdk.BucketGetOptions
		want page
	}{
		"all":             {want: page{Keys: []string{"env/a/terraform.tfstate", "env/b/terraform.tfstate", "env/terraform.tfstate", "envx", "other"}}},
		"prefix":          {opt: sdk.BucketGetOptions{Prefix: "env/"}, want: page{Keys: []string{"env/a/terraform.tfstate", "env/b/terraform.tfstate", "env/terraform.tfstate"}}},
		"max-keys":        {opt: sdk.BucketGetOptions{Prefix: "env", MaxKeys: 1}, want: page{Keys: []string{"env/a/terraform.tfstate"}, Truncated: true, Next: "env/a/terraform.tfstate"}},
		"marker":          {opt: sdk.BucketGetOptions{Prefix: "env", Marker: "env/a/terraform.tfstate", MaxKeys: 2}, want: page{Keys: []string{"env/b/terraform.tfstate", "env/terraform.tfstate"}, Truncated: true, Next: "env/terraform.tfstate"}},
		"delimiter":       {opt: sdk.BucketGetOptions{Prefix: "env/", Delimiter: "/"}, want: page{Keys: []string{"env/terraform.tfstate"}, Prefixes: []string{"env/a/", "env/b/"}}},
		"delimiter paged": {opt: sdk.BucketGetOptions{Prefix: "env/", Delimiter: "/", Marker: "env/a/"}, want: page{Keys: []string{"env/terraform.tfstate"}, Prefixes: []string{"env/b/"}}},
		"nothing":         {opt: sdk.BucketGetOptions{Prefix: "nothing"}, want: page{}},
	}
	c := newSDK(srv.URL(bucket), secretID, secretKey, "", nil)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res, _, err := c.Bucket.Get(context.Background(), &tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			got := page{Prefixes: res.CommonPrefixes, Truncated: res.IsTruncated, Next: res.NextMarker}
			for _, o := range res.Contents {
				got.Keys = append(got.Keys, o.Key)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("page (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFaults(t *testing.T) {
	t.Run("fail next", func(t *testing.T) {
		srv := newServer(t)
		c := newSDK(srv.URL(bucket), secretID, secretKey, "", nil)
		srv.FailNext(3, http.StatusServiceUnavailable) // the SDK tries three times
		_, _, err := c.Bucket.Get(context.Background(), nil)
		if status, code := cosCode(t, err); status != http.StatusServiceUnavailable || code != "ServiceUnavailable" {
			t.Errorf("answer = %d %s, want 503 ServiceUnavailable", status, code)
		}
		if n := srv.Requests(); n != 3 {
			t.Errorf("Requests() = %d, want 3", n)
		}
		if _, _, err := c.Bucket.Get(context.Background(), nil); err != nil {
			t.Errorf("after the faults: %v", err)
		}
	})
	t.Run("deny access", func(t *testing.T) {
		srv := newServer(t)
		c := newSDK(srv.URL(bucket), secretID, secretKey, "", nil)
		srv.DenyAccess(bucket, true)
		_, _, err := c.Bucket.Get(context.Background(), nil)
		if status, code := cosCode(t, err); status != http.StatusForbidden || code != "AccessDenied" {
			t.Errorf("answer = %d %s, want 403 AccessDenied", status, code)
		}
		srv.DenyAccess(bucket, false)
		if _, _, err := c.Bucket.Get(context.Background(), nil); err != nil {
			t.Errorf("after allowing: %v", err)
		}
	})
	t.Run("close", func(t *testing.T) {
		srv := costest.NewServer(nil)
		u := srv.URL(bucket)
		srv.Close()
		srv.Close() // idempotent
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u.String(), http.NoBody)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("GET after Close = %v, want connection refused", err)
		}
	})
}

// TestErrorDocument reads an error answer without the SDK.
func TestErrorDocument(t *testing.T) {
	srv := newServer(t)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL(bucket).String()+"/terraform.tfstate", http.NoBody)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	var doc struct {
		Code, Message, Resource string
		RequestID               string `xml:"RequestId"`
	}
	if err := xml.Unmarshal(body, &doc); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	if resp.StatusCode != http.StatusForbidden || doc.Code != "AccessDenied" || doc.Message == "" {
		t.Errorf("answer = %d %+v, want 403 AccessDenied with a message", resp.StatusCode, doc)
	}
	if id := resp.Header.Get("X-Cos-Request-Id"); id == "" || id != doc.RequestID {
		t.Errorf("x-cos-request-id %q, RequestId %q: want the same, non-empty", id, doc.RequestID)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/xml" {
		t.Errorf("Content-Type = %q", ct)
	}
}
