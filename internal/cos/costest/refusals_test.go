package costest_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/tencentyun/cos-go-sdk-v5"

	"github.com/infrastate/backend-operator/internal/cos/costest"
)

// answer is the status and COS error code of an answer.
type answer struct {
	Status int
	Code   string
}

func answerOf(t *testing.T, err error) answer {
	t.Helper()
	status, code := cosCode(t, err)
	return answer{status, code}
}

var (
	ok          = answer{Status: http.StatusOK} // any success
	denied      = answer{Status: http.StatusForbidden, Code: "AccessDenied"}
	full        = answer{Status: http.StatusInsufficientStorage, Code: "InsufficientStorage"}
	exists      = answer{Status: http.StatusConflict, Code: "FileAlreadyExists"}
	forbidWrite = &sdk.ObjectPutOptions{ObjectPutHeaderOptions: &sdk.ObjectPutHeaderOptions{
		XOptionHeader: &http.Header{"X-Cos-Forbid-Overwrite": {"true"}},
	}}
)

// put writes body under key through the SDK.
func put(c *sdk.Client, key, body string, opt *sdk.ObjectPutOptions) error {
	_, err := c.Object.Put(context.Background(), key, strings.NewReader(body), opt)
	return err
}

func TestSetQuota(t *testing.T) {
	const other = "other-1250000000"
	cases := map[string]struct {
		existing map[string]string // objects before the PUT
		setup    func(srv *costest.Server)
		key      string
		body     string
		opt      *sdk.ObjectPutOptions
		want     answer
	}{
		"up to the quota": {
			existing: map[string]string{"a": "1234"}, key: "b", body: "123456", want: ok,
		},
		"one byte beyond": {
			existing: map[string]string{"a": "1234"}, key: "b", body: "1234567", want: full,
		},
		"an empty bucket, an object larger than the quota": {
			key: "a", body: strings.Repeat("x", 11), want: full,
		},
		"the object replaced no longer counts": {
			existing: map[string]string{"a": "12345678"}, key: "a", body: "123456789", want: ok,
		},
		"a key that exists is refused as such first": {
			existing: map[string]string{"a": "1234567890"}, key: "a", body: "x", opt: forbidWrite, want: exists,
		},
		"a quota removed": {
			existing: map[string]string{"a": "1234567890"},
			setup:    func(srv *costest.Server) { srv.SetQuota(bucket, 0) },
			key:      "b", body: "x", want: ok,
		},
		"a quota lowered below what the bucket holds keeps the objects": {
			existing: map[string]string{"a": "1234567890"},
			setup:    func(srv *costest.Server) { srv.SetQuota(bucket, 5) },
			key:      "b", body: "x", want: full,
		},
		"another bucket's quota": {
			existing: map[string]string{"a": "1234567890"},
			setup: func(srv *costest.Server) {
				srv.SetQuota(bucket, 0)
				srv.SetQuota(other, 1)
			},
			key: "b", body: "x", want: ok,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t)
			srv.CreateBucket(other)
			for k, v := range tc.existing {
				srv.PutObject(bucket, k, []byte(v), nil) // the test's writes ignore the quota
			}
			srv.SetQuota(bucket, 10)
			if tc.setup != nil {
				tc.setup(srv)
			}
			before, _, _ := srv.Object(bucket, tc.key)
			err := put(newSDK(srv.URL(bucket), secretID, secretKey, "", nil), tc.key, tc.body, tc.opt)
			if diff := cmp.Diff(tc.want, answerOf(t, err)); diff != "" {
				t.Errorf("PUT answer (-want +got):\n%s", diff)
			}
			want := string(before)
			if tc.want == ok {
				want = tc.body
			}
			if data, _, _ := srv.Object(bucket, tc.key); string(data) != want {
				t.Errorf("object %q holds %q, want %q", tc.key, data, want)
			}
		})
	}

	t.Run("deleting makes room", func(t *testing.T) {
		srv := newServer(t)
		srv.PutObject(bucket, "a", []byte("1234567890"), nil)
		srv.SetQuota(bucket, 10)
		c := newSDK(srv.URL(bucket), secretID, secretKey, "", nil)
		if got := answerOf(t, put(c, "b", "x", nil)); got != full {
			t.Fatalf("PUT to a full bucket = %+v, want %+v", got, full)
		}
		if _, err := c.Object.Delete(context.Background(), "a"); err != nil {
			t.Fatalf("DELETE in a full bucket: %v", err)
		}
		if err := put(c, "b", "x", nil); err != nil {
			t.Errorf("PUT after the delete: %v", err)
		}
	})

	t.Run("the error document", func(t *testing.T) {
		srv := newServer(t)
		srv.SetQuota(bucket, 1)
		c := newSDK(srv.URL(bucket), secretID, secretKey, "", nil)
		err := put(c, "a", "xx", nil)
		var er *sdk.ErrorResponse
		if !errors.As(err, &er) || er.Message == "" || er.RequestID == "" {
			t.Errorf("PUT beyond the quota = %#v, want an <Error> with a message and a request id", err)
		}
	})
}

func TestDenyWrites(t *testing.T) {
	srv := newServer(t)
	srv.PutState(bucket, "env/terraform.tfstate", []byte(`{"version":4}`))
	c := newSDK(srv.URL(bucket), secretID, secretKey, "", nil)
	ctx := context.Background()
	srv.DenyWrites(bucket, true)

	steps := []struct {
		name string
		do   func() error
		want answer
	}{
		{"PUT", func() error { return put(c, "env/new", "x", nil) }, denied},
		{"DELETE", func() error { _, err := c.Object.Delete(ctx, "env/terraform.tfstate"); return err }, denied},
		{"GET", func() error {
			resp, err := c.Object.Get(ctx, "env/terraform.tfstate", nil)
			if err == nil {
				_ = resp.Body.Close()
			}
			return err
		}, ok},
		{"HEAD", func() error { _, err := c.Object.Head(ctx, "env/terraform.tfstate", nil); return err }, ok},
		{"list", func() error { _, _, err := c.Bucket.Get(ctx, nil); return err }, ok},
		{"HEAD bucket", func() error { _, err := c.Bucket.Head(ctx); return err }, ok},
		{"allowed again, PUT", func() error {
			srv.DenyWrites(bucket, false)
			return put(c, "env/new", "x", nil)
		}, ok},
		{"allowed again, DELETE", func() error { _, err := c.Object.Delete(ctx, "env/new"); return err }, ok},
	}
	for _, step := range steps {
		if got := answerOf(t, step.do()); got != step.want {
			t.Errorf("%s = %+v, want %+v", step.name, got, step.want)
		}
	}
	if data, _, found := srv.Object(bucket, "env/terraform.tfstate"); !found || !bytes.Equal(data, []byte(`{"version":4}`)) {
		t.Errorf("the refused DELETE removed or changed the state: %q, %t", data, found)
	}
}
