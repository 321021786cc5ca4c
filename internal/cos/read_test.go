package cos_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/cos/costest"
)

func md5hex(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

const state = `{"version":4,"terraform_version":"1.5.7","serial":3,"lineage":"l","outputs":{},"resources":[],"check_results":null}`

func TestReadState(t *testing.T) {
	data := []byte(state)
	cases := map[string]struct {
		workspace string
		maxBytes  int64
		setup     func(srv *costest.Server, cfg *cos.Config)
		want      *cos.Object
		wantErrs  []error
	}{
		"default workspace": {
			setup: func(srv *costest.Server, _ *cos.Config) { srv.PutState(bucket, "env/terraform.tfstate", data) },
			want:  &cos.Object{Data: data, MD5: md5hex(data), Size: int64(len(data))},
		},
		"named workspace": {
			workspace: "staging",
			setup:     func(srv *costest.Server, _ *cos.Config) { srv.PutState(bucket, "env/staging/terraform.tfstate", data) },
			want:      &cos.Object{Data: data, MD5: md5hex(data), Size: int64(len(data))},
		},
		"custom key, no prefix": {
			setup: func(srv *costest.Server, cfg *cos.Config) {
				cfg.Prefix, cfg.Key = "", "app.tfstate"
				srv.PutState(bucket, "app.tfstate", data)
			},
			want: &cos.Object{Data: data, MD5: md5hex(data), Size: int64(len(data))},
		},
		"missing": {
			setup: func(srv *costest.Server, _ *cos.Config) { srv.PutState(bucket, "env/other/terraform.tfstate", data) },
		},
		"empty object": {
			setup: func(srv *costest.Server, _ *cos.Config) { srv.PutState(bucket, "env/terraform.tfstate", nil) },
			want:  &cos.Object{Data: []byte{}, MD5: md5hex(nil)},
		},
		"exactly the limit": {
			maxBytes: int64(len(data)),
			setup:    func(srv *costest.Server, _ *cos.Config) { srv.PutState(bucket, "env/terraform.tfstate", data) },
			want:     &cos.Object{Data: data, MD5: md5hex(data), Size: int64(len(data))},
		},
		"too large": {
			maxBytes: int64(len(data)) - 1,
			setup:    func(srv *costest.Server, _ *cos.Config) { srv.PutState(bucket, "env/terraform.tfstate", data) },
			wantErrs: []error{cos.ErrStateTooLarge},
		},
		"no md5": {
			setup:    func(srv *costest.Server, _ *cos.Config) { srv.PutObject(bucket, "env/terraform.tfstate", data, nil) },
			wantErrs: []error{cos.ErrChecksumMissing},
		},
		"malformed md5": {
			setup: func(srv *costest.Server, _ *cos.Config) {
				srv.PutObject(bucket, "env/terraform.tfstate", data, map[string]string{"md5": "d41d8cd98f00b204"})
			},
			wantErrs: []error{cos.ErrChecksumMissing},
		},
		"md5 mismatch": {
			setup: func(srv *costest.Server, _ *cos.Config) {
				srv.PutObject(bucket, "env/terraform.tfstate", data, map[string]string{"x-cos-meta-md5": md5hex([]byte("other"))})
			},
			wantErrs: []error{cos.ErrChecksumMismatch},
		},
		"upper-case md5, as Terraform compares": {
			setup: func(srv *costest.Server, _ *cos.Config) {
				srv.PutObject(bucket, "env/terraform.tfstate", data, map[string]string{"md5": strings.ToUpper(md5hex(data))})
			},
			wantErrs: []error{cos.ErrChecksumMismatch},
		},
		"missing bucket": {
			setup:    func(_ *costest.Server, cfg *cos.Config) { cfg.Bucket = "missing-1250000000" },
			wantErrs: []error{cos.ErrBucketNotFound},
		},
		"access denied": {
			setup: func(srv *costest.Server, _ *cos.Config) {
				srv.PutState(bucket, "env/terraform.tfstate", data)
				srv.DenyAccess(bucket, true)
			},
			wantErrs: []error{cos.ErrAccessDenied},
		},
		"blank workspace": {
			workspace: " ",
			wantErrs:  []error{cos.ErrInvalidConfig},
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
			got, err := newClient(t, srv, cfg).ReadState(context.Background(), workspace)
			if diff := errorsDiff(tc.wantErrs, err); diff != "" {
				t.Fatalf("ReadState() error = %v; sentinels (-want +got):\n%s", err, diff)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ReadState() (-want +got):\n%s", diff)
			}
			assertNoSecrets(t, err)
		})
	}
}

// TestReadStateWithoutContentLength checks the size limit on a body whose
// size is not announced.
func TestReadStateWithoutContentLength(t *testing.T) {
	data := []byte(state)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Cos-Meta-Md5", md5hex(data))
		w.WriteHeader(http.StatusOK)
		for _, b := range data { // flushed byte by byte: chunked, no Content-Length
			_, _ = w.Write([]byte{b})
			w.(http.Flusher).Flush()
		}
	}))
	defer s.Close()
	base, _ := url.Parse(s.URL)
	cases := map[string]struct {
		limit    int64
		wantErrs []error
	}{
		"within the limit": {limit: int64(len(data))},
		"above the limit":  {limit: 8, wantErrs: []error{cos.ErrStateTooLarge}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := cos.Config{Bucket: bucket, Region: region, MaxStateBytes: tc.limit}
			c, err := cos.New(cfg, cos.WithBaseURL(base))
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.ReadState(context.Background(), cos.DefaultWorkspace)
			if diff := errorsDiff(tc.wantErrs, err); diff != "" {
				t.Errorf("ReadState() error = %v; sentinels (-want +got):\n%s", err, diff)
			}
		})
	}
}

// lockJSON is a lock object as Terraform 1.5.7's cos backend writes it:
// json.Marshal of statemgr.LockInfo, Path set to the lock object's key.
const lockJSON = `{"ID":"3f0a3c51-6f9b-2c8e-1d2a-9b7c6e5d4f3a","Operation":"OperationTypeApply","Info":"","Who":"user@host","Version":"1.5.7","Created":"2026-01-02T03:04:05.123456789Z","Path":"env/staging/terraform.tfstate.tflock"}`

func TestReadLock(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	cases := map[string]struct {
		workspace string
		setup     func(srv *costest.Server)
		want      *cos.LockInfo
		wantErrs  []error
		notInErr  string // bytes of the body the error must not quote
	}{
		"locked": {
			workspace: "staging",
			setup: func(srv *costest.Server) {
				srv.PutState(bucket, "env/staging/terraform.tfstate", []byte(state))
				srv.PutState(bucket, "env/staging/terraform.tfstate.tflock", []byte(lockJSON))
			},
			want: &cos.LockInfo{
				ID: md5hex([]byte(lockJSON)), Operation: "OperationTypeApply", Who: "user@host",
				Version: "1.5.7", Created: created, Path: "env/staging/terraform.tfstate.tflock",
			},
		},
		"not locked": {
			setup: func(srv *costest.Server) { srv.PutState(bucket, "env/terraform.tfstate", []byte(state)) },
		},
		"lock of another workspace": {
			setup: func(srv *costest.Server) {
				srv.PutState(bucket, "env/staging/terraform.tfstate.tflock", []byte(lockJSON))
			},
		},
		"garbage": {
			setup:    func(srv *costest.Server) { srv.PutState(bucket, "env/terraform.tfstate.tflock", []byte("not json")) },
			wantErrs: []error{cos.ErrInvalidLock},
		},
		"empty body": {
			setup:    func(srv *costest.Server) { srv.PutState(bucket, "env/terraform.tfstate.tflock", nil) },
			wantErrs: []error{cos.ErrInvalidLock},
		},
		"a field the decoder quotes": {
			setup: func(srv *costest.Server) {
				srv.PutState(bucket, "env/terraform.tfstate.tflock", []byte(`{"Created":"server-chosen-words"}`))
			},
			wantErrs: []error{cos.ErrInvalidLock},
			notInErr: "server-chosen-words",
		},
		"a holder quoting the credentials": {
			setup: func(srv *costest.Server) {
				srv.PutState(bucket, "env/terraform.tfstate.tflock", []byte(`{"ID":"x","Who":"`+secretKey+`","Info":"q-signature=abc"}`))
			},
			want: &cos.LockInfo{
				ID: md5hex([]byte(`{"ID":"x","Who":"` + secretKey + `","Info":"q-signature=abc"}`)), Who: "<redacted>", Info: "<redacted>",
			},
		},
		"no md5": {
			setup: func(srv *costest.Server) {
				srv.PutObject(bucket, "env/terraform.tfstate.tflock", []byte(lockJSON), nil)
			},
			wantErrs: []error{cos.ErrChecksumMissing},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t)
			if tc.setup != nil {
				tc.setup(srv)
			}
			workspace := tc.workspace
			if workspace == "" {
				workspace = cos.DefaultWorkspace
			}
			got, err := newClient(t, srv, baseConfig()).ReadLock(context.Background(), workspace)
			if diff := errorsDiff(tc.wantErrs, err); diff != "" {
				t.Fatalf("ReadLock() error = %v; sentinels (-want +got):\n%s", err, diff)
			}
			if tc.notInErr != "" && strings.Contains(err.Error(), tc.notInErr) {
				t.Errorf("ReadLock() error = %q, quotes the body", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ReadLock() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadLockMissingBucket(t *testing.T) {
	srv := newServer(t)
	cfg := baseConfig()
	cfg.Bucket = "missing-1250000000"
	_, err := newClient(t, srv, cfg).ReadLock(context.Background(), cos.DefaultWorkspace)
	if diff := errorsDiff([]error{cos.ErrBucketNotFound}, err); diff != "" {
		t.Errorf("ReadLock() error = %v; sentinels (-want +got):\n%s", err, diff)
	}
}

// TestReleaseLock releases a lock only while the .tflock object holds the
// named ID, through the signature-checking COS double.
func TestReleaseLock(t *testing.T) {
	const lockKey = "env/terraform.tfstate.tflock"
	other := strings.Replace(lockJSON, "user@host", "bob@ci", 1)
	cases := map[string]struct {
		held     string // body of the .tflock object, "" for none
		id       string
		wantErrs []error
		wantHeld bool
	}{
		"the named lock":  {held: lockJSON, id: md5hex([]byte(lockJSON))},
		"another lock":    {held: other, id: md5hex([]byte(lockJSON)), wantErrs: []error{cos.ErrLockNotHeld}, wantHeld: true},
		"no lock":         {id: md5hex([]byte(lockJSON)), wantErrs: []error{cos.ErrLockNotHeld}},
		"the JSON's UUID": {held: lockJSON, id: "3f0a3c51-6f9b-2c8e-1d2a-9b7c6e5d4f3a", wantErrs: []error{cos.ErrLockNotHeld}, wantHeld: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t)
			if tc.held != "" {
				srv.PutState(bucket, lockKey, []byte(tc.held))
			}
			err := newClient(t, srv, baseConfig()).ReleaseLock(context.Background(), cos.DefaultWorkspace, tc.id)
			if diff := errorsDiff(tc.wantErrs, err); diff != "" {
				t.Fatalf("ReleaseLock() error = %v; sentinels (-want +got):\n%s", err, diff)
			}
			if _, _, held := srv.Object(bucket, lockKey); held != tc.wantHeld {
				t.Errorf("lock object present after ReleaseLock: %v, want %v", held, tc.wantHeld)
			}
		})
	}
}
