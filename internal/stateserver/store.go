package stateserver

import (
	"errors"
	"io"
)

// ErrInvalidName is returned (wrapped) by a [Store] for a state name it cannot
// keep. The server answers 400 Bad Request to it.
var ErrInvalidName = errors.New("invalid state name")

// Document is a state document held by a [Store]. Its content never changes:
// replacing a state installs another Document. Read it at any offset with
// ReadAt (for instance through [io.NewSectionReader]), and Close it when done.
type Document interface {
	io.ReaderAt
	io.Closer
	// Size is the length of the content in bytes.
	Size() int64
}

// Record is everything a [Store] keeps for one state name.
type Record struct {
	// State is the state document; nil when there is none. A Document of
	// size 0 is a stored empty document.
	State Document
	// Lock is the LockInfo JSON of the current lock holder, exactly as it was
	// sent with the LOCK request; nil while the state is unlocked.
	Lock []byte
}

// Store keeps state documents and their locks, by state name.
//
// A new state document is first staged, outside of any lock, then installed
// by an Update: a large upload never blocks other requests on its name and
// is never visible half written.
//
// Implementations must be safe for concurrent use, and Update must be atomic
// per name: no other Load or Update of the same name observes a half-applied
// change, which is what makes the lock check-and-set of the server correct.
type Store interface {
	// Load returns the record of name; a name never written has an empty
	// Record and no error. A non-nil State is a snapshot that later updates
	// do not change, and the caller must Close it.
	Load(name string) (Record, error)
	// Stage reads r to its end into a new Document that no name shows until
	// an Update installs it. An error reading r is returned wrapped. The
	// caller must Close the Document, installed or not: closing one that was
	// never installed discards it.
	Stage(r io.Reader) (Document, error)
	// Update calls fn with the current record of name and applies what fn
	// changed: Lock, and State set to nil (delete) or to a Document staged by
	// this store (install). When fn returns an error nothing is written and
	// Update returns that error unchanged. fn must not call the Store, and
	// must not use the State it was given after it returns.
	Update(name string, fn func(*Record) error) error
}

// errForeignDocument is returned by Update when fn installs a Document that
// the store did not stage.
var errForeignDocument = errors.New("the state document was not staged by this store")
