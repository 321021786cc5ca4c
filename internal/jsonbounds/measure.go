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
	var (
		open    []frame // the lists and objects around the next token, innermost last
		wantKey bool    // the next token of the innermost object is a key
		started bool    // a token was read
		done    bool    // the top value is complete
		size    int
	)
	// member counts one more member of the innermost list or object, or
	// completes the top value, and says whether a key comes next.
	member := func() error {
		if len(open) == 0 {
			done = true
			return nil
		}
		inner := &open[len(open)-1]
		inner.members++
		if inner.members > b.MaxMembers {
			return ErrTooManyMembers
		}
		wantKey = inner.object
		return nil
	}
	for {
		tok, err := dec.Token()
		switch {
		case errors.Is(err, io.EOF) && done:
			return size, nil
		case errors.Is(err, io.EOF) && started:
			return 0, fmt.Errorf("%w: the value ends before it is complete", ErrNotJSON)
		case errors.Is(err, io.EOF):
			return 0, fmt.Errorf("%w: the value is empty", ErrNotJSON)
		case err != nil:
			return 0, syntaxError(err)
		case done:
			return 0, fmt.Errorf("%w: data follows the value", ErrNotJSON)
		}
		started = true
		switch t := tok.(type) {
		case json.Delim:
			if t == '[' || t == '{' {
				if len(open) >= b.MaxDepth {
					return 0, ErrTooDeep
				}
				open = append(open, frame{object: t == '{'})
				wantKey = t == '{'
				continue
			}
			open = open[:len(open)-1]
			// The closed list or object is a member of the one around it.
		case string:
			if wantKey {
				if b.MaxKey > 0 && len(t) > b.MaxKey {
					return 0, ErrKeyTooLong
				}
				size += len(t)
				wantKey = false
				continue
			}
			if len(t) > b.MaxString {
				return 0, ErrStringTooLong
			}
			size += len(t)
		case json.Number:
			if b.Number != nil {
				if err := b.Number(string(t)); err != nil {
					return 0, err
				}
			}
			size += ScalarSize
		default: // bool or null
			size += ScalarSize
		}
		if err := member(); err != nil {
			return 0, err
		}
	}
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
