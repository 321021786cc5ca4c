// Package intern keeps one copy of the strings that many objects the
// manager holds repeat: condition types, reasons and messages, label
// keys, API versions. Decoding gives every object copies of its own, and
// with thousands of objects the copies weigh more than the rest of them.
package intern

import (
	"strings"
	"sync"
)

// Table hands out one copy of each string it is given, while it is in use:
// a bounded table of the strings seen lately. A string given again while
// the table knows it is returned as its first copy; one that is not given
// for a while is forgotten (the objects holding it keep it), so that
// strings that change, or that only one object holds, do not accumulate.
//
// The strings are kept in two generations of at most limit strings each:
// once the current one is full it becomes the previous one, and a string
// of the previous generation given again moves to the current one. A
// string is forgotten after two generations unused; a table holds at most
// 2*limit strings of at most maxLen bytes each. It is safe for concurrent
// use.
type Table struct {
	limit, maxLen int

	mu                sync.Mutex
	current, previous map[string]string
}

// New returns a table of at most 2*limit strings of at most maxLen bytes:
// longer strings are returned as they are.
func New(limit, maxLen int) *Table {
	return &Table{limit: max(limit, 1), maxLen: maxLen, current: make(map[string]string)}
}

// String returns the copy of s the table holds, after recording s when it
// holds none. The copy recorded does not share memory with s: a string
// decoded from a larger buffer does not keep it alive.
func (t *Table) String(s string) string {
	if s == "" || len(s) > t.maxLen {
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.current[s]; ok {
		return v
	}
	v, ok := t.previous[s]
	if !ok {
		v = strings.Clone(s)
	}
	if len(t.current) >= t.limit {
		t.previous, t.current = t.current, make(map[string]string, t.limit)
	}
	t.current[v] = v
	return v
}

// Set replaces *s with the table's copy of it.
func (t *Table) Set(s *string) { *s = t.String(*s) }

// Len is the number of strings the table holds, one held by both
// generations counting twice.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.current) + len(t.previous)
}
