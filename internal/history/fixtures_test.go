package history

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/infrastate/backend-operator/internal/cos"
	"github.com/infrastate/backend-operator/internal/cos/costest"
	"github.com/infrastate/backend-operator/internal/statefile"
)

const (
	testBucket    = "history-1250000000"
	testSecretID  = "AKIDhistoryID"
	testSecretKey = "history-secret-key"
	testPrefix    = "state-history/team/network"
	otherLineage  = "0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0"
)

// tfState is a state as Terraform 1.5 writes it: format version 4, an
// output and a resource holding pet, and an output named serial (which is
// not the state's serial).
func tfState(lineage string, serial uint64, pet string) []byte {
	return fmt.Appendf(nil, `{
  "version": 4,
  "terraform_version": "1.5.7",
  "serial": %d,
  "lineage": %q,
  "outputs": {
    "name": {
      "value": %q,
      "type": "string"
    },
    "serial": {
      "value": 7,
      "type": "number"
    }
  },
  "resources": [
    {
      "mode": "managed",
      "type": "random_pet",
      "name": "name",
      "provider": "provider[\"registry.terraform.io/hashicorp/random\"]",
      "instances": [
        {
          "schema_version": 0,
          "attributes": {
            "id": %q,
            "keepers": null,
            "length": 2,
            "prefix": null,
            "separator": "-"
          },
          "sensitive_attributes": []
        }
      ]
    }
  ],
  "check_results": null
}
`, serial, lineage, pet, pet)
}

// encryptedState is a state as OpenTofu's state encryption writes it: the
// serial and lineage in clear text, the key provider's parameters in meta
// and the state in encrypted_data.
func encryptedState(lineage string, serial uint64) []byte {
	b64 := base64.StdEncoding.EncodeToString
	params := b64([]byte(`{"salt":"c2FsdHNhbHRzYWx0c2FsdA==","iterations":600000,"hash_function":"sha512","key_length":32}`))
	payload := b64(bytes.Repeat([]byte{0x9c, 0x41, 0x07, 0xe3}, 64))
	return fmt.Appendf(nil, `{"serial":%d,"lineage":%q,"meta":{"key_provider.pbkdf2.main":%q},"encrypted_data":%q,"encryption_version":"v0"}`,
		serial, lineage, params, payload)
}

// stateSource is a Source holding state, nil for none, streamed to read
// as a backend's answer would be.
func stateSource(state []byte) Source {
	return func(_ context.Context, read func(io.Reader) error) (bool, int64, error) {
		if state == nil {
			return false, 0, nil
		}
		return true, int64(len(state)), read(bytes.NewReader(state))
	}
}

// errSource is the error of the failing sources.
var errSource = errors.New("the state server answered 502")

// snapshotKey is the key Take writes state under: its lineage and serial
// as ReadSummary reads them, its SHA-256.
func snapshotKey(t *testing.T, prefix string, state []byte) string {
	t.Helper()
	return Key(prefix, snapshotRef(t, state))
}

func snapshotRef(t *testing.T, state []byte) Ref {
	t.Helper()
	s, err := statefile.ReadSummary(bytes.NewReader(state), nil)
	if err != nil {
		t.Fatalf("the fixture is no state: %v", err)
	}
	return NewRef(s.Lineage, s.Serial, hashOf(state))
}

// hashOf is the hex SHA-256 of data.
func hashOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// bucket is a COS bucket in the protocol double and the real client to
// it, as the Store the history writes to.
type bucket struct {
	srv    *costest.Server
	client *cos.Client
	store  Store
}

func newBucket(t *testing.T) *bucket {
	t.Helper()
	srv := costest.NewServer(t)
	srv.AddCredentials(testSecretID, testSecretKey)
	srv.CreateBucket(testBucket)
	cfg := cos.Config{Bucket: testBucket, Region: "ap-guangzhou", SecretID: testSecretID, SecretKey: testSecretKey}
	c, err := cos.New(cfg, cos.WithBaseURL(srv.URL(testBucket)))
	if err != nil {
		t.Fatalf("cos.New: %v", err)
	}
	return &bucket{srv: srv, client: c, store: COSStore(c)}
}

// objects is every object of the bucket, by key.
func (b *bucket) objects(t *testing.T) map[string][]byte {
	t.Helper()
	list, err := b.client.ListObjects(t.Context(), "", 1000)
	if err != nil {
		t.Fatalf("listing the bucket: %v", err)
	}
	out := map[string][]byte{}
	for _, o := range list {
		data, _, _ := b.srv.Object(testBucket, o.Key)
		out[o.Key] = data
	}
	return out
}

// testPlan keeps states under testPrefix, spooled in dir, read now.
func testPlan(dir string) Plan {
	return Plan{Prefix: testPrefix, SpoolDir: dir, MaxStateBytes: 1 << 20, ListLimit: 100, Now: time.Now}
}

// ignoreTakenAt compares snapshots but for when they were taken: the
// store's clock says when for those listed.
var ignoreTakenAt = cmpopts.IgnoreFields(Snapshot{}, "TakenAt")
