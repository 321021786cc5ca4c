package stateserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"
)

// DefaultMemoryBudget is the byte budget of a [MemoryStore] made without
// [WithMemoryBudget]: four states of the largest size the server accepts.
const DefaultMemoryBudget = 4 * maxStateBytes

// ErrStoreFull is returned (wrapped) by a [Store] that has no room left for
// a state document. The server answers 507 Insufficient Storage to it.
var ErrStoreFull = errors.New("the store is full")

// MemoryStore is a [Store] kept in memory. Its zero value is not usable; call
// [NewMemoryStore].
//
// Each state is held once: staging reads the body into a document that is
// then stored, and Load hands out that same immutable content. The bytes of
// every document still held (staged, stored, or being read) count against
// the store's budget, and a Stage that would go past it fails with
// [ErrStoreFull] as soon as it does, without reading the rest of the body.
type MemoryStore struct {
	mu      sync.Mutex
	records map[string]memRecord
	// budget bounds used, the bytes of the documents still referenced.
	budget, used int64
}

var _ Store = (*MemoryStore)(nil)

// memRecord is what a MemoryStore keeps for a name; a name with neither a
// state nor a lock has no entry.
type memRecord struct {
	state *memContent
	lock  []byte
}

// MemoryStoreOption configures a [MemoryStore] in [NewMemoryStore].
type MemoryStoreOption func(*MemoryStore)

// WithMemoryBudget bounds the bytes of state documents the store holds at
// once, stored ones and uploads in progress together, to budget (at least
// one byte). Without it the budget is [DefaultMemoryBudget].
func WithMemoryBudget(budget int64) MemoryStoreOption {
	return func(m *MemoryStore) {
		m.budget = max(budget, 1)
	}
}

// NewMemoryStore returns an empty in-memory [Store]. Everything is lost when
// the process exits.
func NewMemoryStore(opts ...MemoryStoreOption) *MemoryStore {
	m := &MemoryStore{records: map[string]memRecord{}, budget: DefaultMemoryBudget}
	for _, opt := range opts {
		opt(m)
	}
	return m
}

// Used returns the bytes of state documents the store holds now: stored,
// being staged, or still being read.
func (m *MemoryStore) Used() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used
}

// Load implements [Store].
func (m *MemoryStore) Load(name string) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.records[name]
	rec := Record{Lock: cloneBytes(r.lock)}
	if r.state != nil {
		r.state.refs++
		rec.State = &memDocument{content: r.state}
	}
	return rec, nil
}

// Stage implements [Store]: it reads r into memory, within the budget.
func (m *MemoryStore) Stage(r io.Reader) (Document, error) {
	c := &memContent{owner: m, refs: 1}
	if err := c.readFrom(r); err != nil {
		m.unreserve(c.reserved)
		return nil, fmt.Errorf("memory store: %w", err)
	}
	return &memDocument{content: c}, nil
}

// reserveUpTo counts up to n more bytes against the budget, as many as
// fit, and returns how many.
func (m *MemoryStore) reserveUpTo(n int64) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	n = max(min(n, m.budget-m.used), 0)
	m.used += n
	return n
}

// fullError is the error of a document that does not fit in the budget.
func (m *MemoryStore) fullError() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return fmt.Errorf("%w: the states held would pass the budget of %d bytes (%d in use)", ErrStoreFull, m.budget, m.used)
}

// unreserve returns n bytes to the budget.
func (m *MemoryStore) unreserve(n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.used -= n
}

// Update implements [Store].
func (m *MemoryStore) Update(name string, fn func(*Record) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	prev := m.records[name]
	rec := Record{Lock: cloneBytes(prev.lock)}
	if prev.state != nil {
		// fn must not keep it: it takes no reference and Close does
		// nothing.
		d := &memDocument{content: prev.state}
		d.closed.Store(true)
		rec.State = d
	}
	if err := fn(&rec); err != nil {
		return err
	}
	next := memRecord{lock: cloneBytes(rec.Lock)}
	if rec.State != nil {
		d, ok := rec.State.(*memDocument)
		if !ok || d.content.owner != m {
			return errForeignDocument
		}
		next.state = d.content
	}
	if next.state != prev.state {
		if next.state != nil {
			next.state.refs++
		}
		if prev.state != nil {
			m.releaseLocked(prev.state)
		}
	}
	if next.state == nil && next.lock == nil {
		delete(m.records, name)
		return nil
	}
	m.records[name] = next
	return nil
}

// releaseLocked drops a reference to c, and returns its bytes to the budget
// with the last one. The caller holds m.mu.
func (m *MemoryStore) releaseLocked(c *memContent) {
	c.refs--
	if c.refs == 0 {
		m.used -= c.reserved
		c.reserved = 0
	}
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return bytes.Clone(b)
}

const (
	// firstChunkBytes and maxChunkBytes bound the chunks of a memContent:
	// they double from the first size up to the maximum, so that a small
	// state takes little room and a large one is never copied as it grows.
	firstChunkBytes = 4 << 10
	maxChunkBytes   = 1 << 20
)

// memContent is the content of a document held in memory as a list of
// chunks, so that reading a body of unknown length never copies what was
// already read. refs counts the store's record and the open memDocuments
// that use it, under owner.mu.
type memContent struct {
	owner    *MemoryStore
	chunks   [][]byte
	starts   []int64 // offset of each chunk in the document
	size     int64
	reserved int64 // bytes counted against the owner's budget
	refs     int
}

// readFrom appends r, to its end, to the content, reserving each chunk in
// the owner's budget before allocating it: a chunk is cut to what is left
// of the budget, and when nothing is left a byte more fails with
// ErrStoreFull. The last chunk is trimmed to its content, so that a
// document takes its size and no more.
func (c *memContent) readFrom(r io.Reader) error {
	next := int64(firstChunkBytes)
	for {
		size := c.owner.reserveUpTo(next)
		c.reserved += size
		if size == 0 {
			var probe [1]byte
			switch n, err := fill(r, probe[:]); {
			case n > 0:
				return c.owner.fullError()
			case errors.Is(err, io.EOF):
				return nil
			default:
				return err
			}
		}
		buf := make([]byte, size)
		n, err := fill(r, buf)
		if int64(n) < size {
			c.owner.unreserve(size - int64(n))
			c.reserved -= size - int64(n)
			buf = bytes.Clone(buf[:n])
		}
		if n > 0 {
			c.starts = append(c.starts, c.size)
			c.chunks = append(c.chunks, buf)
			c.size += int64(n)
		}
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		}
		next = min(2*next, maxChunkBytes)
	}
}

// fill reads r into buf until buf is full, r ends (io.EOF) or r fails. Unlike
// io.ReadFull it passes on every error of r as it is: an
// io.ErrUnexpectedEOF from r (a body cut short) is a failure, not the end.
func fill(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// memDocument is one reference to a memContent: staged, or loaded. Closing
// it drops the reference, once.
type memDocument struct {
	content *memContent
	closed  atomic.Bool
}

// ReadAt implements [io.ReaderAt].
func (d *memDocument) ReadAt(p []byte, off int64) (int, error) {
	c := d.content
	if off < 0 {
		return 0, errors.New("memory store: negative offset")
	}
	if off >= c.size {
		return 0, io.EOF
	}
	// The last chunk starting at or before off.
	i := sort.Search(len(c.starts), func(i int) bool { return c.starts[i] > off }) - 1
	n := 0
	for ; n < len(p) && i < len(c.chunks); i++ {
		n += copy(p[n:], c.chunks[i][off+int64(n)-c.starts[i]:])
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Size implements [Document].
func (d *memDocument) Size() int64 { return d.content.size }

// Close implements [Document]: it drops this reference to the content,
// whose bytes return to the budget once neither the store nor any open
// document uses it.
func (d *memDocument) Close() error {
	if d.closed.Swap(true) {
		return nil
	}
	m := d.content.owner
	m.mu.Lock()
	defer m.mu.Unlock()
	m.releaseLocked(d.content)
	return nil
}
