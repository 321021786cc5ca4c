package stateserver

import (
	"bytes"
	"errors"
	"sync"
)

// ErrInvalidName is returned (wrapped) by a [Store] for a state name it cannot
// keep. The server answers 400 Bad Request to it.
var ErrInvalidName = errors.New("invalid state name")

// Record is everything a [Store] keeps for one state name.
type Record struct {
	// State is the state document as the client uploaded it; nil when there
	// is no state. An empty, non-nil slice is a stored empty document.
	State []byte
	// Lock is the LockInfo JSON of the current lock holder, exactly as it was
	// sent with the LOCK request; nil while the state is unlocked.
	Lock []byte
}

// clone returns a deep copy of r, keeping the difference between nil and
// empty slices.
func (r Record) clone() Record {
	return Record{State: cloneBytes(r.State), Lock: cloneBytes(r.Lock)}
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return bytes.Clone(b)
}

// sameBytes reports whether a and b hold the same bytes and are both nil or
// both non-nil.
func sameBytes(a, b []byte) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

// Store keeps state documents and their locks, by state name.
//
// Implementations must be safe for concurrent use, and Update must be atomic
// per name: no other Load or Update of the same name observes a half-applied
// change, which is what makes the lock check-and-set of the server correct.
type Store interface {
	// Load returns the record of name; a name never written has an empty
	// Record and no error.
	Load(name string) (Record, error)
	// Update calls fn with the current record of name and persists the
	// changes fn made to it. When fn returns an error nothing is written and
	// Update returns that error unchanged. fn must not call the Store.
	Update(name string, fn func(*Record) error) error
}

// MemoryStore is a [Store] kept in memory. Its zero value is not usable; call
// [NewMemoryStore].
type MemoryStore struct {
	mu      sync.Mutex
	records map[string]Record
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty in-memory [Store]. Everything is lost when
// the process exits.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{records: map[string]Record{}}
}

// Load implements [Store].
func (m *MemoryStore) Load(name string) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.records[name].clone(), nil
}

// Update implements [Store].
func (m *MemoryStore) Update(name string, fn func(*Record) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := m.records[name].clone()
	if err := fn(&rec); err != nil {
		return err
	}
	if rec.State == nil && rec.Lock == nil {
		delete(m.records, name)
		return nil
	}
	m.records[name] = rec.clone()
	return nil
}
