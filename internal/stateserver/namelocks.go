package stateserver

import "sync"

// nameLocks serializes the operations on each name. An entry exists only
// while some goroutine holds or waits for its mutex, so the table is as large
// as the number of names in use at once, not the number of names ever asked
// for. The zero value is ready to use.
type nameLocks struct {
	mu      sync.Mutex
	entries map[string]*nameLock
}

type nameLock struct {
	sync.Mutex
	// users counts the goroutines holding or waiting for the mutex; guarded
	// by nameLocks.mu.
	users int
}

// lock takes the mutex of name and returns its release.
func (l *nameLocks) lock(name string) (unlock func()) {
	l.mu.Lock()
	if l.entries == nil {
		l.entries = map[string]*nameLock{}
	}
	e, ok := l.entries[name]
	if !ok {
		e = &nameLock{}
		l.entries[name] = e
	}
	e.users++
	l.mu.Unlock()

	e.Lock()
	return func() {
		e.Unlock()
		l.mu.Lock()
		defer l.mu.Unlock()
		e.users--
		if e.users == 0 {
			delete(l.entries, name)
		}
	}
}

// len returns the number of entries, for tests.
func (l *nameLocks) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}
