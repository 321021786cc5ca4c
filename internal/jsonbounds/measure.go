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
		depth   int  // lists and objects open around the next token
		object  bool // the innermost open value is an object
		wantKey bool // the next token of the open object is a key
		members int  // members of the open list or object so far
		started bool // a token was read
		done    bool // the top value is complete
		size    int
	)
	// Members and kinds of the lists and objects outside the innermost
	// one, restored when it closes.
	var outer []frame
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
				if depth >= b.MaxDepth {
					return 0, ErrTooDeep
				}
				if depth > 0 {
					outer = append(outer, frame{object: object, members: members})
				}
				depth++
				object, wantKey, members = t == '{', t == '{', 0
				continue
			}
			depth--
			if depth == 0 {
				done = true
				continue
			}
			// The closed list or object is a member of the one around it.
			last := outer[len(outer)-1]
			outer = outer[:len(outer)-1]
			object, members, wantKey = last.object, last.members, last.object
			if err := b.countMember(&members); err != nil {
				return 0, err
			}
			continue
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
		// A scalar was read: the top value, or a member.
		if depth == 0 {
			done = true
			continue
		}
		if err := b.countMember(&members); err != nil {
			return 0, err
		}
		wantKey = object
	}
}

// frame is a list or object that holds the one being read.
type frame struct {
	object  bool
	members int
}

// countMember counts one more member of the open list or object.
func (b Bounds) countMember(members *int) error {
	*members++
	if *members > b.MaxMembers {
		return ErrTooManyMembers
	}
	return nil
}

// syntaxError reports err, from a JSON decoder, by offset only: its
// message may quote part of the value.
func syntaxError(err error) error {
	var syntaxErr *json.SyntaxError
	if errors.As(err, &syntaxErr) {
		return fmt.Errorf("%w: syntax error at byte %d", ErrNotJSON, syntaxErr.Offset)
	}
	return ErrNotJSON
}
