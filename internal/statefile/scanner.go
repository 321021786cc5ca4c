package statefile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

const (
	// maxDepth bounds the nesting of arrays and objects, as encoding/json does.
	maxDepth = 10000
	// maxKeptBytes bounds any single token the reader keeps for itself
	// (object keys, output types): metadata is small, and values are
	// skipped or captured within a caller's budget.
	maxKeptBytes = 1 << 20
	// readBufferSize is the size of the streaming read buffer.
	readBufferSize = 32 << 10
)

// errDepth is returned when a document nests deeper than maxDepth.
var errDepth = errors.New("exceeded max depth")

// scanner is a validating, streaming JSON reader. It can skip a value of any
// size without allocating, or capture a value, compacted, into a bounded
// buffer. Errors carry the byte offset where they were detected and never
// quote the input: a reader aimed at something that is not a state must
// not repeat what it read.
type scanner struct {
	r     *bufio.Reader
	off   int64 // bytes consumed so far
	depth int
}

func newScanner(r io.Reader) *scanner {
	return &scanner{r: bufio.NewReaderSize(r, readBufferSize)}
}

// ErrMalformed is wrapped by the errors about input that is not JSON.
var ErrMalformed = errors.New("invalid JSON")

// syntaxError describes malformed JSON at a byte offset.
func (s *scanner) syntaxError(format string, args ...any) error {
	return fmt.Errorf("%w at offset %d: %s", ErrMalformed, s.off, fmt.Sprintf(format, args...))
}

// readErr turns a read error into a syntax error for io.EOF and wraps others.
func (s *scanner) readErr(err error) error {
	if errors.Is(err, io.EOF) {
		return s.syntaxError("unexpected end of JSON input")
	}
	return fmt.Errorf("reading state: %w", err)
}

func (s *scanner) readByte() (byte, error) {
	c, err := s.r.ReadByte()
	if err != nil {
		return 0, s.readErr(err)
	}
	s.off++
	return c, nil
}

// peek returns the next non-whitespace byte without consuming it. At the end
// of the input it returns io.EOF unwrapped.
func (s *scanner) peek() (byte, error) {
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			return 0, err
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			s.off++
			continue
		}
		if err := s.r.UnreadByte(); err != nil {
			return 0, err
		}
		return c, nil
	}
}

// next consumes the next non-whitespace byte.
func (s *scanner) next() (byte, error) {
	if _, err := s.peek(); err != nil {
		return 0, s.readErr(err)
	}
	return s.readByte()
}

// expect consumes the next non-whitespace byte and checks it is want.
func (s *scanner) expect(want byte) error {
	c, err := s.next()
	if err != nil {
		return err
	}
	if c != want {
		s.off--
		return s.syntaxError("expected %q", want)
	}
	return nil
}

// sink receives the bytes of a captured value, without whitespace. limit
// bounds its size; 0 means maxKeptBytes.
type sink struct {
	buf   bytes.Buffer
	limit int
}

// errValueTooLong is returned, wrapped, when a captured value outgrows its
// sink.
var errValueTooLong = errors.New("value too long")

func (k *sink) write(p []byte) error {
	if k == nil {
		return nil
	}
	limit := k.limit
	if limit == 0 {
		limit = maxKeptBytes
	}
	if k.buf.Len()+len(p) > limit {
		return fmt.Errorf("%w: longer than %d bytes", errValueTooLong, limit)
	}
	k.buf.Write(p)
	return nil
}

func (k *sink) writeByte(c byte) error {
	return k.write([]byte{c})
}

// value reads one JSON value, validating it, and copies its bytes to k
// unless k is nil (skip).
func (s *scanner) value(k *sink) error {
	c, err := s.peek()
	if err != nil {
		return s.readErr(err)
	}
	switch {
	case c == '"':
		return s.str(k)
	case c == '{':
		return s.composite(k, '{', '}')
	case c == '[':
		return s.composite(k, '[', ']')
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number(k)
	case c == 't':
		return s.literal(k, "true")
	case c == 'f':
		return s.literal(k, "false")
	case c == 'n':
		return s.literal(k, "null")
	}
	return s.syntaxError("unexpected character looking for the beginning of a value")
}

// composite reads an object or an array.
func (s *scanner) composite(k *sink, open, closing byte) error {
	s.depth++
	if s.depth > maxDepth {
		return s.syntaxError("%v", errDepth)
	}
	defer func() { s.depth-- }()
	if _, err := s.readByte(); err != nil {
		return err
	}
	if err := k.writeByte(open); err != nil {
		return err // the sink's errValueTooLong
	}
	c, err := s.peek()
	if err != nil {
		return s.readErr(err)
	}
	if c == closing {
		s.readByte() //nolint:errcheck // peeked: cannot fail
		return k.writeByte(closing)
	}
	for {
		if open == '{' {
			if c, err := s.peek(); err != nil {
				return s.readErr(err)
			} else if c != '"' {
				return s.syntaxError("unexpected character looking for the beginning of an object key")
			}
			if err := s.str(k); err != nil {
				return err
			}
			if err := s.expect(':'); err != nil {
				return err
			}
			if err := k.writeByte(':'); err != nil {
				return err // the sink's errValueTooLong
			}
		}
		if err := s.value(k); err != nil {
			return err
		}
		c, err := s.next()
		if err != nil {
			return err
		}
		if err := k.writeByte(c); err != nil {
			return err // the sink's errValueTooLong
		}
		switch c {
		case ',':
			continue
		case closing:
			return nil
		}
		s.off--
		if open == '{' {
			return s.syntaxError("unexpected character after an object key:value pair")
		}
		return s.syntaxError("unexpected character after an array element")
	}
}

// capture reads one value and returns its bytes without whitespace, at
// most limit of them (0 means maxKeptBytes).
func (s *scanner) capture(limit int) ([]byte, error) {
	k := sink{limit: limit}
	if err := s.value(&k); err != nil {
		return nil, err
	}
	return k.buf.Bytes(), nil
}

// readString reads a string value of at most limit bytes as written (0
// means maxKeptBytes), with escapes decoded.
func (s *scanner) readString(limit int) (string, error) {
	k := sink{limit: limit}
	if err := s.str(&k); err != nil {
		return "", err
	}
	var out string
	if err := json.Unmarshal(k.buf.Bytes(), &out); err != nil {
		// The grammar was checked while reading, so this cannot happen;
		// the decoder's message would quote the input.
		return "", s.syntaxError("undecodable string")
	}
	return out, nil
}

// isNull consumes a null literal if one comes next and reports whether it did.
func (s *scanner) isNull() (bool, error) {
	c, err := s.peek()
	if err != nil {
		return false, s.readErr(err)
	}
	if c != 'n' {
		return false, nil
	}
	return true, s.literal(nil, "null")
}

// object calls field for every key of an object; field must consume the
// value. A null object calls nothing.
func (s *scanner) object(field func(key string) error) error {
	if null, err := s.isNull(); err != nil || null {
		return err
	}
	if err := s.expect('{'); err != nil {
		return err
	}
	s.depth++
	defer func() { s.depth-- }()
	c, err := s.peek()
	if err != nil {
		return s.readErr(err)
	}
	if c == '}' {
		_, err := s.readByte()
		return err
	}
	for {
		if c, err := s.peek(); err != nil {
			return s.readErr(err)
		} else if c != '"' {
			return s.syntaxError("unexpected character looking for the beginning of an object key")
		}
		key, err := s.readString(0)
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := field(key); err != nil {
			return err
		}
		c, err := s.next()
		if err != nil {
			return err
		}
		switch c {
		case ',':
			continue
		case '}':
			return nil
		}
		s.off--
		return s.syntaxError("unexpected character after an object key:value pair")
	}
}

// end checks that only whitespace follows the document.
func (s *scanner) end() error {
	_, err := s.peek()
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err != nil {
		return s.readErr(err)
	}
	return s.syntaxError("unexpected data after the top-level value")
}
