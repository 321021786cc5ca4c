package history

import (
	"crypto/md5" //nolint:gosec // COS checks objects with MD5: it is the store's integrity check, not a security control
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
)

// Spooled is a state copied to a file of its own on its way from the
// source to the destination: the store needs the copy's MD5 and size
// before its first byte, and the manager's memory must not grow with the
// state, so the copy waits on disk, never in memory.
type Spooled struct {
	file *os.File
	// Size is the state's size, SHA256 its hex SHA-256 (the snapshot's
	// key names it), MD5 what the store checks.
	Size   int64
	SHA256 string
	MD5    [md5.Size]byte
}

// ErrTooLarge is the error of Spool for a state above its limit.
var ErrTooLarge = errors.New("the state is larger than the limit")

// Spool copies r, at most limit bytes (more is an error wrapping
// ErrTooLarge), to a new file in dir, hashing it on the way. The file is
// removed when Spool fails, and by Remove otherwise.
func Spool(dir string, limit int64, r io.Reader) (*Spooled, error) {
	f, err := os.CreateTemp(dir, "snapshot-*.tfstate")
	if err != nil {
		return nil, fmt.Errorf("creating the snapshot's spool file: %w", err)
	}
	s := &Spooled{file: f}
	sum, md := sha256.New(), md5.New() //nolint:gosec // see import
	n, err := io.Copy(io.MultiWriter(f, sum, md), io.LimitReader(r, limit+1))
	switch {
	case err != nil:
		s.Remove()
		return nil, fmt.Errorf("spooling the state: %w", err)
	case n > limit:
		s.Remove()
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
	}
	s.Size, s.SHA256 = n, hex.EncodeToString(sum.Sum(nil))
	copy(s.MD5[:], md.Sum(nil))
	return s, nil
}

// Reader returns a reader of the spooled state from its first byte.
func (s *Spooled) Reader() (io.ReadSeeker, error) {
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("rewinding the snapshot's spool file: %w", err)
	}
	return s.file, nil
}

// Remove closes and removes the spool file.
func (s *Spooled) Remove() {
	_ = s.file.Close()
	_ = os.Remove(s.file.Name())
}
