package jsonbounds

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ScalarSize is what a number, a bool or null counts towards a value's
// size; strings and object keys count their bytes.
const ScalarSize = 8

// Errors of Measure. Every error Measure returns wraps one of them.
var (
	// ErrNotJSON reports a value that is not exactly one JSON value.
	ErrNotJSON = errors.New("value is not valid JSON")
	// ErrTooDeep reports lists or objects nested beyond Bounds.MaxDepth.
	ErrTooDeep = errors.New("value nests too deep")
	// ErrTooManyMembers reports a list or object with more than
	// Bounds.MaxMembers members.
	ErrTooManyMembers = errors.New("list or object has too many members")
	// ErrStringTooLong reports a string longer than Bounds.MaxString bytes.
	ErrStringTooLong = errors.New("string is too long")
	// ErrKeyTooLong reports an object key longer than Bounds.MaxKey bytes.
	ErrKeyTooLong = errors.New("object key is too long")
)

// Bounds is the shape a value must keep.
type Bounds struct {
	// MaxDepth is how many lists and objects may be open around a scalar:
	// 0 allows only scalars, 1 lists and objects of scalars.
	MaxDepth int
	// MaxMembers bounds the members of each list or object.
	MaxMembers int
	// MaxString bounds the bytes of each string value.
	MaxString int
	// MaxKey bounds the bytes of each object key; 0 leaves keys unbounded
	// but for the total size.
	MaxKey int
	// Number, when set, checks each number literal; its error is returned
	// as is.
	Number func(literal string) error
}

// Measure checks that raw is exactly one JSON value within b and returns
// its size: the bytes of its strings and keys and ScalarSize for any other
// scalar.
func Measure(raw []byte, b Bounds) (int, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	m := measurer{bounds: b}
	for {
		tok, err := dec.Token()
		switch {
		case errors.Is(err, io.EOF):
			return m.end()
		case err != nil:
			return 0, syntaxError(err)
		}
		if err := m.token(tok); err != nil {
			return 0, err
		}
	}
}

// measurer is Measure's walk through the tokens of one value: where it is
// in the value, and the size so far.
type measurer struct {
	bounds  Bounds
	open    []frame // the lists and objects around the next token, innermost last
	wantKey bool    // the next token of the innermost object is a key
	started bool    // a token was read
	done    bool    // the top value is complete
	size    int
}

// end returns the size once the data ends, which must be right after a
// complete value.
func (m *measurer) end() (int, error) {
	switch {
	case m.done:
		return m.size, nil
	case m.started:
		return 0, fmt.Errorf("%w: the value ends before it is complete", ErrNotJSON)
	}
	return 0, fmt.Errorf("%w: the value is empty", ErrNotJSON)
}

// token measures the next token, which must be part of the value.
func (m *measurer) token(tok json.Token) error {
	if m.done {
		return fmt.Errorf("%w: data follows the value", ErrNotJSON)
	}
	m.started = true
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' || t == '{' {
			return m.openNested(t == '{')
		}
		return m.closeNested()
	case string:
		if m.wantKey {
			return m.key(t)
		}
		return m.str(t)
	case json.Number:
		return m.number(t)
	default: // bool or null
		m.size += ScalarSize
		return m.member()
	}
}

// openNested opens a list, or an object when object is true, within
// Bounds.MaxDepth.
func (m *measurer) openNested(object bool) error {
	if len(m.open) >= m.bounds.MaxDepth {
		return ErrTooDeep
	}
	m.open = append(m.open, frame{object: object})
	m.wantKey = object
	return nil
}

// closeNested closes the innermost list or object, which is then a member
// of the one around it.
func (m *measurer) closeNested() error {
	m.open = m.open[:len(m.open)-1]
	return m.member()
}

// key measures an object key, within Bounds.MaxKey; its value comes next.
func (m *measurer) key(k string) error {
	if m.bounds.MaxKey > 0 && len(k) > m.bounds.MaxKey {
		return ErrKeyTooLong
	}
	m.size += len(k)
	m.wantKey = false
	return nil
}

// str measures a string value, within Bounds.MaxString.
func (m *measurer) str(s string) error {
	if len(s) > m.bounds.MaxString {
		return ErrStringTooLong
	}
	m.size += len(s)
	return m.member()
}

// number measures a number, checked by Bounds.Number when set.
func (m *measurer) number(n json.Number) error {
	if m.bounds.Number != nil {
		if err := m.bounds.Number(string(n)); err != nil {
			return err
		}
	}
	m.size += ScalarSize
	return m.member()
}

// member counts one more member of the innermost list or object, within
// Bounds.MaxMembers, and says whether a key comes next; outside any list
// or object it completes the top value.
func (m *measurer) member() error {
	if len(m.open) == 0 {
		m.done = true
		return nil
	}
	inner := &m.open[len(m.open)-1]
	inner.members++
	if inner.members > m.bounds.MaxMembers {
		return ErrTooManyMembers
	}
	m.wantKey = inner.object
	return nil
}

// frame is an open list or object.
type frame struct {
	object  bool
	members int
}

// syntaxError reports err, from a JSON decoder, by offset only: its
// message may quote part of the value.
func syntaxError(err error) error {
	if syntaxErr, ok := errors.AsType[*json.SyntaxError](err); ok {
		return fmt.Errorf("%w: syntax error at byte %d", ErrNotJSON, syntaxErr.Offset)
	}
	return ErrNotJSON
}
