package cos_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/infrastate/backend-operator/internal/cos"
)

// readObject reads the object of key whole through StreamObject.
func readObject(ctx context.Context, c *cos.Client, key string) (data []byte, found bool, err error) {
	found, _, err = c.StreamObject(ctx, key, 1<<20, func(r io.Reader) error {
		var readErr error
		data, readErr = io.ReadAll(r)
		return readErr
	})
	return data, found, err
}

func TestPutObjectAndReadItBack(t *testing.T) {
	srv := newServer(t)
	c := newClient(t, srv, baseConfig())
	ctx := t.Context()
	body := []byte(`{"version":4,"serial":3}`)
	sum := md5.Sum(body)

	if err := c.PutObject(ctx, "history/l/3.tfstate", bytes.NewReader(body), int64(len(body)), sum); err != nil {
		t.Fatalf("PutObject: %v", err)
	}
	got, found, err := readObject(ctx, c, "history/l/3.tfstate")
	if err != nil || !found || !bytes.Equal(got, body) {
		t.Fatalf("StreamObject = %q, %t, %v; want the body written", got, found, err)
	}

	t.Run("a second write of the key is refused, the first kept", func(t *testing.T) {
		other := []byte(`{"version":4,"serial":4}`)
		err := c.PutObject(ctx, "history/l/3.tfstate", bytes.NewReader(other), int64(len(other)), md5.Sum(other))
		if !errors.Is(err, cos.ErrObjectExists) {
			t.Fatalf("PutObject over an object = %v, want ErrObjectExists", err)
		}
		if got, _, _ := readObject(ctx, c, "history/l/3.tfstate"); !bytes.Equal(got, body) {
			t.Errorf("the object holds %q, want the first body", got)
		}
	})

	t.Run("a body that does not match its MD5 is refused by the store", func(t *testing.T) {
		err := c.PutObject(ctx, "history/l/9.tfstate", bytes.NewReader([]byte("tampered")), 8, sum)
		if err == nil {
			t.Fatal("PutObject of a body whose MD5 differs succeeded")
		}
		assertNoSecrets(t, err)
		if _, found, _ := readObject(ctx, c, "history/l/9.tfstate"); found {
			t.Error("the refused body was stored")
		}
	})

	t.Run("an object changed in the store fails its check when read back", func(t *testing.T) {
		_, meta, _ := srv.Object(bucket, "history/l/3.tfstate")
		srv.PutObject(bucket, "history/l/3.tfstate", []byte(`{"version":4,"serial":99}`), meta)
		if _, _, err := readObject(ctx, c, "history/l/3.tfstate"); !errors.Is(err, cos.ErrChecksumMismatch) {
			t.Errorf("StreamObject of a changed object = %v, want ErrChecksumMismatch", err)
		}
	})

	t.Run("deleting, twice", func(t *testing.T) {
		for range 2 {
			if err := c.DeleteObject(ctx, "history/l/3.tfstate"); err != nil {
				t.Fatalf("DeleteObject: %v", err)
			}
		}
		if _, found, err := readObject(ctx, c, "history/l/3.tfstate"); found || err != nil {
			t.Errorf("StreamObject after the delete = %t, %v; want not found", found, err)
		}
	})
}

func TestListObjects(t *testing.T) {
	srv := newServer(t)
	c := newClient(t, srv, baseConfig())
	// More than one page of the listing (1000 keys), and keys beside the
	// prefix that must not be listed.
	var want []string
	for i := range 1003 {
		key := fmt.Sprintf("history/l/%05d.tfstate", i)
		srv.PutObject(bucket, key, []byte("x"), nil)
		want = append(want, key)
	}
	srv.PutObject(bucket, "historyx/other.tfstate", []byte("x"), nil)
	srv.PutObject(bucket, "env/terraform.tfstate", []byte("x"), nil)

	got, err := c.ListObjects(t.Context(), "history/", 5000)
	if err != nil {
		t.Fatalf("ListObjects: %v", err)
	}
	keys := make([]string, 0, len(got))
	for _, o := range got {
		keys = append(keys, o.Key)
		if o.Size != 1 {
			t.Fatalf("%s has size %d, want 1", o.Key, o.Size)
		}
	}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}

	if _, err := c.ListObjects(t.Context(), "history/", 1000); !errors.Is(err, cos.ErrTooManyObjects) {
		t.Errorf("ListObjects beyond its limit = %v, want ErrTooManyObjects", err)
	}
}

func TestObjectOperationsNeedAKey(t *testing.T) {
	c := newClient(t, newServer(t), baseConfig())
	ctx := t.Context()
	if err := c.PutObject(ctx, "", bytes.NewReader(nil), 0, [16]byte{}); err == nil {
		t.Error("PutObject with no key succeeded")
	}
	if err := c.DeleteObject(ctx, ""); err == nil {
		t.Error("DeleteObject with no key succeeded")
	}
	if _, _, err := c.StreamObject(ctx, "", 1, func(io.Reader) error { return nil }); err == nil {
		t.Error("StreamObject with no key succeeded")
	}
}
