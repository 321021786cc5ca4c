package history

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
)

// failingReader fails after its data.
type failingReader struct{ data io.Reader }

func (r failingReader) Read(p []byte) (int, error) {
	n, err := r.data.Read(p)
	if errors.Is(err, io.EOF) {
		return n, errors.New("connection reset")
	}
	return n, err
}

// entries is how many files dir holds.
func entries(t *testing.T, dir string) int {
	t.Helper()
	list, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(list)
}

func TestSpool(t *testing.T) {
	state := []byte(strings.Repeat(`{"version":4}`, 10_000))
	dir := t.TempDir()
	s, err := Spool(dir, int64(len(state)), bytes.NewReader(state))
	if err != nil {
		t.Fatalf("Spool: %v", err)
	}
	sha := sha256.Sum256(state)
	if s.Size != int64(len(state)) || s.SHA256 != hex.EncodeToString(sha[:]) || s.MD5 != md5.Sum(state) {
		t.Errorf("Spool() = size %d, sha256 %s, md5 %x; want %d, %x, %x", s.Size, s.SHA256, s.MD5, len(state), sha, md5.Sum(state))
	}
	for range 2 { // read twice: a retried upload reads it again
		r, err := s.Reader()
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := io.ReadAll(r); !bytes.Equal(got, state) {
			t.Fatalf("the spooled state differs: %d bytes, want %d", len(got), len(state))
		}
	}
	s.Remove()
	if n := entries(t, dir); n != 0 {
		t.Errorf("%d files left after Remove", n)
	}
}

func TestSpoolFailuresLeaveNoFile(t *testing.T) {
	for name, tc := range map[string]struct {
		r     io.Reader
		limit int64
		want  error
	}{
		"a state above the limit": {r: strings.NewReader("0123456789"), limit: 9, want: ErrTooLarge},
		"a read that fails":       {r: failingReader{strings.NewReader("0123")}, limit: 100},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := Spool(dir, tc.limit, tc.r)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("Spool() = %v, want an error (%v)", err, tc.want)
			}
			if n := entries(t, dir); n != 0 {
				t.Errorf("%d files left after a failed Spool", n)
			}
		})
	}
	t.Run("exactly the limit is accepted", func(t *testing.T) {
		s, err := Spool(t.TempDir(), 10, strings.NewReader("0123456789"))
		if err != nil {
			t.Fatalf("Spool of exactly the limit: %v", err)
		}
		s.Remove()
	})
}
