package stateserver

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// DirStore is a [Store] that keeps one file per state document and one per
// lock in a directory, so that state and locks survive restarts.
//
// A new state document is streamed into a temporary file in the same
// directory (Stage) and synced; installing it renames it over the old file
// and syncs the directory. Locks are written the same way. A crash therefore
// leaves either the old or the new content, never a torn file, and the
// temporary files it leaves behind are removed by the next [NewDirStore].
// Documents are read from their files: memory use does not depend on the
// size of the states.
//
// Operations on one name are serialized; different names proceed in
// parallel, and uploads are staged before the name is locked. Only one
// process may use a directory at a time.
type DirStore struct {
	dir   string
	names nameLocks
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
	return &DirStore{dir: abs}, nil
}

// Dir returns the absolute path of the directory the store writes to.
func (d *DirStore) Dir() string { return d.dir }

// Load implements [Store]. The State it returns holds its file open, so it
// keeps its content even when an update replaces the file.
func (d *DirStore) Load(name string) (Record, error) {
	base, err := encodeName(name)
	if err != nil {
		return Record{}, err
	}
	unlock := d.names.lock(name)
	defer unlock()
	return d.open(base)
}

// Stage implements [Store]: it copies r into a new temporary file of the
// directory and syncs it.
func (d *DirStore) Stage(r io.Reader) (Document, error) {
	doc, err := d.stage(r)
	if err != nil {
		return nil, fmt.Errorf("dir store: %w", err)
	}
	return doc, nil
}

// stage copies r into a new temporary file of the directory, mode 0600
// (states can hold secrets), and syncs it, so that once installed
// (renamed into place, then the directory synced) readers and crashes see
// either the old content or the new one.
func (d *DirStore) stage(r io.Reader) (_ *fileDocument, err error) {
	f, err := os.CreateTemp(d.dir, tempPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("create temporary file: %w", err)
	}
	doc := &fileDocument{owner: d, file: f, staged: true}
	defer func() {
		if err != nil {
			_ = doc.Close()
		}
	}()
	if doc.size, err = io.Copy(f, r); err != nil {
		return nil, fmt.Errorf("stage a document: %w", err)
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("sync temporary file: %w", err)
	}
	return doc, nil
}

// Update implements [Store].
func (d *DirStore) Update(name string, fn func(*Record) error) error {
	base, err := encodeName(name)
	if err != nil {
		return err
	}
	unlock := d.names.lock(name)
	defer unlock()

	old, err := d.open(base)
	if err != nil {
		return err
	}
	if old.State != nil {
		defer old.State.Close()
	}
	rec := Record{State: old.State, Lock: cloneBytes(old.Lock)}
	if err := fn(&rec); err != nil {
		return err
	}
	if rec.State != old.State {
		if err := d.install(base+stateSuffix, rec.State); err != nil {
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

// open returns the record stored under base, with its state file open.
func (d *DirStore) open(base string) (Record, error) {
	lock, err := d.readFile(base + lockSuffix)
	if err != nil {
		return Record{}, err
	}
	f, err := os.Open(filepath.Join(d.dir, base+stateSuffix)) //nolint:gosec // base is an encoded name (no separator, no leading dot), so it stays in d.dir
	if errors.Is(err, fs.ErrNotExist) {
		return Record{Lock: lock}, nil
	}
	if err != nil {
		return Record{}, fmt.Errorf("dir store: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return Record{}, fmt.Errorf("dir store: %w", err)
	}
	return Record{State: &fileDocument{owner: d, file: f, size: info.Size()}, Lock: lock}, nil
}

// install puts doc, staged by this store, in place as file, or removes file
// when doc is nil.
func (d *DirStore) install(file string, doc Document) error {
	if doc == nil {
		return d.remove(file)
	}
	staged, ok := doc.(*fileDocument)
	if !ok || staged.owner != d || !staged.staged {
		return errForeignDocument
	}
	if err := renameFile(staged.file.Name(), filepath.Join(d.dir, file)); err != nil {
		return fmt.Errorf("rename temporary file: %w", err)
	}
	staged.staged = false
	return syncDir(d.dir)
}

// fileDocument is a Document read from an open file: a stored state, or a
// staged one still in its temporary file.
type fileDocument struct {
	owner *DirStore
	file  *os.File
	size  int64
	// staged is true while file is a temporary file not yet installed: Close
	// then removes it.
	staged bool
}

// ReadAt implements [io.ReaderAt].
func (f *fileDocument) ReadAt(p []byte, off int64) (int, error) { return f.file.ReadAt(p, off) }

// Size implements [Document].
func (f *fileDocument) Size() int64 { return f.size }

// Close implements [Document]: it closes the file, and removes it when it
// was staged and never installed.
func (f *fileDocument) Close() error {
	err := f.file.Close()
	if f.staged {
		f.staged = false
		if rerr := os.Remove(f.file.Name()); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) { //nolint:gosec // the temporary file this store created
			err = errors.Join(err, rerr)
		}
	}
	if err != nil {
		return fmt.Errorf("dir store: %w", err)
	}
	return nil
}
