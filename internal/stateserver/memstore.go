package stateserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
)

// MemoryStore is a [Store] kept in memory. Its zero value is not usable; call
// [NewMemoryStore].
//
// Each state is held once: staging reads the body into the Document that is
// then stored, and Load hands out that same immutable Document.
type MemoryStore struct {
	mu      sync.Mutex
	records map[string]memRecord
}

var _ Store = (*MemoryStore)(nil)

// memRecord is what a MemoryStore keeps for a name; a name with neither a
// state nor a lock has no entry.
type memRecord struct {
	state *memDocument
	lock  []byte
}

// NewMemoryStore returns an empty in-memory [Store]. Everything is lost when
// the process exits.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{records: map[string]memRecord{}}
}

// Load implements [Store].
func (m *MemoryStore) Load(name string) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.records[name].record(), nil
}

// Stage implements [Store]: it reads r into memory.
func (m *MemoryStore) Stage(r io.Reader) (Document, error) {
	d := &memDocument{owner: m}
	if err := d.readFrom(r); err != nil {
		return nil, fmt.Errorf("memory store: %w", err)
	}
	return d, nil
}

// Update implements [Store].
func (m *MemoryStore) Update(name string, fn func(*Record) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.records[name].record()
	if err := fn(&rec); err != nil {
		return err
	}
	next := memRecord{lock: cloneBytes(rec.Lock)}
	if rec.State != nil {
		d, ok := rec.State.(*memDocument)
		if !ok || d.owner != m {
			return errForeignDocument
		}
		next.state = d
	}
	if next.state == nil && next.lock == nil {
		delete(m.records, name)
		return nil
	}
	m.records[name] = next
	return nil
}

// record returns r as a Record, with its own copy of the lock.
func (r memRecord) record() Record {
	rec := Record{Lock: cloneBytes(r.lock)}
	if r.state != nil {
		rec.State = r.state
	}
	return rec
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return bytes.Clone(b)
}

const (
	// firstChunkBytes and maxChunkBytes bound the chunks of a memDocument:
	// they double from the first size up to the maximum, so that a small
	// state takes little room and a large one wastes at most one chunk.
	firstChunkBytes = 4 << 10
	maxChunkBytes   = 1 << 20
)

// memDocument is a Document held in memory as a list of chunks, so that
// reading a body of unknown length never copies what was already read.
type memDocument struct {
	owner  *MemoryStore
	chunks [][]byte
	starts []int64 // offset of each chunk in the document
	size   int64
}

// readFrom appends r, to its end, to the document.
func (d *memDocument) readFrom(r io.Reader) error {
	next := firstChunkBytes
	for {
		buf := make([]byte, next)
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			d.starts = append(d.starts, d.size)
			d.chunks = append(d.chunks, buf[:n])
			d.size += int64(n)
		}
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return nil
		case err != nil:
			return err
		}
		next = min(2*next, maxChunkBytes)
	}
}

// ReadAt implements [io.ReaderAt].
func (d *memDocument) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("memory store: negative offset")
	}
	if off >= d.size {
		return 0, io.EOF
	}
	// The last chunk starting at or before off.
	i := sort.Search(len(d.starts), func(i int) bool { return d.starts[i] > off }) - 1
	n := 0
	for ; n < len(p) && i < len(d.chunks); i++ {
		n += copy(p[n:], d.chunks[i][off+int64(n)-d.starts[i]:])
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Size implements [Document].
func (d *memDocument) Size() int64 { return d.size }

// Close implements [Document]; memory is released by the garbage collector.
func (d *memDocument) Close() error { return nil }
