package statefile

import (
	"errors"
	"io"
)

// The token readers of the scanner: literals, numbers and strings. Each
// validates the JSON grammar and copies the raw bytes to k unless k is nil.

// literal reads true, false or null.
func (s *scanner) literal(k *sink, word string) error {
	for i := range len(word) {
		c, err := s.readByte()
		if err != nil {
			return err
		}
		if c != word[i] {
			s.off--
			return s.syntaxError("invalid literal %s", word)
		}
	}
	if err := k.write([]byte(word)); err != nil {
		return err // the sink's errValueTooLong
	}
	return nil
}

// number reads a number following the JSON grammar
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (s *scanner) number(k *sink) error {
	if _, err := s.accept(k, is('-')); err != nil {
		return err
	}
	if zero, err := s.accept(k, is('0')); err != nil {
		return err
	} else if !zero {
		if err := s.digits(k, "in the integer part"); err != nil {
			return err
		}
	}
	if dot, err := s.accept(k, is('.')); err != nil {
		return err
	} else if dot {
		if err := s.digits(k, "after the decimal point"); err != nil {
			return err
		}
	}
	if exp, err := s.accept(k, func(b byte) bool { return b == 'e' || b == 'E' }); err != nil {
		return err
	} else if exp {
		if _, err := s.accept(k, func(b byte) bool { return b == '+' || b == '-' }); err != nil {
			return err
		}
		if err := s.digits(k, "in the exponent"); err != nil {
			return err
		}
	}
	return nil
}

// accept consumes the next byte of a number, copying it to k, if ok
// accepts it, and reports whether it did. The end of the input is not an
// error: the number ends there.
func (s *scanner) accept(k *sink, ok func(byte) bool) (bool, error) {
	b, err := s.r.ReadByte()
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	if err != nil {
		return false, s.readErr(err)
	}
	if !ok(b) {
		return false, s.r.UnreadByte()
	}
	s.off++
	if err := k.writeByte(b); err != nil {
		return false, err // the sink's errValueTooLong
	}
	return true, nil
}

// digits consumes one or more digits of a number, copying them to k; where
// says, in the error when there is none, which part of the number lacks
// them.
func (s *scanner) digits(k *sink, where string) error {
	for n := 0; ; n++ {
		ok, err := s.accept(k, isDigit)
		if err != nil {
			return err
		}
		if !ok {
			if n == 0 {
				return s.syntaxError("invalid number: expected a digit %s", where)
			}
			return nil
		}
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// is returns a predicate matching exactly c.
func is(c byte) func(byte) bool { return func(b byte) bool { return b == c } }

// str reads a string literal, validating escapes and rejecting control
// characters. Long runs of plain bytes are scanned in the read buffer
// without copying unless they are captured.
func (s *scanner) str(k *sink) error {
	if err := s.expect('"'); err != nil {
		return err
	}
	if err := k.writeByte('"'); err != nil {
		return err // the sink's errValueTooLong
	}
	for {
		if err := s.plainRun(k); err != nil {
			return err
		}
		c, err := s.readByte()
		if err != nil {
			return err
		}
		if err := k.writeByte(c); err != nil {
			return err // the sink's errValueTooLong
		}
		switch {
		case c == '"':
			return nil
		case c < 0x20:
			s.off--
			return s.syntaxError("control character in a string")
		}
		// c == '\\'
		if err := s.escape(k); err != nil {
			return err
		}
	}
}

// plainRun copies to k the bytes of a string up to the next quote,
// backslash or control character, which it leaves unread. It scans what
// is buffered in place, the fast path of str.
func (s *scanner) plainRun(k *sink) error {
	for {
		if _, err := s.r.Peek(1); err != nil {
			return s.readErr(err)
		}
		buf, _ := s.r.Peek(s.r.Buffered())
		i := 0
		for i < len(buf) && buf[i] != '"' && buf[i] != '\\' && buf[i] >= 0x20 {
			i++
		}
		if err := k.write(buf[:i]); err != nil {
			return err // the sink's errValueTooLong
		}
		s.r.Discard(i) //nolint:errcheck // i bytes are buffered
		s.off += int64(i)
		if i < len(buf) {
			return nil
		}
	}
}

// escape reads the rest of an escape sequence, after its backslash, and
// copies it to k: one of the characters "\/bfnrt, or u and four hex digits.
func (s *scanner) escape(k *sink) error {
	e, err := s.readByte()
	if err != nil {
		return err
	}
	if err := k.writeByte(e); err != nil {
		return err // the sink's errValueTooLong
	}
	switch e {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return nil
	case 'u':
		for range 4 {
			h, err := s.readByte()
			if err != nil {
				return err
			}
			if !isHex(h) {
				s.off--
				return s.syntaxError("invalid \\u escape in a string")
			}
			if err := k.writeByte(h); err != nil {
				return err // the sink's errValueTooLong
			}
		}
		return nil
	}
	s.off--
	return s.syntaxError("invalid escape in a string")
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}
