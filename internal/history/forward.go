package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// A restore writes a snapshot forward: the snapshot's content under a
// serial above the current state's, so that no runner holding a plan of
// an older serial can overwrite it unnoticed (Terraform refuses to write
// a state whose serial is not above the stored one for the same lineage).

// ErrNoSerial is the error of Forward for a document without a top-level
// numeric serial.
var ErrNoSerial = errors.New("the state has no top-level serial")

// maxKeyBytes bounds a top-level key Forward reads whole: a longer one is
// not "serial".
const maxKeyBytes = 64

// Forward copies the state document of src to dst with its top-level
// serial set to serial, byte for byte otherwise: the rest of the document
// streams through, never held, whatever its size. It fails with
// ErrNoSerial when the document has no top-level numeric serial. The
// document is not otherwise checked: it is a snapshot the history wrote.
func Forward(dst io.Writer, src io.Reader, serial uint64) error {
	f := forwarder{in: bufio.NewReader(src), out: bufio.NewWriter(dst), serial: serial}
	if err := f.run(); err != nil {
		return err
	}
	if !f.replaced {
		return ErrNoSerial
	}
	if err := f.out.Flush(); err != nil {
		return fmt.Errorf("writing the state: %w", err)
	}
	return nil
}

// forwarder is the state of one Forward: where the scan is in the
// document, outside strings, at the top level.
type forwarder struct {
	in     *bufio.Reader
	out    *bufio.Writer
	serial uint64

	depth    int
	inString bool
	escaped  bool
	// keyNext is true where a top-level key may start (after "{" or ",").
	keyNext bool
	// key collects a top-level key while it is read (nil otherwise);
	// keyLong is set once it is longer than maxKeyBytes.
	key     []byte
	keyLong bool
	// colonNext is true between a top-level key and its colon; isSerial
	// when that key is "serial".
	colonNext, isSerial bool
	replaced            bool
}

// run scans the document to its end.
func (f *forwarder) run() error {
	for {
		b, err := f.in.ReadByte()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the state: %w", err)
		}
		if f.inString {
			f.stringByte(b)
			if err := f.out.WriteByte(b); err != nil {
				return fmt.Errorf("writing the state: %w", err)
			}
			continue
		}
		if err := f.out.WriteByte(b); err != nil {
			return fmt.Errorf("writing the state: %w", err)
		}
		if err := f.structural(b); err != nil {
			return err
		}
	}
}

// stringByte follows a byte inside a string, collecting a top-level key.
func (f *forwarder) stringByte(b byte) {
	switch {
	case f.escaped:
		f.escaped = false
	case b == '\\':
		f.escaped = true
	case b == '"':
		f.inString = false
		if f.key != nil {
			f.endKey()
		}
		return
	}
	if f.key != nil {
		if len(f.key) < maxKeyBytes {
			f.key = append(f.key, b)
		} else {
			f.keyLong = true
		}
	}
}

// endKey decides whether the top-level key just read is "serial" (as JSON
// decodes it: escapes included).
func (f *forwarder) endKey() {
	var name string
	quoted := append(append([]byte{'"'}, f.key...), '"')
	f.isSerial = !f.keyLong && json.Unmarshal(quoted, &name) == nil && name == "serial"
	f.key, f.keyLong, f.colonNext = nil, false, true
}

// structural follows a byte outside strings.
func (f *forwarder) structural(b byte) error {
	switch b {
	case '"':
		f.inString = true
		if f.depth == 1 && f.keyNext {
			f.key, f.keyNext = []byte{}, false
		}
	case '{', '[':
		f.depth++
		f.keyNext = f.depth == 1 && b == '{'
	case '}', ']':
		f.depth--
	case ',':
		f.keyNext = f.depth == 1
	case ':':
		if f.depth == 1 && f.colonNext {
			f.colonNext = false
			if f.isSerial {
				return f.replaceNumber()
			}
		}
	}
	return nil
}

// replaceNumber replaces the number that follows (after whitespace) with
// the new serial.
func (f *forwarder) replaceNumber() error {
	for {
		b, err := f.in.ReadByte()
		if err != nil {
			return fmt.Errorf("%w: the document ends after \"serial\"", ErrNoSerial)
		}
		switch b {
		case ' ', '\t', '\n', '\r':
			if err := f.out.WriteByte(b); err != nil {
				return fmt.Errorf("writing the state: %w", err)
			}
			continue
		}
		if b < '0' || b > '9' {
			return fmt.Errorf("%w: \"serial\" is not a number", ErrNoSerial)
		}
		break
	}
	for {
		b, err := f.in.ReadByte()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading the state: %w", err)
		}
		if (b < '0' || b > '9') && b != '.' && b != 'e' && b != 'E' && b != '+' && b != '-' {
			if err := f.in.UnreadByte(); err != nil {
				return fmt.Errorf("reading the state: %w", err)
			}
			break
		}
	}
	if _, err := f.out.WriteString(strconv.FormatUint(f.serial, 10)); err != nil {
		return fmt.Errorf("writing the state: %w", err)
	}
	f.replaced = true
	return nil
}
