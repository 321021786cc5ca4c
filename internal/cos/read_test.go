package cos_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
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
