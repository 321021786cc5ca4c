package outputs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Bounds of spec.defaults, the same as the admission policy of
// config/admission enforces: a default value nests at most two levels (a
// scalar, or a list or object whose members are scalars or lists or
// objects of scalars), every list or object has at most
// MaxDefaultMembers members, strings have at most MaxDefaultString
// characters, and all defaults together measure at most MaxDefaultsSize.
// Sizes count the characters of strings and object keys (the defaults'
// names included) and 8 for any other scalar.
const (
	MaxDefaultDepth   = 2
	MaxDefaultMembers = 64
	MaxDefaultString  = 65536
	MaxDefaultsSize   = 512 << 10
)

// CheckDefaults checks spec.defaults against the bounds above and that
// each name is a valid ConfigMap key, before anything is decoded into
// memory beyond one token at a time. Errors wrap ErrInvalidDefault and name
// the default, never its value.
func CheckDefaults(defaults map[string]json.RawMessage) error {
	names := make([]string, 0, len(defaults))
	for name := range defaults {
		names = append(names, name)
	}
	sort.Strings(names)
	total := 0
	for _, name := range names {
		if msgs := validation.IsConfigMapKey(name); len(msgs) > 0 {
			return fmt.Errorf("%w: %q is not a valid ConfigMap key", ErrInvalidDefault, name)
		}
		size, err := measureDefault(defaults[name])
		switch {
		case errors.Is(err, errNotJSON):
			return fmt.Errorf("%w: the value of %q is not JSON", ErrInvalidDefault, name)
		case err != nil:
			return fmt.Errorf("%w: the value of %q must nest at most two levels (lists or objects of at most %d members) with strings of at most %d characters",
				ErrInvalidDefault, name, MaxDefaultMembers, MaxDefaultString)
		}
		total += utf8.RuneCountInString(name) + size
	}
	if total > MaxDefaultsSize {
		return fmt.Errorf("%w: the values total %d characters, at most %d are allowed", ErrInvalidDefault, total, MaxDefaultsSize)
	}
	return nil
}

// errOutOfBounds reports a value beyond the nesting, member or string
// bounds.
var errOutOfBounds = errors.New("out of bounds")

// measureDefault walks one JSON value token by token, refusing it as soon
// as it leaves the bounds, and returns its size.
func measureDefault(raw json.RawMessage) (int, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	size, err := measureValue(dec, 0)
	if err != nil {
		return 0, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return 0, errNotJSON
	}
	return size, nil
}

// measureValue reads the next value of dec at nesting level depth.
func measureValue(dec *json.Decoder, depth int) (int, error) {
	tok, err := dec.Token()
	if err != nil {
		return 0, errNotJSON
	}
	delim, isDelim := tok.(json.Delim)
	if !isDelim {
		if s, ok := tok.(string); ok {
			n := utf8.RuneCountInString(s)
			if n > MaxDefaultString {
				return 0, errOutOfBounds
			}
			return n, nil
		}
		return 8, nil
	}
	if depth >= MaxDefaultDepth {
		return 0, errOutOfBounds
	}
	size, members := 0, 0
	for dec.More() {
		if members++; members > MaxDefaultMembers {
			return 0, errOutOfBounds
		}
		if delim == '{' {
			key, err := dec.Token()
			if err != nil {
				return 0, errNotJSON
			}
			size += utf8.RuneCountInString(key.(string))
		}
		n, err := measureValue(dec, depth+1)
		if err != nil {
			return 0, err
		}
		size += n
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return 0, errNotJSON
	}
	return size, nil
}

// errNotJSON reports a default whose value does not decode.
var errNotJSON = errors.New("not JSON")
