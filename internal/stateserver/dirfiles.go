package stateserver

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

const (
	// stateSuffix and lockSuffix end the file names of a state document and
	// of its lock. Encoded names never contain them ambiguously: a state file
	// always ends in stateSuffix and a lock file in lockSuffix.
	stateSuffix = ".tfstate"
	lockSuffix  = ".tflock"
	// tempPrefix starts the name of every temporary file. Encoded names never
	// start with a dot, so temporary files cannot collide with stored ones.
	tempPrefix = ".tmp-"
	// maxFileNameBytes keeps encoded names below the usual 255-byte limit of
	// file systems, with room for the suffixes.
	maxFileNameBytes = 240
)

// renameFile is os.Rename, replaced by tests to simulate a failure between
// writing the temporary file and putting it in place.
var renameFile = os.Rename

// readFile returns the content of file in the store's directory, nil when it
// does not exist, and an empty non-nil slice when it exists and is empty.
func (d *DirStore) readFile(file string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(d.dir, file)) //nolint:gosec // file is an encoded name (no separator, no leading dot) and a suffix, so it stays in d.dir
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("dir store: %w", err)
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

// writeOrRemove replaces file with data atomically, as states are
// replaced (staged, then installed), or removes it when data is nil.
func (d *DirStore) writeOrRemove(file string, data []byte) error {
	if data == nil {
		return d.remove(file)
	}
	doc, err := d.stage(bytes.NewReader(data))
	if err != nil {
		return err
	}
	// Close removes the temporary file unless it was installed. Once it is
	// installed, closing only releases a descriptor of a synced file: no
	// error then makes the write fail.
	defer func() { _ = doc.Close() }()
	return d.install(file, doc)
}

// remove removes file, durably; a missing file is no error.
func (d *DirStore) remove(file string) error {
	err := os.Remove(filepath.Join(d.dir, file)) //nolint:gosec // file is an encoded name (no separator, no leading dot) and a suffix, so it stays in d.dir
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove: %w", err)
	}
	return syncDir(d.dir)
}

// syncDir makes a rename or removal in dir durable.
func syncDir(dir string) error {
	f, err := os.Open(dir) //nolint:gosec // the store's own directory, which the operator chose
	if err != nil {
		return fmt.Errorf("open directory: %w", err)
	}
	syncErr := f.Sync()
	if err := errors.Join(syncErr, f.Close()); err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	return nil
}

// sameBytes reports whether a and b hold the same bytes and are both nil or
// both non-nil.
func sameBytes(a, b []byte) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

// encodeName maps a state name to a file name base: ASCII letters, digits,
// '-', '_' and non-leading '.' are kept, every other byte becomes %XX. The
// result never starts with a dot and never contains a path separator.
func encodeName(name string) (string, error) {
	if err := validateName(name); err != nil {
		return "", err
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := range len(name) {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
			b.WriteByte(c)
		case c == '.' && i > 0:
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xF])
		}
	}
	if b.Len() > maxFileNameBytes {
		return "", fmt.Errorf("%w: %d bytes once encoded, at most %d", ErrInvalidName, b.Len(), maxFileNameBytes)
	}
	return b.String(), nil
}
