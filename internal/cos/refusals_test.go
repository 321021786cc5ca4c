package cos_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/cos/costest"
)

// putBytes writes body under key through PutObject.
func putBytes(ctx context.Context, c *cos.Client, key string, body []byte) error {
	return c.PutObject(ctx, key, bytes.NewReader(body), int64(len(body)), md5.Sum(body))
}

// TestStoreRefusals checks how the client reports a destination that is
// full or refuses writes, as the costest server plays them, and how many
// requests each refusal costs.
func TestStoreRefusals(t *testing.T) {
	const stored = "history/l/1.tfstate"
	put := func(ctx context.Context, c *cos.Client) error {
		return putBytes(ctx, c, "history/l/2.tfstate", []byte(`{"version":4,"serial":2}`))
	}
	list := func(ctx context.Context, c *cos.Client) error {
		_, err := c.ListObjects(ctx, "history/", 10)
		return err
	}
	read := func(ctx context.Context, c *cos.Client) error {
		_, _, err := readObject(ctx, c, stored)
		return err
	}
	del := func(ctx context.Context, c *cos.Client) error { return c.DeleteObject(ctx, stored) }

	cases := map[string]struct {
		setup        func(srv *costest.Server)
		op           func(context.Context, *cos.Client) error
		want         []error
		wantCode     string // of the *ResponseError, "" when none
		wantRequests int
	}{
		"a PUT beyond the quota": {
			setup:    func(srv *costest.Server) { srv.SetQuota(bucket, 30) },
			op:       put,
			want:     []error{cos.ErrStoreFull},
			wantCode: "InsufficientStorage",
			// Not retried: a full store fails at once.
			wantRequests: 1,
		},
		"a full store still lists": {
			setup: func(srv *costest.Server) { srv.SetQuota(bucket, 1) }, op: list, wantRequests: 1,
		},
		"a full store still reads": {
			setup: func(srv *costest.Server) { srv.SetQuota(bucket, 1) }, op: read, wantRequests: 1,
		},
		"a full store still deletes": {
			setup: func(srv *costest.Server) { srv.SetQuota(bucket, 1) }, op: del, wantRequests: 1,
		},
		"a PUT within the quota": {
			setup: func(srv *costest.Server) { srv.SetQuota(bucket, 1000) }, op: put, wantRequests: 1,
		},
		"a PUT with writes denied": {
			setup:    func(srv *costest.Server) { srv.DenyWrites(bucket, true) },
			op:       put,
			want:     []error{cos.ErrAccessDenied},
			wantCode: "AccessDenied", wantRequests: 1,
		},
		"a DELETE with writes denied": {
			setup:    func(srv *costest.Server) { srv.DenyWrites(bucket, true) },
			op:       del,
			want:     []error{cos.ErrAccessDenied},
			wantCode: "AccessDenied", wantRequests: 1,
		},
		"a listing with writes denied": {
			setup: func(srv *costest.Server) { srv.DenyWrites(bucket, true) }, op: list, wantRequests: 1,
		},
		"a read with writes denied": {
			setup: func(srv *costest.Server) { srv.DenyWrites(bucket, true) }, op: read, wantRequests: 1,
		},
		"a PUT with all access denied": {
			setup:    func(srv *costest.Server) { srv.DenyAccess(bucket, true) },
			op:       put,
			want:     []error{cos.ErrAccessDenied},
			wantCode: "AccessDenied", wantRequests: 1,
		},
		"a 507 to a PUT": {
			setup:    func(srv *costest.Server) { srv.FailNext(3, http.StatusInsufficientStorage) },
			op:       put,
			want:     []error{cos.ErrStoreFull},
			wantCode: "InsufficientStorage", wantRequests: 1,
		},
		"a 507 to a listing is retried as any 5xx, three attempts": {
			setup:    func(srv *costest.Server) { srv.FailNext(3, http.StatusInsufficientStorage) },
			op:       list,
			want:     []error{cos.ErrStoreFull},
			wantCode: "InsufficientStorage", wantRequests: 3,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t)
			srv.PutState(bucket, stored, []byte(`{"version":4,"serial":1}`))
			c := newClient(t, srv, baseConfig())
			tc.setup(srv)
			before := srv.Requests()

			err := tc.op(t.Context(), c)
			t.Logf("error: %v", err)
			if diff := errorsDiff(tc.want, err); diff != "" {
				t.Errorf("sentinels (-want +got):\n%s", diff)
			}
			re, isAnswer := errors.AsType[*cos.ResponseError](err)
			if isAnswer != (tc.wantCode != "") || (isAnswer && re.Code != tc.wantCode) {
				t.Errorf("error = %#v, want a *ResponseError with code %q", err, tc.wantCode)
			}
			if len(tc.want) == 0 && tc.wantCode == "" && err != nil {
				t.Errorf("error = %v, want none", err)
			}
			if n := srv.Requests() - before; n != tc.wantRequests {
				t.Errorf("%d requests, want %d", n, tc.wantRequests)
			}
			assertNoSecrets(t, err)
		})
	}
}

// TestFullStoreKeepsWhatItHolds follows a destination that fills up:
// the refused copy is not stored, the others stay readable, and a delete
// makes room for it.
func TestFullStoreKeepsWhatItHolds(t *testing.T) {
	srv := newServer(t)
	c := newClient(t, srv, baseConfig())
	ctx := t.Context()
	first := bytes.Repeat([]byte("a"), 600)
	second := bytes.Repeat([]byte("b"), 500)
	srv.SetQuota(bucket, 1000)

	if err := putBytes(ctx, c, "history/l/1.tfstate", first); err != nil {
		t.Fatalf("first PutObject: %v", err)
	}
	if err := putBytes(ctx, c, "history/l/2.tfstate", second); !errors.Is(err, cos.ErrStoreFull) || errors.Is(err, cos.ErrAccessDenied) {
		t.Fatalf("PutObject beyond the quota = %v, want ErrStoreFull only", err)
	}
	if _, _, found := srv.Object(bucket, "history/l/2.tfstate"); found {
		t.Error("the refused copy was stored")
	}
	objects, err := c.ListObjects(ctx, "history/", 10)
	if err != nil || len(objects) != 1 || objects[0].Size != int64(len(first)) {
		t.Fatalf("ListObjects of a full store = %+v, %v; want the first copy", objects, err)
	}
	if got, found, err := readObject(ctx, c, "history/l/1.tfstate"); err != nil || !found || !bytes.Equal(got, first) {
		t.Fatalf("StreamObject of a full store = %d bytes, %t, %v; want the first copy", len(got), found, err)
	}
	if err := c.DeleteObject(ctx, "history/l/1.tfstate"); err != nil {
		t.Fatalf("DeleteObject in a full store: %v", err)
	}
	if err := putBytes(ctx, c, "history/l/2.tfstate", second); err != nil {
		t.Errorf("PutObject after the delete made room: %v", err)
	}
}

// TestWritesDeniedThenAllowed checks that a refusal of writes is
// reported as ErrAccessDenied, leaves the listing working, and ends when
// the store allows writes again.
func TestWritesDeniedThenAllowed(t *testing.T) {
	srv := newServer(t)
	c := newClient(t, srv, baseConfig())
	ctx := t.Context()
	body := []byte(`{"version":4,"serial":1}`)
	srv.DenyWrites(bucket, true)

	err := putBytes(ctx, c, "history/l/1.tfstate", body)
	if diff := errorsDiff([]error{cos.ErrAccessDenied}, err); diff != "" {
		t.Errorf("PutObject with writes denied = %v; sentinels (-want +got):\n%s", err, diff)
	}
	if objects, err := c.ListObjects(ctx, "history/", 10); err != nil || len(objects) != 0 {
		t.Errorf("ListObjects with writes denied = %+v, %v; want an empty listing", objects, err)
	}
	srv.DenyWrites(bucket, false)
	if err := putBytes(ctx, c, "history/l/1.tfstate", body); err != nil {
		t.Fatalf("PutObject with writes allowed again: %v", err)
	}
	found, _, err := c.StreamObject(ctx, "history/l/1.tfstate", 1<<20, func(r io.Reader) error {
		_, err := io.Copy(io.Discard, r)
		return err
	})
	if err != nil || !found {
		t.Errorf("StreamObject of the copy = %t, %v", found, err)
	}
}
