package stateserver

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// DirStore is a [Store] that keeps one file per state document and one per
// lock in a directory, so that state and locks survive restarts.
//
// Every change is written to a temporary file in the same directory, synced,
// renamed over the old file and followed by a sync of the directory: a crash
// leaves either the old or the new content, never a torn file. Updates of one
// name are serialized; different names proceed in parallel. Only one process
// may use a directory at a time.
type DirStore struct {
	dir string

	mu    sync.Mutex
	names map[string]*sync.Mutex
}

var _ Store = (*DirStore)(nil)

// NewDirStore returns a [DirStore] keeping its files in dir, which is created
// (mode 0700) when missing. Temporary files left behind by a crash are
// removed.
func NewDirStore(dir string) (*DirStore, error) {
	if dir == "" {
		return nil, errors.New("dir store: empty directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("dir store: %w", err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("dir store: create directory: %w", err)
	}
	leftovers, err := filepath.Glob(filepath.Join(abs, tempPrefix+"*"))
	if err != nil {
		return nil, fmt.Errorf("dir store: %w", err)
	}
	for _, f := range leftovers {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("dir store: remove leftover temporary file: %w", err)
		}
	}
	return &DirStore{dir: abs, names: map[string]*sync.Mutex{}}, nil
}

// Dir returns the absolute path of the directory the store writes to.
func (d *DirStore) Dir() string { return d.dir }

// Load implements [Store].
func (d *DirStore) Load(name string) (Record, error) {
	base, err := encodeName(name)
	if err != nil {
		return Record{}, err
	}
	unlock := d.lockName(name)
	defer unlock()
	return d.read(base)
}

// Update implements [Store].
func (d *DirStore) Update(name string, fn func(*Record) error) error {
	base, err := encodeName(name)
	if err != nil {
		return err
	}
	unlock := d.lockName(name)
	defer unlock()

	old, err := d.read(base)
	if err != nil {
		return err
	}
	rec := old.clone()
	if err := fn(&rec); err != nil {
		return err
	}
	if !sameBytes(old.State, rec.State) {
		if err := d.writeOrRemove(base+stateSuffix, rec.State); err != nil {
			return fmt.Errorf("dir store: state %q: %w", name, err)
		}
	}
	if !sameBytes(old.Lock, rec.Lock) {
		if err := d.writeOrRemove(base+lockSuffix, rec.Lock); err != nil {
			return fmt.Errorf("dir store: lock of %q: %w", name, err)
		}
	}
	return nil
}

// lockName takes the mutex of one name and returns its release. Mutexes are
// kept for the life of the store: their number is bounded by the names used.
func (d *DirStore) lockName(name string) func() {
	d.mu.Lock()
	m, ok := d.names[name]
	if !ok {
		m = &sync.Mutex{}
		d.names[name] = m
	}
	d.mu.Unlock()
	m.Lock()
	return m.Unlock
}

func (d *DirStore) read(base string) (Record, error) {
	state, err := d.readFile(base + stateSuffix)
	if err != nil {
		return Record{}, err
	}
	lock, err := d.readFile(base + lockSuffix)
	if err != nil {
		return Record{}, err
	}
	return Record{State: state, Lock: lock}, nil
}

// readFile returns the content of file, nil when it does not exist, and an
// empty non-nil slice when it exists and is empty.
func (d *DirStore) readFile(file string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(d.dir, file))
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

// writeOrRemove replaces file with data atomically, or removes it when data
// is nil.
func (d *DirStore) writeOrRemove(file string, data []byte) error {
	if data == nil {
		err := os.Remove(filepath.Join(d.dir, file))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("remove: %w", err)
		}
		return syncDir(d.dir)
	}
	return writeFileAtomic(d.dir, file, data)
}

// writeFileAtomic writes data to a temporary file in dir, syncs it, renames it
// to file and syncs dir, so that readers and crashes see either the old or the
// new content. The file gets mode 0600: states can hold secrets.
func writeFileAtomic(dir, file string, data []byte) (err error) {
	tmp, err := os.CreateTemp(dir, tempPrefix+"*")
	if err != nil {
		return fmt.Errorf("create temporary file: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write temporary file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("sync temporary file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close temporary file: %w", err)
	}
	if err := renameFile(tmp.Name(), filepath.Join(dir, file)); err != nil {
		return fmt.Errorf("rename temporary file: %w", err)
	}
	return syncDir(dir)
}

// syncDir makes a rename or removal in dir durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open directory: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	return nil
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
	for i := 0; i < len(name); i++ {
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
